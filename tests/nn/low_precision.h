#pragma once
// The harness of the 16-bit comparisons (low_precision_*_test.cpp): a case builds its layer or
// calls its function through a Run, once computing in the 16-bit dtype and once in f32 on the
// same rounded values (parameters and inputs drawn in f32, rounded to the 16-bit dtype, then
// widened for the f32 run). The driver backpropagates a fixed upstream gradient (also rounded)
// through every floating output and compares outputs and the gradients of every input and
// parameter with the f32 run.
//
// Closeness (TESTING terms): |got - want| <= atol + rtol |want| with PyTorch's per-op rtol
// (bf16 1.6e-2, f16 1e-3) and atol = 1e-5 + rtol · mean|want|. PyTorch's atol of 1e-5 is for
// values near 1; scaling it by the tensor's mean magnitude keeps it meaningful for small or
// large values, and covers an element that cancels to near zero after an intermediate was
// rounded at the magnitude of its neighbours. Composite cases state a looser rtol and why.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "test_util.h"

namespace lowp {

using namespace ox;

struct Tol {
  double bf16 = 1.6e-2;
  double f16 = 1e-3;
  const char* why = "one op, rounded once";
  double rtol(DType low) const { return low == kBF16 ? bf16 : f16; }
};

// The tolerance of one op, and of composites (stated per case).
inline constexpr Tol kOp{};

class Run {
 public:
  Run(DType low, DType dt) : low_(low), dt_(dt) {}
  DType low() const { return low_; }
  DType dtype() const { return dt_; }

  // A constant (no gradient): values in [lo, hi), rounded to the 16-bit dtype, in this run's
  // dtype. Each call draws from its own salt, so both runs see the same values.
  Tensor value(const Shape& shape, double lo = -1, double hi = 1) {
    std::vector<double> v(static_cast<size_t>(oxtest::product(shape.vec())));
    const uint64_t salt = next_salt_++;
    for (size_t i = 0; i < v.size(); ++i) v[i] = oxtest::uniform_at(int64_t(i), salt, lo, hi);
    return tensor(v, shape).to(low_).to(dt_);
  }
  // An input whose gradient is compared.
  Tensor input(const Shape& shape, double lo = -1, double hi = 1) {
    Tensor t = value(shape, lo, hi);
    t.requires_grad_(true);
    leaves_.push_back({"input" + std::to_string(leaves_.size()), t});
    return t;
  }
  // Integer class indices in [0, classes).
  Tensor classes(const Shape& shape, int64_t classes) {
    std::vector<int64_t> v(static_cast<size_t>(oxtest::product(shape.vec())));
    const uint64_t salt = next_salt_++;
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = oxtest::integer_at(int64_t(i), salt, 0, classes - 1);
    return tensor(v, shape);
  }
  // The module converted to the 16-bit dtype (rounding its f32 initialization), then to this
  // run's dtype; its parameters' gradients are compared.
  template <class Holder>
  Holder module(Holder m, const std::string& prefix = "") {
    m->to(low_);
    m->to(dt_);
    for (const auto& [name, p] : m->named_parameters())
      if (p.requires_grad()) leaves_.push_back({prefix + name, p});
    return m;
  }

  const std::vector<std::pair<std::string, Tensor>>& leaves() const { return leaves_; }

 private:
  DType low_, dt_;
  uint64_t next_salt_ = 1;
  std::vector<std::pair<std::string, Tensor>> leaves_;
};

struct Case {
  std::string name;
  std::function<std::vector<Tensor>(Run&)> body;
  Tol tol = kOp;
};

inline std::string case_name(const testing::TestParamInfo<Case>& info) { return info.param.name; }
inline void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Rules that read the 16-bit output y (tanh's 1 - y², sigmoid's y (1 - y), softmax's
// y (g - Σ g y)), as PyTorch's backward kernels do: y carries its rounding (2^-9 in bf16, 2^-12
// in f16, relative) into a difference that cancels where y saturates, so the gradient is off by
// several of y's roundings relative to the mean gradient.
inline constexpr Tol kReadsOutput{
    .bf16 = 6e-2, .f16 = 6e-3, .why = "the backward reads the rounded output y"};

// What one run leaves: its outputs, and the leaves' gradients (after backward).
struct Result {
  std::vector<Tensor> outputs;
  std::vector<std::pair<std::string, Tensor>> grads;
};

inline Result run_case(const Case& c, DType low, DType dt) {
  manual_seed(1234);  // module initialization and dropout masks: the same in both runs
  Run run(low, dt);
  Result r;
  r.outputs = c.body(run);
  std::vector<Tensor> outs, upstream;
  uint64_t salt = 9000;
  for (const Tensor& out : r.outputs) {
    if (!out.defined() || !out.requires_grad()) continue;
    std::vector<double> v(static_cast<size_t>(out.numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = oxtest::uniform_at(int64_t(i), salt, -1, 1);
    ++salt;
    outs.push_back(out);
    upstream.push_back(tensor(v, out.shape()).to(low).to(dt));
  }
  if (!outs.empty()) autograd::backward(outs, upstream);
  for (const auto& [name, leaf] : run.leaves()) r.grads.push_back({name, leaf.grad()});
  return r;
}

inline std::vector<double> as_doubles(const Tensor& t) {
  return t.detach().to(kF64).contiguous().to_vector<double>();
}

inline void expect_close(const Tensor& got, const Tensor& want, double rtol,
                         const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = as_doubles(got), w = as_doubles(want);
  double mean_abs = 0;
  int64_t finite = 0;
  for (double x : w)
    if (std::isfinite(x)) mean_abs += std::abs(x), ++finite;
  if (finite > 0) mean_abs /= double(finite);
  const double atol = 1e-5 + rtol * mean_abs;
  int failures = 0;
  for (size_t i = 0; i < g.size() && failures < 5; ++i) {
    if (std::isnan(w[i]) || std::isinf(w[i])) {
      if (std::isnan(w[i]) ? !std::isnan(g[i]) : g[i] != w[i]) {
        ADD_FAILURE() << what << " at " << i << ": got " << g[i] << ", want " << w[i];
        ++failures;
      }
      continue;
    }
    const double err = std::abs(g[i] - w[i]);
    if (!(err <= atol + rtol * std::abs(w[i]))) {
      ADD_FAILURE() << what << " at " << i << ": got " << g[i] << ", want " << w[i] << " (error "
                    << err << ", allowed " << atol + rtol * std::abs(w[i]) << ")";
      ++failures;
    }
  }
}

// Runs the case in `low` and in f32 and compares them; 16-bit results must be in `low` (floating
// outputs) and gradients in their leaf's dtype.
inline void check_case(const Case& c, DType low) {
  const Result lo = run_case(c, low, low);
  const Result ref = run_case(c, low, kF32);
  const double rtol = c.tol.rtol(low);
  ASSERT_EQ(lo.outputs.size(), ref.outputs.size());
  for (size_t i = 0; i < lo.outputs.size(); ++i) {
    const Tensor &got = lo.outputs[i], &want = ref.outputs[i];
    const std::string what = "output " + std::to_string(i);
    ASSERT_EQ(got.defined(), want.defined()) << what;
    if (!got.defined()) continue;
    if (!is_floating(want.dtype())) {
      EXPECT_EQ(got.dtype(), want.dtype()) << what;
      EXPECT_EQ(as_doubles(got), as_doubles(want)) << what;
      continue;
    }
    EXPECT_EQ(got.dtype(), low) << what;
    expect_close(got, want, rtol, what);
  }
  ASSERT_EQ(lo.grads.size(), ref.grads.size());
  for (size_t i = 0; i < lo.grads.size(); ++i) {
    const auto& [name, got] = lo.grads[i];
    const Tensor& want = ref.grads[i].second;
    const std::string what = "gradient of " + name;
    ASSERT_EQ(got.defined(), want.defined()) << what;
    if (!got.defined()) continue;
    EXPECT_EQ(got.dtype(), low) << what << " is not in its parameter's dtype";
    expect_close(got, want, rtol, what);
  }
}

}  // namespace lowp
