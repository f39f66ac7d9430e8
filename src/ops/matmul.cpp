// Matrix products: matmul (NumPy semantics), mm, bmm, mv, dot, outer, addmm, baddbmm and
// tensordot, all through the backend's one batched matmul primitive.

#include "ops/matmul.h"
#include "amp/autocast_policy.h"
#include "autograd/record.h"

#include <algorithm>

namespace ox {

namespace ops {

DType matmul_dtype(const char* op, std::initializer_list<const Tensor*> operands) {
  ResultType rt;
  for (const Tensor* t : operands) {
    const TensorImpl& ti = impl_of(*t, op);
    rt.tensor(ti.dtype(), ti.layout().shape.empty());
  }
  const DType dt = rt.get();
  OX_CHECK(dt != kBool, DType, op, "is not defined for bool tensors");
  return dt;
}

namespace {

Shape tail_dropped(const Shape& s, size_t n) { return Shape(s.begin(), s.end() - n); }

}  // namespace

Tensor batched_product(const Tensor& a, const Tensor& b, const char* op, const Tensor& input,
                       const Scalar& beta, const Scalar& alpha) {
  if (autograd::needs_grad({&a, &b, &input})) {
    Tensor out =
        autograd::without_grad([&] { return batched_product(a, b, op, input, beta, alpha); });
    if (is_floating(out.dtype()))
      // d(a @ b) = g @ b^T for a and a^T @ g for b (batch dims broadcast back by the node).
      // Only the gradients an operand takes are computed (the first layer's input has none),
      // and a scale of one is no pass at all.
      autograd::record(
          op, {a, b, input}, {out}, {a, b},
          [alpha, beta, want_a = a.requires_grad(), want_b = b.requires_grad(),
           want_input = input.defined() && input.requires_grad()](const std::vector<Tensor>& g,
                                                                  const std::vector<Tensor>& s) {
            const auto scaled = [](const Tensor& t, const Scalar& by) {
              return by.to_double() == 1.0 ? t : ox::mul(t, by);
            };
            return std::vector<Tensor>{
                want_a ? scaled(ox::matmul(g[0], s[1].transpose(-1, -2)), alpha) : Tensor(),
                want_b ? scaled(ox::matmul(s[0].transpose(-1, -2), g[0]), alpha) : Tensor(),
                want_input ? scaled(g[0], beta) : Tensor()};
          });
    return out;
  }
  const Device device = a.device();
  const DType dt = a.dtype();
  OX_ASSERT(b.dtype() == dt && a.dim() >= 2 && b.dim() >= 2, "batched_product operands");
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  Shape batch = broadcast_shapes(tail_dropped(a.shape(), 2), tail_dropped(b.shape(), 2), op);
  Shape out_shape = batch, a_shape = batch, b_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  a_shape.push_back(M);
  a_shape.push_back(K);
  b_shape.push_back(K);
  b_shape.push_back(N);
  const bool with_input = input.defined() && beta.to_double() != 0;
  if (input.defined())
    OX_CHECK(broadcast_shapes(input.shape(), out_shape, op) == out_shape, Shape, op,
             "input of shape ", input.shape(), " does not broadcast to the product's shape ",
             out_shape);
  Tensor out = make_empty(out_shape, dt, device, op);
  if (out.numel() == 0) return out;
  Backend& backend = backend_for(device, op);
  if (with_input) backend.copy(out.impl()->array(), broadcast_array(input, out_shape), false);
  backend.matmul(out.impl()->array(), broadcast_array(a, a_shape), broadcast_array(b, b_shape),
                 alpha, with_input ? beta : Scalar(0));
  return out;
}

}  // namespace ops

namespace {

// Defined operands on one device, promoted to one dtype (not bool).
struct Operands {
  Tensor a, b;
  DType dtype;
};
Operands prepare(const Tensor& a, const Tensor& b, const char* op) {
  ops::impl_of(a, op);
  ops::impl_of(b, op);
  ops::common_device(op, {&a, &b});
  const DType dt = ops::matmul_dtype(op, {&a, &b});
  return {a.to(dt), b.to(dt), dt};
}

void check_inner(const Tensor& a, const Tensor& b, int64_t ka, int64_t kb, const char* op) {
  OX_CHECK(ka == kb, Shape, op, "shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied");
}

void check_scalars(DType dt, const Scalar& beta, const Scalar& alpha, const char* op) {
  OX_CHECK(is_floating(dt) || (!beta.is_floating() && !alpha.is_floating()), DType, op,
           "alpha and beta must not be floating point numbers for ", dt, " operands");
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, a}) return matmul(cast(a), cast(b));
  const char* op = "matmul";
  Operands o = prepare(a, b, op);
  OX_CHECK(a.dim() >= 1 && b.dim() >= 1, Shape, op, "needs operands of at least 1 dimension, got ",
           "shapes ", a.shape(), " and ", b.shape());
  // A vector gains a dim (rows for the left operand, columns for the right) and loses it after.
  const bool va = a.dim() == 1, vb = b.dim() == 1;
  const Tensor x = va ? o.a.unsqueeze(0) : o.a, y = vb ? o.b.unsqueeze(1) : o.b;
  check_inner(a, b, x.size(-1), y.size(-2), op);
  const Shape xb = Shape(x.shape().begin(), x.shape().end() - 2);
  const Shape yb = Shape(y.shape().begin(), y.shape().end() - 2);
  const size_t nb = std::max(xb.size(), yb.size());
  for (size_t i = 0; i < nb; ++i) {  // batch dims, aligned from the right
    const int64_t p = i < xb.size() ? xb[xb.size() - 1 - i] : 1;
    const int64_t q = i < yb.size() ? yb[yb.size() - 1 - i] : 1;
    OX_CHECK(p == q || p == 1 || q == 1, Shape, op, "batch dimensions of shapes ", a.shape(),
             " and ", b.shape(), " do not broadcast");
  }
  Tensor out = ops::batched_product(x, y, op);
  if (va && vb) return out.reshape({});
  if (va) return out.squeeze(-2);
  if (vb) return out.squeeze(-1);
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, a}) return mm(cast(a), cast(b));
  Operands o = prepare(a, b, "mm");
  OX_CHECK(a.dim() == 2 && b.dim() == 2, Shape, "mm", "expects 2-D tensors, got shapes ", a.shape(),
           " and ", b.shape());
  check_inner(a, b, a.size(1), b.size(0), "mm");
  return ops::batched_product(o.a, o.b, "mm");
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, a}) return bmm(cast(a), cast(b));
  Operands o = prepare(a, b, "bmm");
  OX_CHECK(a.dim() == 3 && b.dim() == 3, Shape, "bmm", "expects 3-D tensors, got shapes ",
           a.shape(), " and ", b.shape());
  OX_CHECK(a.size(0) == b.size(0), Shape, "bmm", "batch sizes of shapes ", a.shape(), " and ",
           b.shape(), " differ");
  check_inner(a, b, a.size(2), b.size(1), "bmm");
  return ops::batched_product(o.a, o.b, "bmm");
}

Tensor mv(const Tensor& a, const Tensor& v) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, a}) return mv(cast(a), cast(v));
  Operands o = prepare(a, v, "mv");
  OX_CHECK(a.dim() == 2 && v.dim() == 1, Shape, "mv",
           "expects a 2-D matrix and a 1-D vector, got shapes ", a.shape(), " and ", v.shape());
  check_inner(a, v, a.size(1), v.size(0), "mv");
  return ops::batched_product(o.a, o.b.unsqueeze(1), "mv").squeeze(1);
}

Tensor dot(const Tensor& a, const Tensor& b) {
  Operands o = prepare(a, b, "dot");
  OX_CHECK(a.dim() == 1 && b.dim() == 1, Shape, "dot", "expects 1-D tensors, got shapes ",
           a.shape(), " and ", b.shape());
  OX_CHECK(a.size(0) == b.size(0), Shape, "dot", "shapes ", a.shape(), " and ", b.shape(),
           " have different lengths");
  return ops::batched_product(o.a.unsqueeze(0), o.b.unsqueeze(1), "dot").reshape({});
}

Tensor outer(const Tensor& a, const Tensor& b) {
  ops::impl_of(a, "outer");
  ops::impl_of(b, "outer");
  ops::common_device("outer", {&a, &b});
  OX_CHECK(a.dim() == 1 && b.dim() == 1, Shape, "outer", "expects 1-D tensors, got shapes ",
           a.shape(), " and ", b.shape());
  return mul(a.unsqueeze(1), b.unsqueeze(0));  // exact products; bool is logical and, as PyTorch
}

Tensor addmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
             const Scalar& alpha) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, a})
    return addmm(cast(input), cast(a), cast(b), beta, alpha);
  const char* op = "addmm";
  ops::impl_of(input, op);
  Operands o = prepare(a, b, op);
  ops::common_device(op, {&input, &a});
  const DType dt = ops::matmul_dtype(op, {&input, &a, &b});
  check_scalars(dt, beta, alpha, op);
  OX_CHECK(a.dim() == 2 && b.dim() == 2, Shape, op, "expects 2-D matrices, got shapes ", a.shape(),
           " and ", b.shape());
  check_inner(a, b, a.size(1), b.size(0), op);
  return ops::batched_product(o.a.to(dt), o.b.to(dt), op, input, beta, alpha);
}

Tensor baddbmm(const Tensor& input, const Tensor& a, const Tensor& b, const Scalar& beta,
               const Scalar& alpha) {
  if (amp::OpCast cast{amp::CastPolicy::LowerPrecision, a})
    return baddbmm(cast(input), cast(a), cast(b), beta, alpha);
  const char* op = "baddbmm";
  ops::impl_of(input, op);
  Operands o = prepare(a, b, op);
  ops::common_device(op, {&input, &a});
  const DType dt = ops::matmul_dtype(op, {&input, &a, &b});
  check_scalars(dt, beta, alpha, op);
  OX_CHECK(a.dim() == 3 && b.dim() == 3, Shape, op, "expects 3-D tensors, got shapes ", a.shape(),
           " and ", b.shape());
  OX_CHECK(a.size(0) == b.size(0), Shape, op, "batch sizes of shapes ", a.shape(), " and ",
           b.shape(), " differ");
  check_inner(a, b, a.size(2), b.size(1), op);
  return ops::batched_product(o.a.to(dt), o.b.to(dt), op, input, beta, alpha);
}

Tensor tensordot(const Tensor& a, const Tensor& b, const Dims& dims_a, const Dims& dims_b) {
  const char* op = "tensordot";
  Operands o = prepare(a, b, op);
  OX_CHECK(dims_a.size() == dims_b.size(), Value, op, "contracts ", dims_a.size(), " dims of a (",
           dims_a, ") with ", dims_b.size(), " dims of b (", dims_b, ")");
  std::vector<bool> used_a(size_t(a.dim()), false), used_b(size_t(b.dim()), false);
  Dims perm_a, perm_b, free_shape;
  int64_t contracted = 1;
  for (size_t i = 0; i < dims_a.size(); ++i) {
    const int64_t da = wrap_dim(dims_a[i], a.dim(), op), db = wrap_dim(dims_b[i], b.dim(), op);
    OX_CHECK(!used_a[size_t(da)] && !used_b[size_t(db)], Value, op,
             "a dim is contracted twice: dims ", dims_a, " and ", dims_b);
    used_a[size_t(da)] = used_b[size_t(db)] = true;
    OX_CHECK(a.size(da) == b.size(db), Shape, op, "dim ", da, " of shape ", a.shape(), " and dim ",
             db, " of shape ", b.shape(), " differ in size");
    contracted *= a.size(da);
  }
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < a.dim(); ++d)
    if (!used_a[size_t(d)]) {
      perm_a.push_back(d);
      free_shape.push_back(a.size(d));
      rows *= a.size(d);
    }
  for (size_t i = 0; i < dims_a.size(); ++i) {
    perm_a.push_back(wrap_dim(dims_a[i], a.dim(), op));
    perm_b.push_back(wrap_dim(dims_b[i], b.dim(), op));
  }
  for (int64_t d = 0; d < b.dim(); ++d)
    if (!used_b[size_t(d)]) {
      perm_b.push_back(d);
      free_shape.push_back(b.size(d));
      cols *= b.size(d);
    }
  const Tensor x = o.a.permute(perm_a).reshape({rows, contracted});
  const Tensor y = o.b.permute(perm_b).reshape({contracted, cols});
  return ops::batched_product(x, y, op).reshape(free_shape);
}

Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  ops::impl_of(a, "tensordot");
  ops::impl_of(b, "tensordot");
  OX_CHECK(dims >= 0 && dims <= std::min(a.dim(), b.dim()), Value, "tensordot", "cannot contract ",
           dims, " dims of shapes ", a.shape(), " and ", b.shape());
  Dims da, db;
  for (int64_t i = 0; i < dims; ++i) {
    da.push_back(a.dim() - dims + i);
    db.push_back(i);
  }
  return tensordot(a, b, da, db);
}

Tensor Tensor::matmul(const Tensor& other) const { return ox::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return ox::mm(*this, other); }

}  // namespace ox
