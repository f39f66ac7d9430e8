// Indexing along one dim: gather, index_select, take, embedding, scatter and its reductions,
// index_add, one_hot, nonzero. Each restrides its operands (the indexed tensor gets stride 0
// along the indexed dim, the index stride 0 where it broadcasts) and calls one gather or
// scatter primitive; no operand is copied. scatter_reduce's "mean" and include_self combine
// several calls, after every check has passed.
//
// Autograd: each out-of-place op computes without recording and records a vjp in public ops
// (gathers scatter-add back; scatters gather); the in-place forms run their out-of-place form on
// a copy and write it back, so x's history becomes the result's.

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

// The primitive's operands, each with the message its out-of-range values get.
std::vector<IndexOperand> operands(const char* op, const std::vector<IndexArg>& args) {
  std::vector<IndexOperand> out;
  out.reserve(args.size());
  for (const IndexArg& a : args) {
    const CheckSite site =
        a.site >= 0 ? a.site
        : a.dim < 0
            ? check_site(op, "index {value} is out of bounds for a tensor of {bound} elements")
            : check_site(op, "index {value} is out of bounds for dimension " +
                                 std::to_string(a.dim) + " with size {bound}");
    out.push_back({a.array, a.size, a.stride, a.wrap, site});
  }
  return out;
}

}  // namespace

void gather_into(const char* op, const StridedArray& dst, const StridedArray& src,
                 const std::vector<IndexArg>& args) {
  backend_for(dst.device, op).gather(dst, src, operands(op, args));
}

void scatter_into(const char* op, const Tensor& dest, const StridedArray& dst,
                  const StridedArray& src, const std::vector<IndexArg>& args,
                  ScatterReduce reduce) {
  // The public in-place ops record out of place and write back (inplace_recorded); a raw write
  // here into a tensor autograd tracks would lose its gradient.
  OX_CHECK(!autograd::needs_grad({&dest}), Internal, op,
           "writes in place into a tensor that requires grad without recording it");
  backend_for(dst.device, op).scatter(dst, src, operands(op, args), reduce);
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

// ---- Autograd helpers ----------------------------------------------------------------------

TensorOptions options_of(const Tensor& t) { return {.dtype = t.dtype(), .device = t.device()}; }

// A gradient for src (of `shape`) from one for its leading region of the index's shape: zeros
// where src is larger than the index (a scatter reads only that region).
Tensor grown_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (shape.empty()) return g.reshape({});
  const Tensor g1 = ops::at_least_1d(g);
  Dims pads;
  for (int64_t i = g1.dim() - 1; i >= 0; --i) {
    pads.push_back(0);
    pads.push_back(shape[static_cast<size_t>(i)] - g1.size(i));
  }
  return pad(g1, pads);
}

// The leading region of src that a scatter with an index of `shape` reads (index's shape).
Tensor leading(const Tensor& src, const Shape& shape) {
  Tensor s = ops::at_least_1d(src);
  const Shape want = shape.empty() ? Shape{1} : shape;
  for (int64_t i = 0; i < s.dim(); ++i)
    if (s.size(i) != want[static_cast<size_t>(i)]) s = s.narrow(i, 0, want[static_cast<size_t>(i)]);
  return s.reshape(shape);
}

// An in-place op under autograd: its out-of-place form on a copy of x (which records the graph),
// written back into x (whose history becomes the result's).
template <class F>
Tensor& inplace_recorded(Tensor& x, const char* op, F&& out_of_place) {
  ops::impl_of(x, op);
  ops::check_writable(x, op);
  autograd::check_inplace(x, op);
  return ops::assign_result(x, out_of_place(x.clone()), op);
}

}  // namespace

namespace ops {

Tensor gather_checked(const Tensor& x, int64_t dim, const Tensor& index, CheckSite site) {
  const char* op = "gather";
  if (autograd::needs_grad({&x})) {
    Tensor out = autograd::without_grad([&] { return gather_checked(x, dim, index, site); });
    autograd::record(
        "gather", {x}, {out}, {index},
        [dim, shape = x.shape()](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          return std::vector<Tensor>{scatter_add(zeros(shape, options_of(g[0])), dim, s[0], g[0])};
        });
    return out;
  }
  impl_of(x, op);
  check_index_dtype(index, op);
  const Device device = common_device(op, {&x, &index});
  const Tensor xs = at_least_1d(x), is = at_least_1d(index);
  OX_CHECK(xs.dim() == is.dim(), Shape, op, "index of shape ", index.shape(),
           " needs as many dimensions as the input of shape ", x.shape());
  const int64_t d = wrap_dim(dim, xs.dim(), op);
  for (int64_t i = 0; i < xs.dim(); ++i)
    OX_CHECK(i == d || is.size(i) <= xs.size(i), Shape, op, "index of shape ", index.shape(),
             " is larger than the input of shape ", x.shape(), " in dimension ", i);
  Tensor out = make_empty(index.shape(), x.dtype(), device, op);
  if (out.numel() == 0) return out;
  const Shape& shape = is.shape();
  gather_into(op, dense(out, shape), restrided(xs, shape, strides_without(xs, d)),
              {{is, is.impl()->array(), d, xs.size(d), xs.stride(d), false, site}});
  return out;
}

void check_all_on_device(const Tensor& ok, CheckSite site) {
  const char* op = "check";
  OX_CHECK(ok.dtype() == kBool, DType, op, "expected a bool tensor, got ", ok.dtype());
  if (ok.numel() == 0) return;
  // A gather from one element, indexed by !ok: a false element is index 1 of a 1-element dim,
  // which the primitive reports as it reports any index (kernel_check.h).
  NoGradGuard no_grad;
  const Tensor index = logical_not(ok).to(kI64).reshape({-1});
  const Tensor one = zeros({1}, {.dtype = kBool, .device = ok.device()});
  const Shape shape = index.shape();
  Tensor out = make_empty(shape, kBool, ok.device(), op);
  gather_into(op, dense(out, shape), restrided(one, shape, {0}),
              {{index, index.impl()->array(), 0, 1, 0, false, site}});
}

}  // namespace ops

// ---- Gathers -------------------------------------------------------------------------------

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  return ops::gather_checked(x, dim, index, -1);
}

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  const char* op = "index_select";
  if (autograd::needs_grad({&x})) {
    Tensor out = autograd::without_grad([&] { return index_select(x, dim, index); });
    autograd::record(
        "index_select", {x}, {out}, {index},
        [dim, shape = x.shape()](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          return std::vector<Tensor>{index_add(zeros(shape, options_of(g[0])), dim, s[0], g[0])};
        });
    return out;
  }
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
  if (autograd::needs_grad({&x})) {
    Tensor out = autograd::without_grad([&] { return take(x, index); });
    // index_put counts negative indices from the end, as take does.
    autograd::record(
        "take", {x}, {out}, {index},
        [shape = x.shape(), n = x.numel()](const std::vector<Tensor>& g,
                                           const std::vector<Tensor>& s) {
          const Tensor flat = zeros({n}, options_of(g[0]));
          return std::vector<Tensor>{index_put(flat, {s[0]}, g[0], true).reshape(shape)};
        });
    return out;
  }
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
  if (autograd::needs_grad({&weight})) {
    Tensor out = autograd::without_grad([&] { return embedding(weight, indices, padding_idx); });
    // The rows of g summed into their weight rows; the padding row gets none (as PyTorch).
    const int64_t num = weight.size(0);
    std::optional<int64_t> pad_row = padding_idx;
    if (pad_row && *pad_row < 0) *pad_row += num;
    autograd::record(
        "embedding", {weight}, {out}, {indices},
        [shape = weight.shape(), pad_row](const std::vector<Tensor>& g,
                                          const std::vector<Tensor>& s) {
          const Tensor idx = s[0].reshape({-1});
          Tensor rows = g[0].reshape({-1, shape[1]});
          if (pad_row) rows = masked_fill(rows, eq(idx, *pad_row).unsqueeze(1), 0);
          // A row looked up k times sums k gradients: 16-bit ones in f32, rounded once (the
          // node casts the gradient back to the weight's dtype).
          if (rows.dtype() == kF16 || rows.dtype() == kBF16) rows = rows.to(kF32);
          return std::vector<Tensor>{index_add(zeros(shape, options_of(rows)), 0, idx, rows)};
        });
    return out;
  }
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
// The *_raw forms write into x without recording; the public forms record (out of place) or
// compute out of place and write back (in place) when autograd needs it.

namespace {

Tensor& scatter_src_raw(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = check_scatter(x, dim, index, &src, "scatter");
  scatter_checked(x, d, index, src, false, ScatterReduce::Assign, "scatter");
  return x;
}

Tensor& scatter_value_raw(Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  const int64_t d = check_scatter(x, dim, index, nullptr, "scatter");
  scatter_checked(x, d, index, value_tensor(value, x.dtype(), x.device(), "scatter"), true,
                  ScatterReduce::Assign, "scatter");
  return x;
}

Tensor& scatter_add_raw(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  const int64_t d = check_scatter(x, dim, index, &src, "scatter_add");
  scatter_checked(x, d, index, src, false, ScatterReduce::Sum, "scatter_add");
  return x;
}

Tensor& scatter_reduce_raw(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
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

Tensor& index_add_raw(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
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

// Gradients of scatter_reduce for x and src (PyTorch's formulas). g: the output's gradient;
// out: the forward result.
std::vector<Tensor> scatter_reduce_vjp(const Tensor& g, const Tensor& x, int64_t dim,
                                       const Tensor& index, const Tensor& src, const Tensor& out,
                                       const std::string& reduce, bool include_self) {
  const TensorOptions opt = options_of(g);
  const Shape& xshape = x.shape();
  Tensor gx, gs;
  if (reduce == "sum") {
    gx = g;
    gs = gather(g, dim, index);
  } else if (reduce == "mean") {
    const Tensor count = scatter_add(zeros(xshape, opt), dim, index, ones(index.shape(), opt));
    const Tensor n = include_self ? add(count, 1) : masked_fill(count, eq(count, 0), 1);
    const Tensor gn = div(g, n);
    gx = include_self ? gn : g;
    gs = gather(gn, dim, index);
  } else if (reduce == "amax" || reduce == "amin") {
    // Split evenly among the elements equal to the result (x's own, and the scattered ones).
    const Tensor src_hit = eq(leading(src, index.shape()), gather(out, dim, index)).to(g.dtype());
    const Tensor self_hit =
        include_self ? eq(x, out).to(g.dtype()) : scatter(ones(xshape, opt), dim, index, 0);
    Tensor n = add(self_hit, scatter_add(zeros(xshape, opt), dim, index, src_hit));
    n = masked_fill(n, eq(n, 0), 1);  // NaN results: no element equals them
    const Tensor gn = div(g, n);
    gx = mul(gn, self_hit);
    gs = mul(gather(gn, dim, index), src_hit);
  } else {  // prod: the products of the other elements, also where an element is zero
    const Tensor x1 = masked_fill(x, eq(x, 0), 1);
    gx = div(mul(g, scatter_reduce(x1, dim, index, src, "prod", include_self)), x1);
    const Tensor s = leading(src, index.shape());
    const Tensor zero = eq(s, 0);
    const Tensor zeros_at =
        gather(scatter_add(zeros(xshape, opt), dim, index, zero.to(g.dtype())), dim, index);
    const Tensor single = logical_and(zero, eq(zeros_at, 1));
    const Tensor others =
        scatter_reduce(x, dim, index, masked_fill(s, single, 1), "prod", include_self);
    gs = where(single, gather(mul(g, others), dim, index),
               div(gather(mul(g, out), dim, index), masked_fill(s, zero, 1)));
  }
  if (!include_self) gx = scatter(gx, dim, index, 0);
  return {gx, grown_to(gs, src.shape())};
}

}  // namespace

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (autograd::needs_grad({&x, &src})) {
    Tensor out = autograd::without_grad([&] { return scatter(x, dim, index, src); });
    autograd::record(
        "scatter", {x, src}, {out}, {index},
        [dim, sshape = src.shape()](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          return std::vector<Tensor>{scatter(g[0], dim, s[0], 0),
                                     grown_to(gather(g[0], dim, s[0]), sshape)};
        });
    return out;
  }
  Tensor out = copy_for(x, "scatter");
  return scatter_src_raw(out, dim, index, src);
}

Tensor scatter(const Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  if (autograd::needs_grad({&x})) {
    Tensor out = autograd::without_grad([&] { return scatter(x, dim, index, value); });
    autograd::record("scatter", {x}, {out}, {index},
                     [dim](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       return std::vector<Tensor>{scatter(g[0], dim, s[0], 0)};
                     });
    return out;
  }
  Tensor out = copy_for(x, "scatter");
  return scatter_value_raw(out, dim, index, value);
}

Tensor scatter_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (autograd::needs_grad({&x, &src})) {
    Tensor out = autograd::without_grad([&] { return scatter_add(x, dim, index, src); });
    autograd::record(
        "scatter_add", {x, src}, {out}, {index},
        [dim, sshape = src.shape()](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          return std::vector<Tensor>{g[0], grown_to(gather(g[0], dim, s[0]), sshape)};
        });
    return out;
  }
  Tensor out = copy_for(x, "scatter_add");
  return scatter_add_raw(out, dim, index, src);
}

Tensor scatter_reduce(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                      std::string_view reduce, bool include_self) {
  if (autograd::needs_grad({&x, &src})) {
    Tensor out = autograd::without_grad(
        [&] { return scatter_reduce(x, dim, index, src, reduce, include_self); });
    autograd::record("scatter_reduce", {x, src}, {out}, {index, x, src, out},
                     [dim, r = std::string(reduce), include_self](const std::vector<Tensor>& g,
                                                                  const std::vector<Tensor>& s) {
                       return scatter_reduce_vjp(g[0], s[1], dim, s[0], s[2], s[3], r,
                                                 include_self);
                     });
    return out;
  }
  Tensor out = copy_for(x, "scatter_reduce");
  return scatter_reduce_raw(out, dim, index, src, reduce, include_self);
}

Tensor index_add(const Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  if (autograd::needs_grad({&x, &source})) {
    Tensor out = autograd::without_grad([&] { return index_add(x, dim, index, source, alpha); });
    autograd::record("index_add", {x, source}, {out}, {index},
                     [dim, alpha](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
                       Tensor gs = index_select(g[0], dim, s[0]);
                       if (alpha.to_double() != 1.0) gs = mul(gs, alpha);
                       return std::vector<Tensor>{g[0], gs};
                     });
    return out;
  }
  Tensor out = copy_for(x, "index_add");
  return index_add_raw(out, dim, index, source, alpha);
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (autograd::needs_grad({&x, &src}))
    return inplace_recorded(x, "scatter_",
                            [&](const Tensor& base) { return scatter(base, dim, index, src); });
  return scatter_src_raw(x, dim, index, src);
}

Tensor& scatter_(Tensor& x, int64_t dim, const Tensor& index, const Scalar& value) {
  if (autograd::needs_grad({&x}))
    return inplace_recorded(x, "scatter_",
                            [&](const Tensor& base) { return scatter(base, dim, index, value); });
  return scatter_value_raw(x, dim, index, value);
}

Tensor& scatter_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src) {
  if (autograd::needs_grad({&x, &src}))
    return inplace_recorded(x, "scatter_add_",
                            [&](const Tensor& base) { return scatter_add(base, dim, index, src); });
  return scatter_add_raw(x, dim, index, src);
}

Tensor& scatter_reduce_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& src,
                        std::string_view reduce, bool include_self) {
  if (autograd::needs_grad({&x, &src}))
    return inplace_recorded(x, "scatter_reduce_", [&](const Tensor& base) {
      return scatter_reduce(base, dim, index, src, reduce, include_self);
    });
  return scatter_reduce_raw(x, dim, index, src, reduce, include_self);
}

Tensor& index_add_(Tensor& x, int64_t dim, const Tensor& index, const Tensor& source,
                   const Scalar& alpha) {
  if (autograd::needs_grad({&x, &source}))
    return inplace_recorded(x, "index_add_", [&](const Tensor& base) {
      return index_add(base, dim, index, source, alpha);
    });
  return index_add_raw(x, dim, index, source, alpha);
}

}  // namespace ox
