// Unary elementwise ops: dtype rules, then the backend's unary primitive.

#include <algorithm>
#include <cmath>
#include <limits>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "core/dispatch.h"
#include "ops/op_util.h"

namespace ox {

namespace {

// d op(x) / dx times g, from x and y = op(x), in public ops (differentiable again). Rounding
// and sign have zero derivative.
Tensor unary_vjp(UnaryOp op, const UnaryParams& p, const Tensor& g, const Tensor& x,
                 const Tensor& y) {
  constexpr double kLn2 = 0.6931471805599453, kLn10 = 2.302585092994046;
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;
  switch (op) {
    case UnaryOp::Neg:
      return -g;
    case UnaryOp::Abs:
      return g * sign(x);
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
      return zeros_like(g);
    case UnaryOp::Square:
      return g * x * 2;
    case UnaryOp::Exp:
      return g * y;
    case UnaryOp::Exp2:
      return g * y * kLn2;
    case UnaryOp::Expm1:
      return g * (y + 1);
    case UnaryOp::Log:
      return g / x;
    case UnaryOp::Log2:
      return g / (x * kLn2);
    case UnaryOp::Log10:
      return g / (x * kLn10);
    case UnaryOp::Log1p:
      return g / (x + 1);
    case UnaryOp::Sqrt:
      return g / (y * 2);
    case UnaryOp::Rsqrt:
      return g * y * y * y * -0.5;
    case UnaryOp::Reciprocal:
      return -g * y * y;
    case UnaryOp::Sin:
      return g * cos(x);
    case UnaryOp::Cos:
      return -g * sin(x);
    case UnaryOp::Tan:
      return g * (y * y + 1);
    case UnaryOp::Asin:
      return g * rsqrt(1 - x * x);
    case UnaryOp::Acos:
      return -g * rsqrt(1 - x * x);
    case UnaryOp::Atan:
      return g / (x * x + 1);
    case UnaryOp::Sinh:
      return g * cosh(x);
    case UnaryOp::Cosh:
      return g * sinh(x);
    case UnaryOp::Tanh:
      return g * (1 - y * y);
    case UnaryOp::Sigmoid:
      return g * y * (1 - y);
    case UnaryOp::LogSigmoid:
      return g * sigmoid(-x);
    case UnaryOp::Relu:  // one pass, no bool tensor
      return ops::relu_backward(g, y);
    case UnaryOp::LeakyRelu:
      return where(gt(x, 0), g, g * p.a);
    case UnaryOp::Elu:  // alpha e^x below 0: from x, as PyTorch (y may change in place)
      return where(gt(x, 0), g, g * exp(x) * p.a);
    case UnaryOp::GeluErf:  // one pass, not eleven
      return ops::gelu_backward(g, x, "none");
    case UnaryOp::GeluTanh:
      return ops::gelu_backward(g, x, "tanh");
    case UnaryOp::Silu: {
      const Tensor s = sigmoid(x);
      return g * s * (x * (1 - s) + 1);
    }
    case UnaryOp::Softplus:  // linear past the threshold, as the forward
      return where(gt(x * p.a, p.b), g, g * sigmoid(x * p.a));
    case UnaryOp::Mish: {
      const Tensor t = tanh(softplus(x));
      return g * (t + x * sigmoid(x) * (1 - t * t));
    }
    case UnaryOp::Erf:
      return g * exp(-x * x) * kTwoOverSqrtPi;
    case UnaryOp::Erfc:
      return g * exp(-x * x) * -kTwoOverSqrtPi;
    case UnaryOp::Clamp:  // inside the bounds (inclusive) the gradient passes
      return where(logical_and(ge(x, p.a), le(x, p.b)), g, 0);
    case UnaryOp::NanToNum:
      return where(isfinite(x), g, 0);
    default:
      OX_ASSERT(false, "no vjp for a non-differentiable unary op");
      return {};
  }
}

// Whether a 16-bit gradient rule runs in f32: rules of more than one op (gelu's, mish's,
// sigmoid's, ...) would otherwise round after each, where PyTorch's backward kernels compute in
// f32 and round once. Rules that select or negate g are exact in any dtype.
bool widens_vjp(UnaryOp op, DType dt) {
  if (dt != kF16 && dt != kBF16) return false;
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Abs:
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
    case UnaryOp::Relu:
    case UnaryOp::LeakyRelu:
    case UnaryOp::Clamp:
    case UnaryOp::NanToNum:
      return false;
    default:
      return true;
  }
}

Tensor unary_op(const Tensor& x, UnaryOp op, const UnaryParams& params = {}) {
  const char* name = unary_name(op);
  if (autograd::needs_grad({&x})) {
    Tensor y = autograd::without_grad([&] { return unary_op(x, op, params); });
    // Each rule reads x or y (PyTorch's choice), or neither; only that is saved, so that an
    // in-place write into the other does not fail the backward.
    const bool needs_y = op == UnaryOp::Exp || op == UnaryOp::Exp2 || op == UnaryOp::Expm1 ||
                         op == UnaryOp::Sqrt || op == UnaryOp::Rsqrt || op == UnaryOp::Reciprocal ||
                         op == UnaryOp::Tan || op == UnaryOp::Tanh || op == UnaryOp::Sigmoid ||
                         op == UnaryOp::Relu;
    const bool reads_nothing = op == UnaryOp::Neg || op == UnaryOp::Sign || op == UnaryOp::Floor ||
                               op == UnaryOp::Ceil || op == UnaryOp::Round || op == UnaryOp::Trunc;
    const bool needs_x = !needs_y && !reads_nothing;
    if (is_floating(y.dtype()))
      autograd::record(
          name, {x}, {y}, {needs_x ? x : Tensor(), needs_y ? y : Tensor()},
          [op, params](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
            if (!widens_vjp(op, g[0].dtype()))
              return std::vector<Tensor>{unary_vjp(op, params, g[0], s[0], s[1])};
            // The node rounds the f32 gradient once into x's dtype.
            const auto wide = [](const Tensor& t) { return t.defined() ? t.to(kF32) : t; };
            return std::vector<Tensor>{unary_vjp(op, params, wide(g[0]), wide(s[0]), wide(s[1]))};
          });
    return y;
  }
  const TensorImpl& xi = ops::impl_of(x, name);
  Tensor src = x;
  DType out_dtype = xi.dtype();
  switch (unary_class(op)) {  // the op's dtype rule, from the table (core/elementwise_ops.h)
    case DTypeClass::Numeric:
    case DTypeClass::NumericOrBool:
      OX_CHECK(class_takes(unary_class(op), xi.dtype()), DType, name,
               "is not defined for bool tensors");
      break;
    case DTypeClass::FloatingOrCopy:  // rounding and NaN replacement leave integers as they are
      if (!is_floating(xi.dtype())) return x.clone();
      break;
    case DTypeClass::Floating:
      if (!is_floating(xi.dtype())) {
        src = x.to(kF32);
        out_dtype = kF32;
      }
      break;
    case DTypeClass::AnyToBool:
      out_dtype = kBool;
      break;
    case DTypeClass::IntegralOrBool:
      OX_CHECK(!is_floating(xi.dtype()), DType, name, "needs an integer or bool tensor, got ",
               xi.dtype());
      break;
  }
  Tensor out = make_empty(xi.layout().shape, out_dtype, xi.device(), name);
  if (out.numel() > 0)
    backend_for(xi.device(), name).unary(op, out.impl()->array(), src.impl()->array(), params);
  return out;
}

// The unary ops on autocast's f32 list (docs/MIXED_PRECISION.md).
Tensor f32_unary_op(const Tensor& x, UnaryOp op, const UnaryParams& params = {}) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return unary_op(cast(x), op, params);
  return unary_op(x, op, params);
}

}  // namespace

Tensor neg(const Tensor& x) { return unary_op(x, UnaryOp::Neg); }
Tensor abs(const Tensor& x) { return unary_op(x, UnaryOp::Abs); }
Tensor sign(const Tensor& x) { return unary_op(x, UnaryOp::Sign); }
Tensor square(const Tensor& x) { return unary_op(x, UnaryOp::Square); }
Tensor exp(const Tensor& x) { return f32_unary_op(x, UnaryOp::Exp); }
Tensor exp2(const Tensor& x) { return unary_op(x, UnaryOp::Exp2); }
Tensor expm1(const Tensor& x) { return f32_unary_op(x, UnaryOp::Expm1); }
Tensor log(const Tensor& x) { return f32_unary_op(x, UnaryOp::Log); }
Tensor log2(const Tensor& x) { return f32_unary_op(x, UnaryOp::Log2); }
Tensor log10(const Tensor& x) { return f32_unary_op(x, UnaryOp::Log10); }
Tensor log1p(const Tensor& x) { return f32_unary_op(x, UnaryOp::Log1p); }
Tensor sqrt(const Tensor& x) { return unary_op(x, UnaryOp::Sqrt); }
Tensor rsqrt(const Tensor& x) { return f32_unary_op(x, UnaryOp::Rsqrt); }
Tensor reciprocal(const Tensor& x) { return f32_unary_op(x, UnaryOp::Reciprocal); }
Tensor sin(const Tensor& x) { return unary_op(x, UnaryOp::Sin); }
Tensor cos(const Tensor& x) { return unary_op(x, UnaryOp::Cos); }
Tensor tan(const Tensor& x) { return unary_op(x, UnaryOp::Tan); }
Tensor asin(const Tensor& x) { return unary_op(x, UnaryOp::Asin); }
Tensor acos(const Tensor& x) { return unary_op(x, UnaryOp::Acos); }
Tensor atan(const Tensor& x) { return unary_op(x, UnaryOp::Atan); }
Tensor sinh(const Tensor& x) { return unary_op(x, UnaryOp::Sinh); }
Tensor cosh(const Tensor& x) { return unary_op(x, UnaryOp::Cosh); }
Tensor tanh(const Tensor& x) { return unary_op(x, UnaryOp::Tanh); }
Tensor sigmoid(const Tensor& x) { return unary_op(x, UnaryOp::Sigmoid); }
Tensor logsigmoid(const Tensor& x) { return unary_op(x, UnaryOp::LogSigmoid); }
Tensor relu(const Tensor& x) { return unary_op(x, UnaryOp::Relu); }
Tensor leaky_relu(const Tensor& x, double negative_slope) {
  return unary_op(x, UnaryOp::LeakyRelu, {negative_slope});
}
Tensor elu(const Tensor& x, double alpha) { return unary_op(x, UnaryOp::Elu, {alpha}); }
Tensor gelu(const Tensor& x, std::string_view approximate) {
  OX_CHECK(approximate == "none" || approximate == "tanh", Value, "gelu",
           "approximate must be \"none\" or \"tanh\", got \"", std::string(approximate), "\"");
  return unary_op(x, approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::GeluErf);
}
Tensor silu(const Tensor& x) { return unary_op(x, UnaryOp::Silu); }
Tensor softplus(const Tensor& x, double beta, double threshold) {
  OX_CHECK(beta != 0, Value, "softplus", "beta must be nonzero");
  return f32_unary_op(x, UnaryOp::Softplus, {beta, threshold});
}
Tensor mish(const Tensor& x) { return unary_op(x, UnaryOp::Mish); }
Tensor erf(const Tensor& x) { return unary_op(x, UnaryOp::Erf); }
Tensor erfc(const Tensor& x) { return unary_op(x, UnaryOp::Erfc); }
Tensor floor(const Tensor& x) { return unary_op(x, UnaryOp::Floor); }
Tensor ceil(const Tensor& x) { return unary_op(x, UnaryOp::Ceil); }
Tensor round(const Tensor& x) { return unary_op(x, UnaryOp::Round); }
Tensor trunc(const Tensor& x) { return unary_op(x, UnaryOp::Trunc); }

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
  return unary_op(x.to(dt), UnaryOp::Clamp, {lo, hi});
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
  return unary_op(x, UnaryOp::NanToNum, {nan, posinf.value_or(big), neginf.value_or(-big)});
}

Tensor isnan(const Tensor& x) { return unary_op(x, UnaryOp::IsNan); }
Tensor isinf(const Tensor& x) { return unary_op(x, UnaryOp::IsInf); }
Tensor isfinite(const Tensor& x) { return unary_op(x, UnaryOp::IsFinite); }
Tensor logical_not(const Tensor& x) { return unary_op(x, UnaryOp::LogicalNot); }
Tensor bitwise_not(const Tensor& x) { return unary_op(x, UnaryOp::BitwiseNot); }

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
  return ops::assign_result(*this, ox::clamp(ops::inplace_source(*this), min, max), "clamp_");
}

}  // namespace ox
