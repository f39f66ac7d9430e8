// Binary elementwise ops, where, and the composites built on them.

#include "autograd/record.h"
#include "ops/op_util.h"

namespace ox {

namespace {

// Whether `s` survives conversion to the 16-bit float `dt` unchanged, so the op may take it as
// a 16-bit operand; otherwise the op runs in f32, as PyTorch computes with the exact scalar.
// Integers count too: f16 x + 2049 must not become x + 2048.
bool exact_in(const Scalar& s, DType dt) {
  const double v = s.to_double();
  const auto f = static_cast<float>(v);
  const float r = dt == kF16 ? static_cast<float>(Half(f)) : static_cast<float>(BFloat16(f));
  return static_cast<double>(r) == v || v != v;  // NaN converts to NaN
}

struct BinaryPlan {
  DType compute;  // the dtype both operands are converted to
  DType out;      // compute, or bool for comparisons
};

BinaryPlan plan_binary(BinaryOp op, const TensorOrScalar& a, const TensorOrScalar& b,
                       const char* name) {
  ResultType rt;
  ops::add_operand(rt, a);
  ops::add_operand(rt, b);
  DType common = rt.get();
  OX_CHECK(op != BinaryOp::Sub || common != kBool, DType, name,
           "subtraction of bool tensors is not supported; use logical_xor or ~");
  switch (binary_class(op)) {  // the op's dtype rule, from the table (core/elementwise_ops.h)
    case DTypeClass::Floating:
      if (!is_floating(common)) common = kF32;
      break;
    case DTypeClass::IntegralOrBool:
      OX_CHECK(!is_floating(common), DType, name, "needs integer or bool operands, got ", common);
      break;
    case DTypeClass::Numeric:
      OX_CHECK(common != kBool, DType, name, "is not defined for bool operands");
      break;
    case DTypeClass::FloatingOrCopy:  // no binary op has it
    case DTypeClass::NumericOrBool:
    case DTypeClass::AnyToBool:
      break;
  }
  return {common, binary_returns_bool(op) ? kBool : common};
}

// The operands as tensors of the compute dtype on `device`.
Tensor operand(const TensorOrScalar& x, DType dtype, Device device) {
  return x.is_scalar() ? ops::scalar_operand(x.scalar(), dtype, device)
                       : x.tensor().to(device, dtype);
}

Device device_of(const TensorOrScalar& a, const TensorOrScalar& b, const char* name) {
  if (a.is_scalar() && b.is_scalar()) return Device::cpu();
  if (a.is_scalar()) return ops::impl_of(b.tensor(), name).device();
  if (b.is_scalar()) return ops::impl_of(a.tensor(), name).device();
  ops::impl_of(a.tensor(), name);
  ops::impl_of(b.tensor(), name);
  return ops::elementwise_device(name, {&a.tensor(), &b.tensor()});
}

bool half_type(DType dt) { return dt == kF16 || dt == kBF16; }

// What the gradients of a op b read, given which operands require grad: an op saves only that,
// as PyTorch's derivatives.yaml does, so that an in-place write PyTorch allows after the op
// (into its result, or into an operand no gradient reads) does not fail the backward.
struct BinarySaves {
  bool a, b, out;
};
BinarySaves binary_saves(BinaryOp op, bool need_a, bool need_b) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::FloorDiv:
    case BinaryOp::TruncDiv:
      return {false, false, false};
    case BinaryOp::Mul:
      return {need_b, need_a, false};
    case BinaryOp::Div:  // d/da = 1 / b, d/db = -a / b²
      return {need_b, true, false};
    case BinaryOp::Pow:  // d/da = b a^(b-1), d/db = out log(a) (both masked by a and b)
      return {true, true, need_b};
    case BinaryOp::Hypot:  // a / out, b / out
      return {need_a, need_b, true};
    case BinaryOp::Remainder:
    case BinaryOp::Fmod:  // d/da = 1
      return {need_b, need_b, false};
    default:
      return {true, true, false};
  }
}

// Gradients of a op b for the operands that need one (the others undefined), from g, the
// operands and the result as binary_saves keeps them, in public ops (add, sub, mul and div are
// handled where they are recorded, with scalars kept as scalars). The node sums them back to
// each operand's shape and dtype.
std::vector<Tensor> binary_vjp(BinaryOp op, const Tensor& g, const Tensor& a, const Tensor& b,
                               const Tensor& out, bool need_a, bool need_b) {
  const auto only = [&](const auto& da, const auto& db) {
    return std::vector<Tensor>{need_a ? da() : Tensor(), need_b ? db() : Tensor()};
  };
  switch (op) {
    case BinaryOp::FloorDiv:
    case BinaryOp::TruncDiv:  // piecewise constant
      return {zeros_like(g), zeros_like(g)};
    case BinaryOp::Remainder:
      return only([&] { return g; }, [&] { return neg(mul(g, floor(div(a, b)))); });
    case BinaryOp::Fmod:
      return only([&] { return g; }, [&] { return neg(mul(g, trunc(div(a, b)))); });
    case BinaryOp::Pow: {
      // 0 where the exponent is 0 (not 0 * inf), and no log(0) for the exponent's gradient at
      // a base of 0 (PyTorch's masks).
      return only(
          [&] { return where(eq(b, 0), 0, mul(mul(g, b), pow(a, sub(b, 1)))); },
          [&] { return where(logical_and(eq(a, 0), ge(b, 0)), 0, mul(mul(g, out), log(a))); });
    }
    case BinaryOp::Atan2: {
      const Tensor r2 = add(mul(a, a), mul(b, b));
      return {div(mul(g, b), r2), neg(div(mul(g, a), r2))};
    }
    case BinaryOp::Maximum:
    case BinaryOp::Minimum: {
      // The chosen operand gets the gradient; ties split it evenly, as PyTorch.
      const Tensor a_wins = op == BinaryOp::Maximum ? gt(a, b) : lt(a, b);
      const Tensor b_wins = op == BinaryOp::Maximum ? lt(a, b) : gt(a, b);
      const Tensor half = mul(where(eq(a, b), g, 0), 0.5);
      return {add(where(a_wins, g, 0), half), add(where(b_wins, g, 0), half)};
    }
    case BinaryOp::Hypot:
      return only([&] { return div(mul(g, a), out); }, [&] { return div(mul(g, b), out); });
    case BinaryOp::LogAddExp:  // from the operands alone, as PyTorch (the result may change)
      return only([&] { return div(g, add(exp(sub(b, a)), 1)); },
                  [&] { return div(g, add(exp(sub(a, b)), 1)); });
    case BinaryOp::ReluBackward:  // linear in g, piecewise constant in y
      return {ops::relu_backward(g, b), zeros_like(g)};
    case BinaryOp::GeluErfBackward: {  // a = gelu's g, b = x; gelu''(x) = φ(x) (2 - x²)
      const Tensor x2 = mul(b, b);
      const Tensor pdf = mul(exp(mul(x2, -0.5)), 0.3989422804014327);
      return {ops::gelu_backward(g, b, "none"), mul(mul(g, a), mul(pdf, sub(2, x2)))};
    }
    case BinaryOp::GeluTanhBackward: {
      // With u = k (x + c x³) and t = tanh(u): gelu''(x) = (1 - t²) (u' - x t u'² + x u'' / 2).
      constexpr double k = 0.7978845608028654, c = 0.044715;
      const Tensor x2 = mul(b, b);
      const Tensor t = tanh(mul(add(b, mul(mul(b, x2), c)), k));
      const Tensor du = mul(add(mul(x2, 3 * c), 1), k);
      const Tensor curve =
          add(sub(du, mul(mul(mul(b, t), du), du)), mul(x2, 3 * c * k));  // x u'' / 2 = 3ckx²
      return {ops::gelu_backward(g, b, "tanh"), mul(mul(g, a), mul(sub(1, mul(t, t)), curve))};
    }
    default:
      OX_ASSERT(false, "no vjp for a non-differentiable binary op");
      return {};
  }
}

Tensor binary_op(const TensorOrScalar& a, const TensorOrScalar& b, BinaryOp op, const char* name,
                 const Scalar& alpha = 1);
// The op under its table name (core/elementwise_ops.h).
Tensor binary_op(const TensorOrScalar& a, const TensorOrScalar& b, BinaryOp op,
                 const Scalar& alpha = 1) {
  return binary_op(a, b, op, binary_name(op), alpha);
}

// binary_op with autograd: computed without recording, then recorded when differentiable.
Tensor binary_op_recorded(const TensorOrScalar& a, const TensorOrScalar& b, BinaryOp op,
                          const char* name, const Scalar& alpha) {
  Tensor out = autograd::without_grad([&] { return binary_op(a, b, op, name, alpha); });
  if (binary_returns_bool(op) || !is_floating(out.dtype())) return out;
  const Tensor ta = a.is_scalar() ? Tensor() : a.tensor(),
               tb = b.is_scalar() ? Tensor() : b.tensor();
  const std::optional<Scalar> sa = a.is_scalar() ? std::optional(a.scalar()) : std::nullopt;
  const std::optional<Scalar> sb = b.is_scalar() ? std::optional(b.scalar()) : std::nullopt;
  const bool need_a = ta.defined() && ta.requires_grad(),
             need_b = tb.defined() && tb.requires_grad();
  const BinarySaves keep = binary_saves(op, need_a, need_b);
  autograd::record(
      name, {ta, tb}, {out},
      {keep.a ? ta : Tensor(), keep.b ? tb : Tensor(), keep.out ? out : Tensor()},
      [op, alpha, sa, sb, need_a, need_b](const std::vector<Tensor>& g,
                                          const std::vector<Tensor>& s) {
        // The common arithmetic directly, scalars as scalars and no work for a
        // scalar operand's gradient.
        const auto operand = [&](const std::optional<Scalar>& v, const Tensor& t) {
          return v ? TensorOrScalar(*v) : TensorOrScalar(t);
        };
        const bool unit = alpha.to_double() == 1.0;
        switch (op) {
          case BinaryOp::Add:
          case BinaryOp::Sub: {
            const double scale = op == BinaryOp::Sub ? -alpha.to_double() : alpha.to_double();
            return std::vector<Tensor>{
                need_a ? g[0] : Tensor(),
                need_b ? (unit && op == BinaryOp::Add ? g[0] : mul(g[0], scale)) : Tensor()};
          }
          case BinaryOp::Mul:
            return std::vector<Tensor>{need_a ? mul(g[0], operand(sb, s[1])) : Tensor(),
                                       need_b ? mul(g[0], operand(sa, s[0])) : Tensor()};
          case BinaryOp::Div:  // -g a / b², as PyTorch: the result is not saved
            return std::vector<Tensor>{
                need_a ? div(g[0], operand(sb, s[1])) : Tensor(),
                need_b ? neg(div(mul(g[0], operand(sa, s[0])), mul(s[1], s[1]))) : Tensor()};
          default:
            break;
        }
        // A scalar operand as a 0-d tensor of the result's dtype.
        const TensorOptions like{.dtype = g[0].dtype(), .device = g[0].device()};
        const Tensor x = sa ? full({}, *sa, like) : s[0];
        const Tensor y = sb ? full({}, *sb, like) : s[1];
        return binary_vjp(op, g[0], x, y, s[2], need_a, need_b);
      });
  return out;
}

Tensor binary_op(const TensorOrScalar& a, const TensorOrScalar& b, BinaryOp op, const char* name,
                 const Scalar& alpha) {
  if (autograd::needs_grad(
          {a.is_scalar() ? nullptr : &a.tensor(), b.is_scalar() ? nullptr : &b.tensor()}))
    return binary_op_recorded(a, b, op, name, alpha);
  const Device device = device_of(a, b, name);
  BinaryPlan plan = plan_binary(op, a, b, name);
  OX_CHECK(is_floating(plan.compute) || !alpha.is_floating(), DType, name,
           "alpha must not be a floating point number for ", plan.compute, " operands");
  // A scalar a 16-bit float cannot hold exactly (or a scaled alpha) is applied in f32.
  const bool widen =
      half_type(plan.compute) && ((a.is_scalar() && !exact_in(a.scalar(), plan.compute)) ||
                                  (b.is_scalar() && !exact_in(b.scalar(), plan.compute)));
  const DType compute = widen ? kF32 : plan.compute;
  const Tensor x = operand(a, compute, device), y = operand(b, compute, device);
  const Shape shape = broadcast_shapes(x.shape(), y.shape(), name);
  const DType out_dtype = binary_returns_bool(op) ? kBool : compute;
  Tensor out = make_empty(shape, out_dtype, device, name);
  if (out.numel() > 0)
    backend_for(device, name)
        .binary(op, out.impl()->array(), ops::broadcast_array(x, shape),
                ops::broadcast_array(y, shape), alpha.to_double());
  return widen && !binary_returns_bool(op) ? out.to(plan.out) : out;
}

// self = self op other, computed into self when nothing needs converting.
Tensor& binary_inplace(Tensor& self, const TensorOrScalar& other, BinaryOp op, const char* name,
                       const Scalar& alpha = 1) {
  const TensorImpl& si = ops::impl_of(self, name);
  OX_CHECK(!has_internal_overlap(si.layout()), Value, name, "tensor of shape ", si.layout().shape,
           " has elements sharing memory (an expanded tensor); clone() it first");
  const BinaryPlan plan = plan_binary(op, self, other, name);
  const bool direct =
      plan.out == si.dtype() && plan.compute == si.dtype() &&
      !(half_type(si.dtype()) && other.is_scalar() && !exact_in(other.scalar(), si.dtype()));
  // With autograd recording, the result (and its graph) is computed out of place first.
  const bool track = autograd::needs_grad({&self, other.is_scalar() ? nullptr : &other.tensor()});
  if (track) autograd::check_inplace(self, name);
  if (!direct || track)
    return ops::assign_result(self, binary_op(ops::inplace_source(self), other, op, name, alpha),
                              name);
  OX_CHECK(is_floating(plan.compute) || !alpha.is_floating(), DType, name,
           "alpha must not be a floating point number for ", plan.compute, " operands");
  if (!other.is_scalar()) {
    const Device d = ops::elementwise_device(name, {&self, &other.tensor()});
    OX_CHECK(d == si.device(), Device, name, "cannot write a result on ", d, " into a tensor on ",
             si.device());
  }
  Tensor y = operand(other, si.dtype(), si.device());
  OX_CHECK(broadcast_shapes(si.layout().shape, y.shape(), name) == si.layout().shape, Shape, name,
           "output of shape ", si.layout().shape, " doesn't match the broadcast shape ",
           broadcast_shapes(si.layout().shape, y.shape(), name));
  if (may_overlap(si, *y.impl())) y = y.clone();
  if (si.layout().numel() > 0)
    backend_for(si.device(), name)
        .binary(op, si.array(), si.array(), ops::broadcast_array(y, si.layout().shape),
                alpha.to_double());
  si.storage()->bump_version();
  return self;
}

}  // namespace

Tensor add(const TensorOrScalar& a, const TensorOrScalar& b, const Scalar& alpha) {
  return binary_op(a, b, BinaryOp::Add, alpha);
}
Tensor sub(const TensorOrScalar& a, const TensorOrScalar& b, const Scalar& alpha) {
  return binary_op(a, b, BinaryOp::Sub, alpha);
}
Tensor mul(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Mul);
}
Tensor div(const TensorOrScalar& a, const TensorOrScalar& b, std::string_view rounding_mode) {
  if (rounding_mode.empty()) return binary_op(a, b, BinaryOp::Div);
  if (rounding_mode == "floor") return binary_op(a, b, BinaryOp::FloorDiv, "div");
  OX_CHECK(rounding_mode == "trunc", Value, "div", "rounding_mode must be \"\", \"floor\" or ",
           "\"trunc\", got \"", std::string(rounding_mode), "\"");
  return binary_op(a, b, BinaryOp::TruncDiv, "div");
}
Tensor floor_divide(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::FloorDiv);
}
Tensor remainder(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Remainder);
}
Tensor fmod(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Fmod);
}
Tensor pow(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Pow);
}
Tensor atan2(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Atan2);
}
Tensor maximum(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Maximum);
}
Tensor minimum(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Minimum);
}
Tensor ops::gelu_backward(const Tensor& g, const Tensor& x, std::string_view approximate) {
  OX_CHECK(approximate == "none" || approximate == "tanh", Value, "gelu_backward",
           "approximate must be \"none\" or \"tanh\", got \"", approximate, "\"");
  return binary_op(g, x,
                   approximate == "tanh" ? BinaryOp::GeluTanhBackward : BinaryOp::GeluErfBackward);
}

Tensor ops::relu_backward(const Tensor& g, const Tensor& y) {
  return binary_op(g, y, BinaryOp::ReluBackward);
}

Tensor hypot(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Hypot);
}
Tensor logaddexp(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::LogAddExp);
}
Tensor eq(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Eq);
}
Tensor ne(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Ne);
}
Tensor lt(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Lt);
}
Tensor le(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Le);
}
Tensor gt(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Gt);
}
Tensor ge(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::Ge);
}
Tensor logical_and(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::LogicalAnd);
}
Tensor logical_or(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::LogicalOr);
}
Tensor logical_xor(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::LogicalXor);
}
Tensor bitwise_and(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::BitwiseAnd);
}
Tensor bitwise_or(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::BitwiseOr);
}
Tensor bitwise_xor(const TensorOrScalar& a, const TensorOrScalar& b) {
  return binary_op(a, b, BinaryOp::BitwiseXor);
}

Tensor where(const Tensor& condition, const TensorOrScalar& a, const TensorOrScalar& b) {
  const Tensor ta = a.is_scalar() ? Tensor() : a.tensor(),
               tb = b.is_scalar() ? Tensor() : b.tensor();
  if (autograd::needs_grad({&ta, &tb})) {
    Tensor out = autograd::without_grad([&] { return where(condition, a, b); });
    if (is_floating(out.dtype()))
      autograd::record("where", {ta, tb}, {out}, {condition},
                       [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                         return std::vector<Tensor>{where(s[0], g[0], 0), where(s[0], 0, g[0])};
                       });
    return out;
  }
  const TensorImpl& ci = ops::impl_of(condition, "where");
  OX_CHECK(ci.dtype() == kBool, DType, "where", "condition must be bool, got ", ci.dtype());
  const Device device =
      ops::elementwise_device("where", {&condition, a.is_scalar() ? &condition : &a.tensor(),
                                        b.is_scalar() ? &condition : &b.tensor()});
  const Tensor cond = condition.to(device);
  ResultType rt;
  ops::add_operand(rt, a);
  ops::add_operand(rt, b);
  const DType dt = rt.get();
  const Tensor x = operand(a, dt, device), y = operand(b, dt, device);
  const Shape shape =
      broadcast_shapes(ci.layout().shape, broadcast_shapes(x.shape(), y.shape(), "where"), "where");
  Tensor out = make_empty(shape, dt, device, "where");
  if (out.numel() > 0)
    backend_for(device, "where")
        .where(out.impl()->array(), ops::broadcast_array(cond, shape),
               ops::broadcast_array(x, shape), ops::broadcast_array(y, shape));
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, const TensorOrScalar& value) {
  const Tensor tv = value.is_scalar() ? Tensor() : value.tensor();
  if (autograd::needs_grad({&x, &tv})) {
    Tensor out = autograd::without_grad([&] { return masked_fill(x, mask, value); });
    autograd::record("masked_fill", {x, tv}, {out}, {mask},
                     [](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{where(s[0], 0, g[0]), sum(where(s[0], g[0], 0))};
                     });
    return out;
  }
  const TensorImpl& xi = ops::impl_of(x, "masked_fill");
  const TensorImpl& mi = ops::impl_of(mask, "masked_fill");
  OX_CHECK(mi.dtype() == kBool, DType, "masked_fill", "mask must be bool, got ", mi.dtype());
  OX_CHECK(value.is_scalar() || value.tensor().dim() == 0, Shape, "masked_fill",
           "value must be a number or a 0-d tensor, got shape ", value.tensor().shape());
  OX_CHECK(!value.is_scalar() || scalar_fits(value.scalar(), xi.dtype()), Value, "masked_fill",
           "value ", value.scalar(), " cannot be converted to ", xi.dtype(), " without overflow");
  OX_CHECK(
      broadcast_shapes(xi.layout().shape, mi.layout().shape, "masked_fill") == xi.layout().shape,
      Shape, "masked_fill", "mask of shape ", mi.layout().shape,
      " does not broadcast to the tensor's shape ", xi.layout().shape);
  const Tensor v = value.is_scalar() ? ops::scalar_operand(value.scalar(), xi.dtype(), xi.device())
                                     : value.tensor().to(xi.device(), xi.dtype());
  return where(mask, v, x);
}

namespace {

// The dtype a composite's operands promote to.
DType composite_dtype(std::initializer_list<TensorOrScalar> operands) {
  ResultType rt;
  for (const TensorOrScalar& x : operands) ops::add_operand(rt, x);
  return rt.get();
}

TensorOrScalar widened(const TensorOrScalar& x) {
  return x.is_scalar() ? x : TensorOrScalar(x.tensor().to(kF32));
}

}  // namespace

// The composites round after every step; with 16-bit floats that reaches several units in the
// last place, so they compute in f32 and round once, as PyTorch's opmath does.
Tensor lerp(const Tensor& start, const Tensor& end, const TensorOrScalar& weight) {
  OX_CHECK(is_floating(ops::impl_of(start, "lerp").dtype()), DType, "lerp",
           "needs floating tensors, got ", start.dtype());
  ops::impl_of(end, "lerp");
  if (!weight.is_scalar()) ops::impl_of(weight.tensor(), "lerp");
  const DType dt = composite_dtype({start, end, weight});
  if (half_type(dt)) return lerp(start.to(kF32), end.to(kF32), widened(weight)).to(dt);
  // PyTorch's two-sided form, exact at both ends: weight 0 gives start, weight 1 gives end.
  const Tensor diff = sub(end, start);
  if (weight.is_scalar()) {
    const double w = weight.scalar().to_double();
    return w < 0.5 ? add(start, diff, w) : sub(end, diff, 1.0 - w);
  }
  const Tensor& w = weight.tensor();
  return where(lt(w, 0.5), add(start, mul(w, diff)), sub(end, mul(diff, sub(1, w))));
}

Tensor addcmul(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  ops::impl_of(x, "addcmul");
  ops::impl_of(t1, "addcmul");
  ops::impl_of(t2, "addcmul");
  const DType dt = composite_dtype({x, t1, t2});
  if (half_type(dt)) return addcmul(x.to(kF32), t1.to(kF32), t2.to(kF32), value).to(dt);
  return add(x, mul(t1, t2), value);
}

Tensor addcdiv(const Tensor& x, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  ops::impl_of(x, "addcdiv");
  OX_CHECK(is_floating(ops::impl_of(t1, "addcdiv").dtype()) &&
               is_floating(ops::impl_of(t2, "addcdiv").dtype()),
           DType, "addcdiv", "integer division is not supported; got ", t1.dtype(), " and ",
           t2.dtype());
  const DType dt = composite_dtype({x, t1, t2});
  if (half_type(dt)) return addcdiv(x.to(kF32), t1.to(kF32), t2.to(kF32), value).to(dt);
  return add(x, div(t1, t2), value);
}

#define OX_DEFINE_BINARY_OPERATOR(sym, fn)                                   \
  Tensor operator sym(const Tensor& a, const Tensor& b) { return fn(a, b); } \
  Tensor operator sym(const Tensor& a, const Scalar& b) { return fn(a, b); } \
  Tensor operator sym(const Scalar& a, const Tensor& b) { return fn(a, b); }
OX_DEFINE_BINARY_OPERATOR(+, add)
OX_DEFINE_BINARY_OPERATOR(-, sub)
OX_DEFINE_BINARY_OPERATOR(*, mul)
OX_DEFINE_BINARY_OPERATOR(/, div)
OX_DEFINE_BINARY_OPERATOR(%, remainder)
OX_DEFINE_BINARY_OPERATOR(==, eq)
OX_DEFINE_BINARY_OPERATOR(!=, ne)
OX_DEFINE_BINARY_OPERATOR(<, lt)
OX_DEFINE_BINARY_OPERATOR(<=, le)
OX_DEFINE_BINARY_OPERATOR(>, gt)
OX_DEFINE_BINARY_OPERATOR(>=, ge)
OX_DEFINE_BINARY_OPERATOR(&, bitwise_and)
OX_DEFINE_BINARY_OPERATOR(|, bitwise_or)
OX_DEFINE_BINARY_OPERATOR(^, bitwise_xor)
#undef OX_DEFINE_BINARY_OPERATOR

Tensor& operator+=(Tensor& a, const TensorOrScalar& b) {
  return binary_inplace(a, b, BinaryOp::Add, "add_");
}
Tensor& operator-=(Tensor& a, const TensorOrScalar& b) {
  return binary_inplace(a, b, BinaryOp::Sub, "sub_");
}
Tensor& operator*=(Tensor& a, const TensorOrScalar& b) {
  return binary_inplace(a, b, BinaryOp::Mul, "mul_");
}
Tensor& operator/=(Tensor& a, const TensorOrScalar& b) {
  return binary_inplace(a, b, BinaryOp::Div, "div_");
}

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  return binary_inplace(*this, o, BinaryOp::Add, "add_", alpha);
}
Tensor& Tensor::add_(const Scalar& o) { return binary_inplace(*this, o, BinaryOp::Add, "add_"); }
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) {
  return binary_inplace(*this, o, BinaryOp::Sub, "sub_", alpha);
}
Tensor& Tensor::sub_(const Scalar& o) { return binary_inplace(*this, o, BinaryOp::Sub, "sub_"); }
Tensor& Tensor::mul_(const Tensor& o) { return binary_inplace(*this, o, BinaryOp::Mul, "mul_"); }
Tensor& Tensor::mul_(const Scalar& o) { return binary_inplace(*this, o, BinaryOp::Mul, "mul_"); }
Tensor& Tensor::div_(const Tensor& o) { return binary_inplace(*this, o, BinaryOp::Div, "div_"); }
Tensor& Tensor::div_(const Scalar& o) { return binary_inplace(*this, o, BinaryOp::Div, "div_"); }
Tensor Tensor::pow(const Tensor& e) const { return ox::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return ox::pow(*this, e); }
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& value) const {
  return ox::masked_fill(*this, mask, value);
}
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& value) {
  return ops::assign_result(*this, ox::masked_fill(ops::inplace_source(*this), mask, value),
                            "masked_fill_");
}

Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  const char* op = "isclose";
  OX_CHECK(ops::impl_of(a, op).dtype() == ops::impl_of(b, op).dtype(), DType, op,
           "operands must have one dtype, got ", a.dtype(), " and ", b.dtype());
  OX_CHECK(rtol >= 0 && atol >= 0, Value, op, "rtol ", rtol, " and atol ", atol,
           " must be non-negative");
  const Tensor exact = eq(a, b);
  if (!is_floating(a.dtype())) {
    if (rtol == 0 && atol == 0) return exact;
    const Tensor x = a.to(kF64), y = b.to(kF64);  // no integer overflow in a - b
    return logical_or(exact, le(abs(sub(x, y)), add(mul(abs(y), rtol), atol)));
  }
  const Tensor finite = logical_and(isfinite(a), isfinite(b));
  const Tensor near = le(abs(sub(a, b)), add(mul(abs(b), rtol), atol));
  Tensor close = logical_or(exact, logical_and(finite, near));
  if (equal_nan) close = logical_or(close, logical_and(isnan(a), isnan(b)));
  return close;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return isclose(a, b, rtol, atol, equal_nan).all().item<bool>();
}

bool equal(const Tensor& a, const Tensor& b) {
  ops::impl_of(a, "equal");
  ops::impl_of(b, "equal");
  return a.shape() == b.shape() && eq(a, b).all().item<bool>();
}

}  // namespace ox
