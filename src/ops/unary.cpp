// Unary elementwise ops: dtype rules, then the backend's unary primitive.

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/dispatch.h"
#include "ops/op_util.h"

namespace ox {

namespace {

enum class Family { Numeric, Floating, Predicate, Bitwise };

Family family_of(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
    case UnaryOp::Square:
    case UnaryOp::Relu:
    case UnaryOp::Clamp:
      return Family::Numeric;
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
    case UnaryOp::IsFinite:
    case UnaryOp::LogicalNot:
      return Family::Predicate;
    case UnaryOp::BitwiseNot:
      return Family::Bitwise;
    default:
      return Family::Floating;
  }
}

// Rounding and NaN replacement leave integers as they are (a copy, as PyTorch returns).
bool identity_on_integers(UnaryOp op) {
  return op == UnaryOp::Floor || op == UnaryOp::Ceil || op == UnaryOp::Round ||
         op == UnaryOp::Trunc || op == UnaryOp::NanToNum;
}

Tensor unary_op(const Tensor& x, UnaryOp op, const char* name, const UnaryParams& params = {}) {
  const TensorImpl& xi = ops::impl_of(x, name);
  Tensor src = x;
  DType out_dtype = xi.dtype();
  switch (family_of(op)) {
    case Family::Numeric:
      OX_CHECK(xi.dtype() != kBool, DType, name, "is not defined for bool tensors");
      break;
    case Family::Floating:
      if (!is_floating(xi.dtype())) {
        if (identity_on_integers(op)) return x.clone();
        src = x.to(kF32);
        out_dtype = kF32;
      }
      break;
    case Family::Predicate:
      out_dtype = kBool;
      break;
    case Family::Bitwise:
      OX_CHECK(!is_floating(xi.dtype()), DType, name, "needs an integer or bool tensor, got ",
               xi.dtype());
      break;
  }
  Tensor out = make_empty(xi.layout().shape, out_dtype, xi.device(), name);
  if (out.numel() > 0)
    backend_for(xi.device(), name).unary(op, out.impl()->array(), src.impl()->array(), params);
  return out;
}

}  // namespace

Tensor neg(const Tensor& x) { return unary_op(x, UnaryOp::Neg, "neg"); }
Tensor abs(const Tensor& x) { return unary_op(x, UnaryOp::Abs, "abs"); }
Tensor sign(const Tensor& x) { return unary_op(x, UnaryOp::Sign, "sign"); }
Tensor square(const Tensor& x) { return unary_op(x, UnaryOp::Square, "square"); }
Tensor exp(const Tensor& x) { return unary_op(x, UnaryOp::Exp, "exp"); }
Tensor exp2(const Tensor& x) { return unary_op(x, UnaryOp::Exp2, "exp2"); }
Tensor expm1(const Tensor& x) { return unary_op(x, UnaryOp::Expm1, "expm1"); }
Tensor log(const Tensor& x) { return unary_op(x, UnaryOp::Log, "log"); }
Tensor log2(const Tensor& x) { return unary_op(x, UnaryOp::Log2, "log2"); }
Tensor log10(const Tensor& x) { return unary_op(x, UnaryOp::Log10, "log10"); }
Tensor log1p(const Tensor& x) { return unary_op(x, UnaryOp::Log1p, "log1p"); }
Tensor sqrt(const Tensor& x) { return unary_op(x, UnaryOp::Sqrt, "sqrt"); }
Tensor rsqrt(const Tensor& x) { return unary_op(x, UnaryOp::Rsqrt, "rsqrt"); }
Tensor reciprocal(const Tensor& x) { return unary_op(x, UnaryOp::Reciprocal, "reciprocal"); }
Tensor sin(const Tensor& x) { return unary_op(x, UnaryOp::Sin, "sin"); }
Tensor cos(const Tensor& x) { return unary_op(x, UnaryOp::Cos, "cos"); }
Tensor tan(const Tensor& x) { return unary_op(x, UnaryOp::Tan, "tan"); }
Tensor asin(const Tensor& x) { return unary_op(x, UnaryOp::Asin, "asin"); }
Tensor acos(const Tensor& x) { return unary_op(x, UnaryOp::Acos, "acos"); }
Tensor atan(const Tensor& x) { return unary_op(x, UnaryOp::Atan, "atan"); }
Tensor sinh(const Tensor& x) { return unary_op(x, UnaryOp::Sinh, "sinh"); }
Tensor cosh(const Tensor& x) { return unary_op(x, UnaryOp::Cosh, "cosh"); }
Tensor tanh(const Tensor& x) { return unary_op(x, UnaryOp::Tanh, "tanh"); }
Tensor sigmoid(const Tensor& x) { return unary_op(x, UnaryOp::Sigmoid, "sigmoid"); }
Tensor logsigmoid(const Tensor& x) { return unary_op(x, UnaryOp::LogSigmoid, "logsigmoid"); }
Tensor relu(const Tensor& x) { return unary_op(x, UnaryOp::Relu, "relu"); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary_op(x, UnaryOp::LeakyRelu, "leaky_relu", {negative_slope});
}
Tensor elu(const Tensor& x, double alpha) { return unary_op(x, UnaryOp::Elu, "elu", {alpha}); }
Tensor gelu(const Tensor& x, std::string_view approximate) {
  OX_CHECK(approximate == "none" || approximate == "tanh", Value, "gelu",
           "approximate must be \"none\" or \"tanh\", got \"", std::string(approximate), "\"");
  return unary_op(x, approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf, "gelu");
}
Tensor silu(const Tensor& x) { return unary_op(x, UnaryOp::Silu, "silu"); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  OX_CHECK(beta != 0, Value, "softplus", "beta must be nonzero");
  return unary_op(x, UnaryOp::Softplus, "softplus", {beta, threshold});
}
Tensor mish(const Tensor& x) { return unary_op(x, UnaryOp::Mish, "mish"); }
Tensor erf(const Tensor& x) { return unary_op(x, UnaryOp::Erf, "erf"); }
Tensor erfc(const Tensor& x) { return unary_op(x, UnaryOp::Erfc, "erfc"); }
Tensor floor(const Tensor& x) { return unary_op(x, UnaryOp::Floor, "floor"); }
Tensor ceil(const Tensor& x) { return unary_op(x, UnaryOp::Ceil, "ceil"); }
Tensor round(const Tensor& x) { return unary_op(x, UnaryOp::Round, "round"); }
Tensor trunc(const Tensor& x) { return unary_op(x, UnaryOp::Trunc, "trunc"); }

Tensor clamp(const Tensor& x, std::optional<Scalar> min, std::optional<Scalar> max) {
  OX_CHECK(min || max, Value, "clamp", "needs at least one of min and max");
  ops::impl_of(x, "clamp");
  // A float bound on an integer tensor computes in float, as torch.clamp's promotion.
  ResultType rt;
  rt.tensor(x.dtype(), x.dim() == 0);
  if (min) rt.scalar(*min);
  if (max) rt.scalar(*max);
  const DType dt = rt.get();
  const double lo = min ? min->to_double() : -INFINITY, hi = max ? max->to_double() : INFINITY;
  if (!is_floating(dt)) {  // integer bounds clamp in int64 range, without float rounding
    // A bound beyond the dtype's range clamps nothing on its side; saturated, it cannot wrap
    // when it becomes a tensor of that dtype (u8 clamp(-1, 300) is the identity).
    const auto saturate = [dt](int64_t v) {
      return dispatch_dtype(dt, [v]<class T>() -> int64_t {
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
          return std::clamp<int64_t>(v, std::numeric_limits<T>::min(),
                                     std::numeric_limits<T>::max());
        } else {
          return v;
        }
      });
    };
    const int64_t ilo = min ? saturate(min->to_int()) : INT64_MIN;
    const int64_t ihi = max ? saturate(max->to_int()) : INT64_MAX;
    const Tensor lo_t = ops::scalar_operand(ilo, dt, x.device());
    const Tensor hi_t = ops::scalar_operand(ihi, dt, x.device());
    return ox::clamp(x.to(dt), min ? lo_t : Tensor(), max ? hi_t : Tensor());
  }
  return unary_op(x.to(dt), UnaryOp::Clamp, "clamp", {lo, hi});
}

Tensor clamp(const Tensor& x, const Tensor& min, const Tensor& max) {
  OX_CHECK(min.defined() || max.defined(), Value, "clamp", "needs at least one of min and max");
  Tensor out = min.defined() ? maximum(x, min) : x;
  if (max.defined()) out = minimum(out, max);
  return out;
}

Tensor nan_to_num(const Tensor& x, double nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  const DType dt = ops::impl_of(x, "nan_to_num").dtype();
  // Infinities become the dtype's largest finite values unless given.
  const double big = dt == kF16    ? 65504.0
                     : dt == kBF16 ? 0x1.fep127
                     : dt == kF64  ? 1.7976931348623157e308
                                   : 0x1.fffffep127;
  return unary_op(x, UnaryOp::NanToNum, "nan_to_num",
                  {nan, posinf.value_or(big), neginf.value_or(-big)});
}

Tensor isnan(const Tensor& x) { return unary_op(x, UnaryOp::IsNan, "isnan"); }
Tensor isinf(const Tensor& x) { return unary_op(x, UnaryOp::IsInf, "isinf"); }
Tensor isfinite(const Tensor& x) { return unary_op(x, UnaryOp::IsFinite, "isfinite"); }
Tensor logical_not(const Tensor& x) { return unary_op(x, UnaryOp::LogicalNot, "logical_not"); }
Tensor bitwise_not(const Tensor& x) { return unary_op(x, UnaryOp::BitwiseNot, "bitwise_not"); }

Tensor operator-(const Tensor& x) { return neg(x); }
Tensor operator~(const Tensor& x) { return bitwise_not(x); }

Tensor Tensor::abs() const { return ox::abs(*this); }
Tensor Tensor::neg() const { return ox::neg(*this); }
Tensor Tensor::sign() const { return ox::sign(*this); }
Tensor Tensor::square() const { return ox::square(*this); }
Tensor Tensor::exp() const { return ox::exp(*this); }
Tensor Tensor::log() const { return ox::log(*this); }
Tensor Tensor::sqrt() const { return ox::sqrt(*this); }
Tensor Tensor::rsqrt() const { return ox::rsqrt(*this); }
Tensor Tensor::sin() const { return ox::sin(*this); }
Tensor Tensor::cos() const { return ox::cos(*this); }
Tensor Tensor::tanh() const { return ox::tanh(*this); }
Tensor Tensor::sigmoid() const { return ox::sigmoid(*this); }
Tensor Tensor::relu() const { return ox::relu(*this); }
Tensor Tensor::floor() const { return ox::floor(*this); }
Tensor Tensor::ceil() const { return ox::ceil(*this); }
Tensor Tensor::round() const { return ox::round(*this); }
Tensor Tensor::trunc() const { return ox::trunc(*this); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return ox::clamp(*this, min, max);
}
Tensor& Tensor::clamp_(std::optional<Scalar> min, std::optional<Scalar> max) {
  return ops::assign_result(*this, ox::clamp(*this, min, max), "clamp_");
}

}  // namespace ox
