// Random tensors from the counter-based Philox generator. The op layer reserves the counter
// blocks a draw needs, so the stream position depends only on what was drawn before.

#include <atomic>
#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "core/dispatch.h"
#include "oxmera/tensor.h"
#include "tensor/tensor_impl.h"

namespace ox {

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

namespace {

Generator& pick(Generator* gen) { return gen ? *gen : default_generator(); }

uint64_t reserve(Generator& gen, philox::Kind kind, int64_t numel) {
  return gen.advance(philox::blocks_for(kind, static_cast<uint64_t>(numel)));
}

// Fills `t` (any layout) with a draw, generating into a contiguous buffer when it must.
void draw_values(Tensor& t, RandomSpec spec, Generator& gen, const char* op) {
  spec.seed = gen.seed();
  spec.first_block = reserve(gen, spec.kind, t.numel());
  if (t.numel() == 0) return;
  Backend& backend = backend_for(t.device(), op);
  if (t.is_contiguous()) {
    backend.random(t.impl()->array(), spec);
    t.storage()->bump_version();
  } else {
    Tensor dense = make_empty(t.shape(), t.dtype(), t.device(), op);
    backend.random(dense.impl()->array(), spec);
    t.copy_(dense);
  }
}

// Fills `t` in place, as an in-place op for autograd (refused on a leaf that requires grad).
void draw_into(Tensor& t, RandomSpec spec, Generator& gen, const char* op) {
  const bool track = autograd::needs_grad({&t});
  if (track) autograd::check_inplace(t, op);
  if (track && t.impl()->is_view()) {  // the same values, written as a copy into the base
    Tensor dense = make_empty(t.shape(), t.dtype(), t.device(), op);
    draw_values(dense, spec, gen, op);
    t.copy_(dense);
    return;
  }
  draw_values(t, spec, gen, op);
  if (track) autograd::overwritten(t);
}

philox::Kind uniform_kind(DType dt) {
  return dt == kF64 ? philox::Kind::Uniform64 : philox::Kind::Uniform32;
}

void check_floating(DType dt, const char* op) {
  OX_CHECK(is_floating(dt), DType, op, "needs a floating dtype (f32, f64, f16, bf16), got ", dt);
}

// Whether every integer in [lo, hi] is representable in `dt`.
bool fits(DType dt, int64_t lo, int64_t hi) {
  return dispatch_dtype(dt, [&]<class T>() {
    if constexpr (std::is_integral_v<T>) {
      return lo >= int64_t(std::numeric_limits<T>::min()) &&
             (hi <= 0 || uint64_t(hi) <= uint64_t(std::numeric_limits<T>::max()));
    } else {
      return true;
    }
  });
}

}  // namespace

Tensor& Tensor::uniform_(double from, double to) {
  check_floating(dtype(), "uniform_");
  OX_CHECK(std::isfinite(from) && std::isfinite(to) && from <= to, Value, "uniform_",
           "expects finite from <= to, got from=", from, " to=", to);
  draw_into(*this, {uniform_kind(dtype()), 0, 0, from, to}, default_generator(), "uniform_");
  return *this;
}

Tensor& Tensor::normal_(double mean, double std) {
  check_floating(dtype(), "normal_");
  OX_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0, Value, "normal_",
           "expects finite mean and std >= 0, got mean=", mean, " std=", std);
  draw_into(*this, {philox::Kind::Normal, 0, 0, mean, std}, default_generator(), "normal_");
  return *this;
}

Tensor rand(const Shape& shape, TensorOptions o, Generator* gen) {
  const DType dt = o.dtype.value_or(default_dtype());
  check_floating(dt, "rand");
  Tensor t = empty(shape, {.dtype = dt, .device = o.device});
  draw_into(t, {uniform_kind(dt), 0, 0, 0.0, 1.0}, pick(gen), "rand");
  return as_leaf(t, o);
}

Tensor randn(const Shape& shape, TensorOptions o, Generator* gen) {
  const DType dt = o.dtype.value_or(default_dtype());
  check_floating(dt, "randn");
  Tensor t = empty(shape, {.dtype = dt, .device = o.device});
  draw_into(t, {philox::Kind::Normal, 0, 0, 0.0, 1.0}, pick(gen), "randn");
  return as_leaf(t, o);
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, TensorOptions o, Generator* gen) {
  const DType dt = o.dtype.value_or(kI64);
  OX_CHECK(low < high, Value, "randint", "expects low < high, got low=", low, " high=", high);
  OX_CHECK(dt != kBool && fits(dt, low, high - 1), Value, "randint", "range [", low, ", ", high,
           ") does not fit dtype ", dt);
  Tensor t = empty(shape, {.dtype = dt, .device = o.device});
  RandomSpec spec{philox::Kind::Integer, 0, 0};
  spec.low = low;
  spec.range = uint64_t(high) - uint64_t(low);
  draw_into(t, spec, pick(gen), "randint");
  return t;
}

Tensor randint(int64_t high, const Shape& shape, TensorOptions o, Generator* gen) {
  return randint(0, high, shape, o, gen);
}

Tensor randperm(int64_t n, TensorOptions o, Generator* gen) {
  const DType dt = o.dtype.value_or(kI64);
  OX_CHECK(n >= 0, Value, "randperm", "n must be non-negative, got ", n);
  OX_CHECK(dt != kBool && fits(dt, 0, n - 1), Value, "randperm", "n = ", n, " does not fit dtype ",
           dt);
  OX_CHECK(!is_floating(dt) || n <= (int64_t{1} << (dt == kF64   ? 53
                                                    : dt == kF32 ? 24
                                                                 : 8)),
           Value, "randperm", "n = ", n, " is not exactly representable in ", dt);
  Tensor t = empty({n}, {.dtype = dt, .device = o.device});
  Generator& g = pick(gen);
  const uint64_t first = reserve(g, philox::Kind::Integer, n);
  if (n > 0) backend_for(t.device(), "randperm").randperm(t.impl()->array(), g.seed(), first);
  return t;
}

Tensor bernoulli(const Tensor& p, Generator* gen) {
  OX_CHECK(p.defined(), Value, "bernoulli", "p is an undefined tensor");
  check_floating(p.dtype(), "bernoulli");
  // The kernel checks the probabilities (a device reports at the next synchronization).
  static const CheckSite site = check_site(
      "bernoulli", "probability at position {position} is outside [0, 1]", ErrorKind::Value);
  const Tensor probs = p.contiguous();
  Tensor out = empty(p.shape(), {.dtype = p.dtype(), .device = p.device()});
  Generator& g = pick(gen);
  const uint64_t first = reserve(g, philox::Kind::Bernoulli, out.numel());
  if (out.numel() > 0)
    backend_for(out.device(), "bernoulli")
        .bernoulli(out.impl()->array(), probs.impl()->array(), g.seed(), first, site);
  return out;
}

Tensor bernoulli(const Shape& shape, double p, TensorOptions o, Generator* gen) {
  OX_CHECK(p >= 0 && p <= 1, Value, "bernoulli", "probability ", p, " is outside [0, 1]");
  const DType dt = o.dtype.value_or(default_dtype());
  check_floating(dt, "bernoulli");
  Tensor out = empty(shape, {.dtype = dt, .device = o.device});
  const Tensor prob = full({1}, p, {.dtype = kF64, .device = out.device()});
  Generator& g = pick(gen);
  const uint64_t first = reserve(g, philox::Kind::Bernoulli, out.numel());
  if (out.numel() > 0)
    backend_for(out.device(), "bernoulli")
        .bernoulli(out.impl()->array(), prob.impl()->array(), g.seed(), first, -1);
  return as_leaf(out, o);
}

}  // namespace ox
