#pragma once
// The op surface: free functions (ox::exp, ox::add, ...) and operators. Each validates its
// arguments, promotes dtypes as PyTorch does (docs/OPS.md), broadcasts, and calls one backend
// primitive. Dtype and NaN rules of every op are in docs/OPS.md.

#include <optional>
#include <vector>
#include <string_view>

#include "oxmera/tensor.h"

namespace ox {

// An operand that is a tensor or a bare number: `ox::add(x, 2)`, `ox::pow(2.0, x)`.
class TensorOrScalar {
 public:
  TensorOrScalar(const Tensor& t) : tensor_(t) {}  // NOLINT: operands read like values
  TensorOrScalar(const Scalar& s) : scalar_(s), is_scalar_(true) {}  // NOLINT
  template <class T>
  requires std::is_arithmetic_v<T> TensorOrScalar(T v) : scalar_(v), is_scalar_(true) {}  // NOLINT
  bool is_scalar() const { return is_scalar_; }
  const Tensor& tensor() const { return tensor_; }
  const Scalar& scalar() const { return scalar_; }

 private:
  Tensor tensor_;
  Scalar scalar_;
  bool is_scalar_ = false;
};

// ---- Unary -------------------------------------------------------------------------------
// Floating ops (exp ... nan_to_num) compute integer and bool inputs in f32, as PyTorch.
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor sign(const Tensor& x);
Tensor square(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor exp2(const Tensor& x);
Tensor expm1(const Tensor& x);
Tensor log(const Tensor& x);
Tensor log2(const Tensor& x);
Tensor log10(const Tensor& x);
Tensor log1p(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor reciprocal(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tan(const Tensor& x);
Tensor asin(const Tensor& x);
Tensor acos(const Tensor& x);
Tensor atan(const Tensor& x);
Tensor sinh(const Tensor& x);
Tensor cosh(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor logsigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor elu(const Tensor& x, double alpha = 1.0);
Tensor gelu(const Tensor& x, std::string_view approximate = "none");  // "none" (erf) or "tanh"
Tensor silu(const Tensor& x);
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor mish(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor erfc(const Tensor& x);
Tensor floor(const Tensor& x);
Tensor ceil(const Tensor& x);
Tensor round(const Tensor& x);  // half to even
Tensor trunc(const Tensor& x);
Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max);  // either may be undefined
Tensor nan_to_num(const Tensor& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                  std::optional<double> neginf = std::nullopt);
Tensor isnan(const Tensor& x);
Tensor isinf(const Tensor& x);
Tensor isfinite(const Tensor& x);
Tensor logical_not(const Tensor& x);
Tensor bitwise_not(const Tensor& x);

// ---- Binary (broadcasting; tensor-scalar forms through TensorOrScalar) -------------------
Tensor add(const TensorOrScalar& a, const TensorOrScalar& b, const Scalar& alpha = 1);
Tensor sub(const TensorOrScalar& a, const TensorOrScalar& b, const Scalar& alpha = 1);
Tensor mul(const TensorOrScalar& a, const TensorOrScalar& b);
// rounding_mode: "" (true division, floating result), "floor" or "trunc" (dtype kept).
Tensor div(const TensorOrScalar& a, const TensorOrScalar& b, std::string_view rounding_mode = "");
Tensor floor_divide(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor remainder(const TensorOrScalar& a, const TensorOrScalar& b);  // sign of the divisor
Tensor fmod(const TensorOrScalar& a, const TensorOrScalar& b);       // sign of the dividend
Tensor pow(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor atan2(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor maximum(const TensorOrScalar& a, const TensorOrScalar& b);  // NaN propagates
Tensor minimum(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor hypot(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor logaddexp(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor eq(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor ne(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor lt(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor le(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor gt(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor ge(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor logical_and(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor logical_or(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor logical_xor(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor bitwise_and(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor bitwise_or(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor bitwise_xor(const TensorOrScalar& a, const TensorOrScalar& b);
Tensor where(const Tensor& condition, const TensorOrScalar& a, const TensorOrScalar& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const TensorOrScalar& value);
Tensor lerp(const Tensor& start, const Tensor& end, const TensorOrScalar& weight);
Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);

// ---- Joining and shaping (copies) ----------------------------------------------------------
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0);  // views
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);  // views
std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing = "ij");
Tensor repeat(const Tensor& x, const Dims& repeats);
Tensor tile(const Tensor& x, const Dims& reps);
Tensor repeat_interleave(const Tensor& x, int64_t repeats,
                         std::optional<int64_t> dim = std::nullopt);
// pads: (before, after) pairs from the last dim backwards, as torch.nn.functional.pad;
// negative amounts crop. mode: "constant", "reflect" or "replicate".
Tensor pad(const Tensor& x, const Dims& pads, std::string_view mode = "constant",
           const Scalar& value = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor roll(const Tensor& x, const Dims& shifts, const Dims& dims = {});

// ---- Operators (at least one tensor operand) ---------------------------------------------
Tensor operator-(const Tensor& x);
Tensor operator~(const Tensor& x);
#define OX_DECLARE_BINARY_OPERATOR(sym)                  \
  Tensor operator sym(const Tensor& a, const Tensor& b); \
  Tensor operator sym(const Tensor& a, const Scalar& b); \
  Tensor operator sym(const Scalar& a, const Tensor& b);
OX_DECLARE_BINARY_OPERATOR(+)
OX_DECLARE_BINARY_OPERATOR(-)
OX_DECLARE_BINARY_OPERATOR(*)
OX_DECLARE_BINARY_OPERATOR(/)
OX_DECLARE_BINARY_OPERATOR(%)
OX_DECLARE_BINARY_OPERATOR(==)
OX_DECLARE_BINARY_OPERATOR(!=)
OX_DECLARE_BINARY_OPERATOR(<)
OX_DECLARE_BINARY_OPERATOR(<=)
OX_DECLARE_BINARY_OPERATOR(>)
OX_DECLARE_BINARY_OPERATOR(>=)
OX_DECLARE_BINARY_OPERATOR(&)
OX_DECLARE_BINARY_OPERATOR(|)
OX_DECLARE_BINARY_OPERATOR(^)
#undef OX_DECLARE_BINARY_OPERATOR
Tensor& operator+=(Tensor& a, const TensorOrScalar& b);
Tensor& operator-=(Tensor& a, const TensorOrScalar& b);
Tensor& operator*=(Tensor& a, const TensorOrScalar& b);
Tensor& operator/=(Tensor& a, const TensorOrScalar& b);

}  // namespace ox
