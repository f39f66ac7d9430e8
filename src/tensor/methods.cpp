// LibTorch's method forms of ops (Tensor::eq, add, softmax, exp_, new_zeros, ...): each is the
// free function of ops.h or an in-place write of its result, so semantics, dtypes and autograd
// are the free function's.

#include "autograd/record.h"
#include "ops/op_util.h"
#include "oxmera/indexing.h"
#include "oxmera/ops.h"
#include "oxmera/tensor.h"
#include "tensor/tensor_impl.h"

namespace ox {

namespace {

// The in-place form of a unary op: the result (recorded out of place when autograd is on)
// written back into `self`, cast to its dtype.
template <class Op>
Tensor& unary_inplace(Tensor& self, const char* name, Op op) {
  ops::impl_of(self, name);
  if (autograd::needs_grad({&self})) autograd::check_inplace(self, name);
  return ops::assign_result(self, op(ops::inplace_source(self)), name);
}

TensorOptions with_defaults_of(const Tensor& like, TensorOptions options) {
  OX_CHECK(like.defined(), Value, "new_* / *_like", "called with an undefined tensor");
  if (!options.dtype) options.dtype = like.dtype();
  if (!options.device) options.device = like.device();
  return options;
}

}  // namespace

TensorOptionsBuilder Tensor::options() const { return ox::dtype(dtype()).device(device()); }

Tensor Tensor::cuda() const {
  const Device current = default_device();
  return to(current.is_cuda() ? current : Device::cuda(0));
}

Scalar Tensor::item() const {
  const DType dt = dtype();
  if (dt == kBool) return Scalar(item<bool>());
  if (is_floating(dt)) return Scalar(item<double>());
  return Scalar(item<int64_t>());
}

Tensor Tensor::eq(const Tensor& o) const { return ox::eq(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return ox::eq(*this, o); }
Tensor Tensor::ne(const Tensor& o) const { return ox::ne(*this, o); }
Tensor Tensor::ne(const Scalar& o) const { return ox::ne(*this, o); }
Tensor Tensor::lt(const Tensor& o) const { return ox::lt(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return ox::lt(*this, o); }
Tensor Tensor::le(const Tensor& o) const { return ox::le(*this, o); }
Tensor Tensor::le(const Scalar& o) const { return ox::le(*this, o); }
Tensor Tensor::gt(const Tensor& o) const { return ox::gt(*this, o); }
Tensor Tensor::gt(const Scalar& o) const { return ox::gt(*this, o); }
Tensor Tensor::ge(const Tensor& o) const { return ox::ge(*this, o); }
Tensor Tensor::ge(const Scalar& o) const { return ox::ge(*this, o); }
Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return ox::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return ox::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return ox::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return ox::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return ox::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return ox::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return ox::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return ox::div(*this, o); }

Tensor Tensor::softmax(int64_t dim, std::optional<DType> dtype) const {
  return ox::softmax(*this, dim, dtype);
}
Tensor Tensor::log_softmax(int64_t dim, std::optional<DType> dtype) const {
  return ox::log_softmax(*this, dim, dtype);
}
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const {
  return ox::chunk(*this, chunks, dim);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return ox::split(*this, split_size, dim);
}
std::vector<Tensor> Tensor::split(const std::vector<int64_t>& sizes, int64_t dim) const {
  return ox::split(*this, sizes, dim);
}
Tensor Tensor::repeat(const Dims& repeats) const { return ox::repeat(*this, repeats); }
Tensor Tensor::bmm(const Tensor& o) const { return ox::bmm(*this, o); }
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const {
  return ox::index_select(*this, dim, index);
}
Tensor Tensor::clamp_min(const Scalar& min) const { return ox::clamp(*this, min); }
Tensor Tensor::clamp_max(const Scalar& max) const { return ox::clamp(*this, std::nullopt, max); }
Tensor Tensor::reciprocal() const { return ox::reciprocal(*this); }
Tensor Tensor::log_sigmoid() const { return ox::logsigmoid(*this); }
bool Tensor::allclose(const Tensor& other, double rtol, double atol, bool equal_nan) const {
  return ox::allclose(*this, other, rtol, atol, equal_nan);
}
bool Tensor::equal(const Tensor& other) const { return ox::equal(*this, other); }

Tensor Tensor::new_empty(const Shape& shape, TensorOptions o) const {
  return ox::empty(shape, with_defaults_of(*this, o));
}
Tensor Tensor::new_zeros(const Shape& shape, TensorOptions o) const {
  return ox::zeros(shape, with_defaults_of(*this, o));
}
Tensor Tensor::new_ones(const Shape& shape, TensorOptions o) const {
  return ox::ones(shape, with_defaults_of(*this, o));
}
Tensor Tensor::new_full(const Shape& shape, const Scalar& value, TensorOptions o) const {
  return ox::full(shape, value, with_defaults_of(*this, o));
}

Tensor rand_like(const Tensor& like, TensorOptions o, Generator* gen) {
  return rand(like.shape(), with_defaults_of(like, o), gen);
}
Tensor randn_like(const Tensor& like, TensorOptions o, Generator* gen) {
  return randn(like.shape(), with_defaults_of(like, o), gen);
}
Tensor randint_like(const Tensor& like, int64_t low, int64_t high, TensorOptions o,
                    Generator* gen) {
  return randint(low, high, like.shape(), with_defaults_of(like, o), gen);
}

Tensor Tensor::operator[](const Tensor& index) const { return this->index({TensorIndex(index)}); }

#define OX_UNARY_INPLACE(name)                                                           \
  Tensor& Tensor::name##_() {                                                            \
    return unary_inplace(*this, #name "_", [](const Tensor& x) { return ox::name(x); }); \
  }
OX_UNARY_INPLACE(abs)
OX_UNARY_INPLACE(neg)
OX_UNARY_INPLACE(exp)
OX_UNARY_INPLACE(log)
OX_UNARY_INPLACE(sqrt)
OX_UNARY_INPLACE(rsqrt)
OX_UNARY_INPLACE(square)
OX_UNARY_INPLACE(sin)
OX_UNARY_INPLACE(cos)
OX_UNARY_INPLACE(tanh)
OX_UNARY_INPLACE(sigmoid)
OX_UNARY_INPLACE(relu)
OX_UNARY_INPLACE(floor)
OX_UNARY_INPLACE(ceil)
OX_UNARY_INPLACE(round)
OX_UNARY_INPLACE(trunc)
OX_UNARY_INPLACE(sign)
OX_UNARY_INPLACE(reciprocal)
#undef OX_UNARY_INPLACE

Tensor& Tensor::pow_(const Scalar& e) {
  return unary_inplace(*this, "pow_", [&](const Tensor& x) { return ox::pow(x, e); });
}
Tensor& Tensor::pow_(const Tensor& e) {
  return unary_inplace(*this, "pow_", [&](const Tensor& x) { return ox::pow(x, e); });
}
Tensor& Tensor::clamp_min_(const Scalar& min) { return clamp_(min); }
Tensor& Tensor::clamp_max_(const Scalar& max) { return clamp_(std::nullopt, max); }

}  // namespace ox
