// Indexing along one dim: gather, index_select, take, embedding, scatter and its reductions,
// index_add, one_hot, nonzero. Each restrides its operands (the indexed tensor gets stride 0
// along the indexed dim, the index stride 0 where it broadcasts) and calls one gather or
// scatter primitive; no operand is copied. scatter_reduce's "mean" and include_self combine
// several calls, after every check has passed.

#include <cmath>
#include <limits>

#include "autograd/record.h"
#include "ops/index_util.h"

namespace ox {

namespace ops {

void check_index_dtype(const Tensor& index, const char* op, const char* what) {
  const DType dt = impl_of(index, op).dtype();
  OX_CHECK(dt == kI64 || dt == kI32, DType, op, what, " tensors must be i64 or i32, got ", dt);
}

StridedArray restrided(const Tensor& t, const Shape& shape, const Strides& strides) {
  StridedArray a = t.impl()->array();
  a.shape = shape;
  a.strides = strides;
  return a;
}

void check_writable(const Tensor& dest, const char* op) {
  OX_CHECK(!has_internal_overlap(impl_of(dest, op).layout()), Value, op, "destination of shape ",
           dest.shape(), " has elements sharing memory (an expanded tensor); clone() it first");
}

namespace {

std::vector<IndexOperand> operands(const std::vector<IndexArg>& args) {
  std::vector<IndexOperand> out;
  out.reserve(args.size());
  for (const IndexArg& a : args) out.push_back({a.array, a.size, a.stride, a.wrap});
  return out;
}

[[noreturn]] void index_error(const char* op, const IndexCheck& c,
                              const std::vector<IndexArg>& args) {
  const IndexArg& a = args[static_cast<size_t>(c.operand)];
  if (a.dim < 0)
    OX_FAIL(Index, op, "index ", c.value, " is out of bounds for a tensor of ", c.size,
            " elements");
  OX_FAIL(Index, op, "index ", c.value, " is out of bounds for dimension ", a.dim, " with size ",
          c.size);
}

}  // namespace

void gather_into(const char* op, const StridedArray& dst, const StridedArray& src,
                 const std::vector<IndexArg>& args) {
  const IndexCheck c = backend_for(dst.device, op).gather(dst, src, operands(args));
  if (!c.ok) index_error(op, c, args);
}

void scatter_into(const char* op, const Tensor& dest, const StridedArray& dst,
                  const StridedArray& src, const std::vector<IndexArg>& args,
                  ScatterReduce reduce) {
  OX_CHECK(!autograd::needs_grad({&dest}), Value, op,
           "writes in place into a tensor that requires grad, which autograd does not record "
           "yet; compute under ox::NoGradGuard or use the out-of-place op");
  const IndexCheck c = backend_for(dst.device, op).scatter(dst, src, operands(args), reduce);
  if (!c.ok) index_error(op, c, args);
  dest.impl()->storage()->bump_version();
}

}  // namespace ops

namespace {

using ops::IndexArg;

// t's strides with dim d's replaced by 0: t as the base of a gather or scatter along d.
Strides strides_without(const Tensor& t, int64_t d) {
  Strides s = t.strides();
  s[static_cast<size_t>(d)] = 0;
  return s;
}

// A 1-d index laid along dim d of an iteration of `shape` (stride 0 elsewhere).
StridedArray index_along(const Tensor& index1d, const Shape& shape, int64_t d) {
  Strides s(shape.size(), 0);
  s[static_cast<size_t>(d)] = index1d.stride(0);
  return ops::restrided(index1d, shape, s);
}

StridedArray dense(const Tensor& out, const Shape& shape) {
  return ops::restrided(out, shape, contiguous_strides(shape));
}

Tensor value_tensor(const Scalar& v, DType dt, Device device, const char* op) {
  OX_CHECK(scalar_fits(v, dt), Value, op, "value ", v, " cannot be converted to ", dt,
           " without overflow");
  return ops::scalar_operand(v, dt, device);
}

// ---- Scatter -------------------------------------------------------------------------------

// Checks a scatter's operands (src null: the scalar form); returns dim made non-negative.
int64_t check_scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor* src,
                      const char* op) {
  ops::impl_of(x, op);
  ops::check_writable(x, op);
  ops::check_index_dtype(index, op);
  if (src) {
    ops::impl_of(*src, op);
    ops::common_device(op, {&x, &index, src});
    OX_CHECK(src->dtype() == x.dtype(), DType, op, "src of dtype ", src->dtype(),
             " must have the input's dtype ", x.dtype());
  } else {
    ops::common_device(op, {&x, &index});
  }
  const Tensor xs = ops::at_least_1d(x), is = ops::at_least_1d(index);
  OX_CHECK(is.dim() == xs.dim(), Shape, op, "index of shape ", index.shape(),
           " needs as many dimensions as the input of shape ", x.shape());
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  const Tensor ss = src ? ops::at_least_1d(*src) : Tensor();
  if (src)
    OX_CHECK(ss.dim() == is.dim(), Shape, op, "src of shape ", src->shape(),
             " needs as many dimensions as the index of shape ", index.shape());
  for (int64_t i = 0; i < xs.dim(); ++i) {
    OX_CHECK(i == d || is.size(i) <= xs.size(i), Shape, op, "index of shape ", index.shape(),
             " is larger than the input of shape ", x.shape(), " in dimension ", i);
    if (src)
      OX_CHECK(is.size(i) <= ss.size(i), Shape, op, "index of shape ", index.shape(),
               " is larger than src of shape ", src->shape(), " in dimension ", i);
  }
  return d;
}

// x[..., index[i], ...] (along d) = reduce(that, src[i]), after check_scatter. A 0-d src
// given as a value applies to every index.
void scatter_checked(const Tensor& x, int64_t d, const Tensor& index, const Tensor& src,
                     bool src_is_value, ScatterReduce reduce, const char* op) {
  const Tensor xs = ops::at_least_1d(x), is = ops::at_least_1d(ops::unaliased(index, x));
  if (is.numel() == 0) return;
  const Shape& shape = is.shape();
  const Tensor s = ops::at_least_1d(ops::unaliased(src, x));
  const StridedArray sa =
      ops::restrided(s, shape, src_is_value ? Strides(shape.size(), 0) : s.strides());
  ops::scatter_into(op, x, ops::restrided(xs, shape, strides_without(xs, d)), sa,
                    {{is, is.impl()->array(), d, xs.size(d), xs.stride(d), false}}, reduce);
}

// What a reduction starts from, so that include_self=false leaves x's own values out.
Scalar reduce_identity(ScatterReduce r, DType dt) {
  if (r == ScatterReduce::Sum || r == ScatterReduce::Assign) return 0;
  if (r == ScatterReduce::Prod) return 1;
  const bool high = r == ScatterReduce::Amin;
  if (is_floating(dt)) return high ? INFINITY : -INFINITY;
  if (dt == kBool) return high;
  const int bits = static_cast<int>(dtype_size(dt)) * 8;
  if (!is_signed(dt)) return high ? (int64_t{1} << bits) - 1 : 0;
  const int64_t top =
      bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return high ? top : -top - 1;
}

Tensor copy_for(const Tensor& x, const char* op) {
  ops::impl_of(x, op);
  return x.clone();
}

}  // namespace

// ---- Gathers -------------------------------------------------------------------------------

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "gather";
  ops::impl_of(x, op);
  ops::check_index_dtype(index, op);
  const Device device = ops::common_device(op, {&x, &index});
  const Tensor xs = ops::at_least_1d(x), is = ops::at_least_1d(index);
  OX_CHECK(xs.dim() == is.dim(), Shape, op, "index of shape ", index.shape(),
           " needs as many dimensions as the input of shape ", x.shape());
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  for (int64_t i = 0; i < xs.dim(); ++i)
    OX_CHECK(i == d || is.size(i) <= xs.size(i), Shape, op, "index of shape ", index.shape(),
             " is larger than the input of shape ", x.shape(), " in dimension ", i);
  Tensor out = make_empty(index.shape(), x.dtype(), device, op);
  if (out.numel() == 0) return out;
  const Shape& shape = is.shape();
  ops::gather_into(op, dense(out, shape), ops::restrided(xs, shape, strides_without(xs, d)),
                   {{is, is.impl()->array(), d, xs.size(d), xs.stride(d), false}});
  return out;
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  ops::impl_of(x, op);
  ops::check_index_dtype(index, op);
  const Device device = ops::common_device(op, {&x, &index});
  OX_CHECK(index.dim() <= 1, Shape, op, "index must be 0-d or 1-d, got shape ", index.shape());
  const Tensor xs = ops::at_least_1d(x), is = index.reshape({-1});
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  if (x.dim() == 0)
    OX_CHECK(is.numel() == 1, Index, op, "a 0-d input takes exactly one index, got ", is.numel());
  Shape shape = xs.shape();
  shape[static_cast<size_t>(d)] = is.numel();
  Tensor out = make_empty(x.dim() == 0 ? Shape{} : shape, x.dtype(), device, op);
  if (out.numel() == 0) return out;
  ops::gather_into(op, dense(out, shape), ops::restrided(xs, shape, strides_without(xs, d)),
                   {{is, index_along(is, shape, d), d, xs.size(d), xs.stride(d), false}});
  return out;
}

Tensor take(const Tensor& x, const Tensor& index) {
  const char* op = "take";
  ops::impl_of(x, op);
  ops::check_index_dtype(index, op);
  const Device device = ops::common_device(op, {&x, &index});
  Tensor out = make_empty(index.shape(), x.dtype(), device, op);
  if (out.numel() == 0) return out;
  const Tensor flat = x.reshape({-1});  // a view unless x's strides cannot be flattened
  const Tensor is = ops::at_least_1d(index);
  const Shape& shape = is.shape();
  ops::gather_into(op, dense(out, shape), ops::restrided(flat, shape, Strides(shape.size(), 0)),
                   {{is, is.impl()->array(), -1, flat.numel(), flat.stride(0), true}});
  return out;
}

Tensor embedding(const Tensor& weight, const Tensor& indices, std::optional<int64_t> padding_idx) {
  const char* op = "embedding";
  ops::impl_of(weight, op);
  ops::check_index_dtype(indices, op, "indices");
  const Device device = ops::common_device(op, {&weight, &indices});
  OX_CHECK(weight.dim() == 2, Shape, op,
           "weight must be 2-d [num_embeddings, embedding_dim], got shape ", weight.shape());
  const int64_t num = weight.size(0);
  if (padding_idx)
    OX_CHECK(*padding_idx >= -num && *padding_idx < num, Index, op, "padding_idx ", *padding_idx,
             " is out of bounds for ", num, " embeddings");
  Shape shape = indices.shape();
  shape.push_back(weight.size(1));
  Tensor out = make_empty(shape, weight.dtype(), device, op);
  if (out.numel() == 0) return out;
  const size_t last = shape.size() - 1;
  Strides row(shape.size(), 0);
  row[last] = weight.stride(1);
  Strides at = indices.strides();
  at.push_back(0);
  ops::gather_into(
      op, dense(out, shape), ops::restrided(weight, shape, row),
      {{indices, ops::restrided(indices, shape, at), 0, num, weight.stride(0), false}});
  return out;
}

Tensor nonzero(const Tensor& x) {
  const char* op = "nonzero";
  const TensorImpl& xi = ops::impl_of(x, op);
  const int64_t n = count_nonzero(x).item<int64_t>();
  Tensor out = make_empty({n, xi.layout().dim()}, kI64, xi.device(), op);
  if (out.numel() > 0) backend_for(xi.device(), op).nonzero(out.impl()->array(), xi.array());
  return out;
}

Tensor one_hot(const Tensor& x, int64_t num_classes) {
  const char* op = "one_hot";
  ops::check_index_dtype(x, op, "class");
  OX_CHECK(num_classes >= -1, Value, op, "num_classes must be -1 or non-negative, got ",
           num_classes);
  if (num_classes == -1) {
    OX_CHECK(x.numel() > 0, Value, op, "cannot infer num_classes from an empty tensor");
    // A negative largest class leaves 0 classes: the scatter's check then names the value.
    num_classes = std::max<int64_t>(max(x).item<int64_t>(), -1) + 1;
  }
  Shape shape = x.shape();
  shape.push_back(num_classes);
  Tensor out = zeros(shape, {.dtype = kI64, .device = x.device()});
  if (x.numel() == 0) return out;
  Shape it = x.shape();
  it.push_back(1);
  const size_t last = it.size() - 1;
  Strides dst = out.strides(), at = x.strides();
  dst[last] = 0;
  at.push_back(0);
  const Tensor one = ops::scalar_operand(1, kI64, x.device());
  ops::scatter_into(
      op, out, ops::restrided(out, it, dst), ops::restrided(one, it, Strides(it.size(), 0)),
      {{x, ops::restrided(x, it, at), static_cast<int64_t>(last), num_classes, 1, false}},
      ScatterReduce::Assign);
  return out;
}

// ---- Scatters ------------------------------------------------------------------------------

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = check_scatter(x, dim, index, &src, "scatter");
  scatter_checked(x, d, index, src, false, ScatterReduce::Assign, "scatter");
  return x;
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  const int64_t d = check_scatter(x, dim, index, nullptr, "scatter");
  scatter_checked(x, d, index, value_tensor(value, x.dtype(), x.device(), "scatter"), true,
                  ScatterReduce::Assign, "scatter");
  return x;
}

Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = check_scatter(x, dim, index, &src, "scatter_add");
  scatter_checked(x, d, index, src, false, ScatterReduce::Sum, "scatter_add");
  return x;
}

Tensor& scatter_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self) {
  const char* op = "scatter_reduce";
  const int64_t d = check_scatter(x, dim, index, &src, op);
  const bool mean = reduce == "mean";
  ScatterReduce r = ScatterReduce::Sum;
  if (reduce == "prod") {
    r = ScatterReduce::Prod;
  } else if (reduce == "amax") {
    r = ScatterReduce::Amax;
  } else if (reduce == "amin") {
    r = ScatterReduce::Amin;
  } else {
    OX_CHECK(reduce == "sum" || mean, Value, op,
             "reduce must be \"sum\", \"prod\", \"amax\", \"amin\" or \"mean\", got \"",
             std::string(reduce), "\"");
  }
  OX_CHECK(!mean || x.dtype() != kBool, DType, op, "\"mean\" is not defined for bool tensors");
  // The first scatter checks every index, so a bad one leaves x untouched.
  if (!include_self)
    scatter_checked(x, d, index,
                    value_tensor(reduce_identity(r, x.dtype()), x.dtype(), x.device(), op), true,
                    ScatterReduce::Assign, op);
  scatter_checked(x, d, index, src, false, r, op);
  if (!mean) return x;
  // Divide by how many values met at each element (x's own included), as PyTorch.
  Tensor count = zeros(x.shape(), {.dtype = x.dtype(), .device = x.device()});
  scatter_checked(count, d, index, ones(index.shape(), {.dtype = x.dtype(), .device = x.device()}),
                  false, ScatterReduce::Sum, op);
  count = include_self ? add(count, 1) : masked_fill(count, eq(count, 0), 1);
  x.copy_(is_floating(x.dtype()) ? div(x, count) : div(x, count, "floor"));
  return x;
}

Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha) {
  const char* op = "index_add";
  ops::impl_of(x, op);
  ops::check_writable(x, op);
  ops::check_index_dtype(index, op);
  ops::impl_of(source, op);
  ops::common_device(op, {&x, &index, &source});
  OX_CHECK(index.dim() <= 1, Shape, op, "index must be 0-d or 1-d, got shape ", index.shape());
  OX_CHECK(source.dtype() == x.dtype(), DType, op, "source of dtype ", source.dtype(),
           " must have the input's dtype ", x.dtype());
  OX_CHECK(is_floating(x.dtype()) || !alpha.is_floating(), DType, op,
           "alpha must not be a floating point number for ", x.dtype(), " tensors");
  const Tensor xs = ops::at_least_1d(x), is = ops::unaliased(index, x).reshape({-1});
  Tensor ss = ops::at_least_1d(source);
  OX_CHECK(ss.dim() == xs.dim(), Shape, op, "source of shape ", source.shape(),
           " needs as many dimensions as the input of shape ", x.shape());
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  for (int64_t i = 0; i < xs.dim(); ++i)
    OX_CHECK(ss.size(i) == (i == d ? is.numel() : xs.size(i)), Shape, op, "source of shape ",
             source.shape(), " does not fit the input of shape ", x.shape(), " with ", is.numel(),
             " indices along dimension ", d);
  if (ss.numel() == 0) return x;
  if (alpha.to_double() != 1.0) ss = mul(ss, alpha).to(x.dtype());
  ss = ops::unaliased(ss, x);
  const Shape& shape = ss.shape();
  ops::scatter_into(op, x, ops::restrided(xs, shape, strides_without(xs, d)), ss.impl()->array(),
                    {{is, index_along(is, shape, d), d, xs.size(d), xs.stride(d), false}},
                    ScatterReduce::Sum);
  return x;
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = copy_for(x, "scatter");
  return scatter_(out, dim, index, src);
}
Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  Tensor out = copy_for(x, "scatter");
  return scatter_(out, dim, index, value);
}
Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  Tensor out = copy_for(x, "scatter_add");
  return scatter_add_(out, dim, index, src);
}
Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self) {
  Tensor out = copy_for(x, "scatter_reduce");
  return scatter_reduce_(out, dim, index, src, reduce, include_self);
}
Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  Tensor out = copy_for(x, "index_add");
  return index_add_(out, dim, index, source, alpha);
}

}  // namespace ox
