// Reductions and scans: dims and dtype rules, then one backend primitive. The op layer moves
// the reduced dims of the input to the end (a permuted view, no copy); the kernel reduces the
// trailing dims of that view into the output.

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "amp/autocast_policy.h"
#include "autograd/record.h"
#include "ops/op_util.h"
#include "oxmera/linalg.h"

namespace ox {

namespace {

struct Reduction {
  Shape out_shape;   // the kept dims
  Shape keep_shape;  // with a 1 at each reduced dim (keepdim)
  StridedArray src;  // the input as kept dims then reduced dims
  bool empty_extent = false;
};

// Which dims `dims` names (all when it is empty); Index error out of range, Value error twice.
std::vector<bool> reduced_mask(const Tensor& x, const DimList& dims, const char* op) {
  const int64_t nd = x.dim();
  std::vector<bool> mask(static_cast<size_t>(nd), dims.empty());
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(nd, 1)), false);
  for (int64_t d : dims.dims()) {
    const auto w = static_cast<size_t>(wrap_dim(d, std::max<int64_t>(nd, 1), op));
    OX_CHECK(!seen[w], Value, op, "dim ", d, " appears more than once in dims ", dims.dims());
    seen[w] = true;
    if (nd > 0) mask[w] = true;  // a 0-d tensor takes dim 0 / -1 as itself
  }
  return mask;
}

Reduction plan(const Tensor& x, const std::vector<bool>& mask) {
  Reduction r;
  const StridedArray a = x.impl()->array();
  Shape red_shape;
  Strides kept_strides, red_strides;
  for (size_t d = 0; d < mask.size(); ++d) {
    r.keep_shape.push_back(mask[d] ? 1 : a.shape[d]);
    if (mask[d]) {
      red_shape.push_back(a.shape[d]);
      red_strides.push_back(a.strides[d]);
      r.empty_extent = r.empty_extent || a.shape[d] == 0;
    } else {
      r.out_shape.push_back(a.shape[d]);
      kept_strides.push_back(a.strides[d]);
    }
  }
  r.src = a;
  r.src.shape = r.out_shape;
  r.src.strides = kept_strides;
  for (size_t d = 0; d < red_shape.size(); ++d) {
    r.src.shape.push_back(red_shape[d]);
    r.src.strides.push_back(red_strides[d]);
  }
  return r;
}

Reduction plan(const Tensor& x, const DimList& dims, const char* op) {
  return plan(x, reduced_mask(x, dims, op));
}

void require_nonempty(const Reduction& r, const Tensor& x, const DimList& dims, const char* op) {
  OX_CHECK(!r.empty_extent, Empty, op, "cannot reduce over an empty extent: input of shape ",
           x.shape(), ", dims ", dims.empty() ? std::string("all") : to_string(dims.dims()),
           " (the op has no identity)");
}

// The kernel's view of a fresh contiguous result: its kept dims only.
StridedArray out_array(const Tensor& out, const Reduction& r) {
  StridedArray a = out.impl()->array();
  a.shape = r.out_shape;
  a.strides = contiguous_strides(r.out_shape);
  return a;
}

Tensor reduce_into(const Tensor& x, const Reduction& r, ReduceOp op, DType dtype, bool keepdim,
                   const char* name, const ReduceParams& params = {}) {
  Tensor out = make_empty(keepdim ? r.keep_shape : r.out_shape, dtype, x.device(), name);
  if (out.numel() > 0) backend_for(x.device(), name).reduce(op, out_array(out, r), r.src, params);
  return out;
}

// What a reduction's gradient rule gets besides the gradient (itself with the reduced dims
// kept, size 1, so it broadcasts against x): x and the result y (reduced dims kept) where the
// rule reads them, x's shape and how many elements each result reduced.
struct Reduced {
  Tensor x, y;
  Shape x_shape;
  double count;
};
using ReductionRule = std::function<Tensor(const Tensor& g, const Reduced& r)>;
// Which of x and y a rule reads: only those are saved (PyTorch's choices), so an in-place write
// into the other does not fail the backward.
struct Reads {
  bool x, y;
};
constexpr Reads kReadsNothing{false, false}, kReadsX{true, false}, kReadsXY{true, true};

// A reduction of x over dims recorded for autograd.
template <class Compute>
Tensor recorded_reduction(const char* name, const Tensor& x, const DimList& dims, Compute compute,
                          ReductionRule rule, Reads reads) {
  Tensor out = autograd::without_grad(compute);
  if (!is_floating(out.dtype())) return out;
  const Shape keep = plan(x, dims, name).keep_shape;
  const double count = out.numel() == 0 ? 0.0 : double(x.numel()) / double(out.numel());
  autograd::record(
      name, {x}, {out}, {reads.x ? x : Tensor(), reads.y ? out : Tensor()},
      [keep, rule, count, shape = x.shape()](const std::vector<Tensor>& g,
                                             const std::vector<Tensor>& s) {
        const Reduced r{s[0], s[1].defined() ? s[1].reshape(keep) : Tensor(), shape, count};
        return std::vector<Tensor>{rule(g[0].reshape(keep), r)};
      });
  return out;
}

// Gradient of an extreme value: split evenly among the elements equal to it (as PyTorch's amax).
Tensor extreme_rule(const Tensor& g, const Tensor& x, const Tensor& y, const DimList& dims) {
  const Tensor hits = eq(x, y).to(g.dtype());
  return hits * g / sum(hits, dims, /*keepdim=*/true);
}

// d ||x||_p: 0 at a zero norm (PyTorch's subgradient); inf norms split among the maxima.
Tensor norm_rule(const Tensor& g, const Tensor& x, const Tensor& y, double p, const DimList& dims) {
  if (p == 0) return zeros_like(x);
  if (p == 1) return g * sign(x);
  if (std::isinf(p)) return extreme_rule(g, abs(x), y, dims) * sign(x);
  const Tensor safe = where(eq(y, 0), 1, y);
  const Tensor d = p == 2 ? x / safe : x * pow(abs(x), p - 2) / pow(safe, p - 1);
  return where(eq(y, 0), 0, g * d);
}

// sum and prod: `dtype` converts the input first (as PyTorch); integer and bool inputs
// accumulate in i64, converted to an integer `dtype` at the end.
Tensor sum_like(const Tensor& x, const DimList& dims, bool keepdim, std::optional<DType> dtype,
                ReduceOp op, const char* name) {
  ops::impl_of(x, name);
  const Tensor src = dtype ? x.to(*dtype) : x;
  const Reduction r = plan(src, dims, name);
  Tensor out =
      reduce_into(src, r, op, is_floating(src.dtype()) ? src.dtype() : kI64, keepdim, name);
  return dtype && *dtype != out.dtype() ? out.to(*dtype) : out;
}

void require_floating(const Tensor& x, const char* name) {
  OX_CHECK(is_floating(x.dtype()), DType, name, "needs a floating tensor, got ", x.dtype());
}

Tensor extreme(const Tensor& x, const DimList& dims, bool keepdim, ReduceOp op, const char* name) {
  ops::impl_of(x, name);
  const Reduction r = plan(x, dims, name);
  require_nonempty(r, x, dims, name);
  return reduce_into(x, r, op, x.dtype(), keepdim, name);
}

std::tuple<Tensor, Tensor> extreme_with_index(const Tensor& x, int64_t dim, bool keepdim,
                                              ReduceOp op, const char* name) {
  ops::impl_of(x, name);
  const Reduction r = plan(x, DimList(dim), name);
  require_nonempty(r, x, DimList(dim), name);
  const Shape& shape = keepdim ? r.keep_shape : r.out_shape;
  Tensor values = make_empty(shape, x.dtype(), x.device(), name);
  Tensor indices = make_empty(shape, kI64, x.device(), name);
  if (values.numel() > 0) {
    const StridedArray v = out_array(values, r);
    backend_for(x.device(), name).reduce(op, out_array(indices, r), r.src, {.values = &v});
  }
  return {values, indices};
}

Tensor arg_extreme(const Tensor& x, std::optional<int64_t> dim, bool keepdim, ReduceOp op,
                   const char* name) {
  ops::impl_of(x, name);
  const DimList dims = dim ? DimList(*dim) : DimList();
  const Reduction r = plan(x, dims, name);
  require_nonempty(r, x, dims, name);
  return reduce_into(x, r, op, kI64, keepdim, name);
}

Tensor var_std(const Tensor& x, const DimList& dims, double correction, bool keepdim, ReduceOp op,
               const char* name) {
  ops::impl_of(x, name);
  require_floating(x, name);
  const Reduction r = plan(x, dims, name);
  require_nonempty(r, x, dims, name);
  return reduce_into(x, r, op, x.dtype(), keepdim, name, {.correction = correction});
}

Tensor reverse_cumsum(const Tensor& g, int64_t d) { return cumsum(g.flip({d}), d).flip({d}); }

// d y_j / d x_i = prod_{k <= j, k != i} x_k for j >= i. Without zeros that is y_j / x_i (one
// host read decides). With zeros, the exclusive prefix product prod_{k < i} x_k times, for each
// i, the products over (i, j] from a cumprod of x with the entries up to i set to 1: an n x n
// intermediate per row along d.
Tensor cumprod_rule(const Tensor& g, const Tensor& x, const Tensor& y, int64_t d) {
  if (!any(eq(x, 0)).item<bool>()) return reverse_cumsum(g * y, d) / x;
  const int64_t n = x.size(d);
  const Tensor xl = x.transpose(d, -1), gl = g.transpose(d, -1);
  const Tensor k = arange(n, {.device = x.device()}), i = k.unsqueeze(1);
  const Tensor suffix = cumprod(where(gt(k, i), xl.unsqueeze(-2), 1), -1);  // [..., i, j]
  const Tensor exclusive =
      cumprod(cat({ones_like(xl.narrow(-1, 0, 1)), xl.narrow(-1, 0, n - 1)}, -1), -1);
  const Tensor later = where(ge(k, i), gl.unsqueeze(-2) * suffix, 0);  // only j >= i
  return (exclusive * sum(later, -1)).transpose(d, -1);
}

Tensor scan_sum_prod(const Tensor& x, int64_t dim, std::optional<DType> dtype, ScanOp op,
                     const char* name) {
  ops::impl_of(x, name);
  const Tensor src = dtype ? x.to(*dtype) : x;
  const int64_t d = wrap_dim(dim, std::max<int64_t>(src.dim(), 1), name);
  const auto scan = [&] {
    Tensor out =
        make_empty(src.shape(), is_floating(src.dtype()) ? src.dtype() : kI64, src.device(), name);
    if (out.numel() > 0)
      backend_for(src.device(), name)
          .scan(op, ops::dim_last(out.impl()->array(), d), ops::dim_last(src.impl()->array(), d),
                nullptr);
    return dtype && *dtype != out.dtype() ? out.to(*dtype) : out;
  };
  if (!autograd::needs_grad({&src})) return scan();
  Tensor out = autograd::without_grad(scan);
  const bool sum_scan = op == ScanOp::Sum;
  // cumsum's rule reads neither (PyTorch's), cumprod's both.
  autograd::record(name, {src}, {out}, {sum_scan ? Tensor() : src, sum_scan ? Tensor() : out},
                   [d, sum_scan, scalar = src.dim() == 0](const std::vector<Tensor>& g,
                                                          const std::vector<Tensor>& s) {
                     if (scalar) return std::vector<Tensor>{g[0]};
                     return std::vector<Tensor>{sum_scan ? reverse_cumsum(g[0], d)
                                                         : cumprod_rule(g[0], s[0], s[1], d)};
                   });
  return out;
}

std::tuple<Tensor, Tensor> scan_extreme(const Tensor& x, int64_t dim, ScanOp op, const char* name) {
  ops::impl_of(x, name);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  Tensor values = make_empty(x.shape(), x.dtype(), x.device(), name);
  Tensor indices = make_empty(x.shape(), kI64, x.device(), name);
  if (x.numel() > 0) {
    const StridedArray idx = ops::dim_last(indices.impl()->array(), d);
    backend_for(x.device(), name)
        .scan(op, ops::dim_last(values.impl()->array(), d), ops::dim_last(x.impl()->array(), d),
              &idx);
  }
  if (autograd::needs_grad({&x}) && is_floating(x.dtype()))
    autograd::record(
        name, {x}, {values}, {indices},
        [shape = x.shape(), d](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          return std::vector<Tensor>{ops::picked_grad(g[0], s[0], shape, d)};
        });
  return {values, indices};
}

// d prod / dx_i = the product of the others: y / x_i without zeros; with one zero, only that
// element has a gradient (the product of the nonzero others); with two or more, none does.
Tensor prod_rule(const Tensor& g, const Tensor& x, const Tensor& y, std::optional<int64_t> dim) {
  const Tensor is_zero = eq(x, 0);
  const Tensor nonzero = where(is_zero, 1, x);
  const Tensor zeros = dim ? sum(is_zero, *dim, true) : sum(is_zero).reshape(y.shape());
  const Tensor others = (dim ? prod(nonzero, *dim, true) : prod(nonzero).reshape(y.shape()));
  const Tensor no_zero = g * y / nonzero;
  const Tensor one_zero = where(is_zero, g * others, 0);
  return where(eq(zeros, 0), no_zero, where(eq(zeros, 1), one_zero, 0));
}

// max/min along dim with their indices; the gradient goes to the index each value came from.
std::tuple<Tensor, Tensor> indexed_extreme(const Tensor& x, int64_t dim, bool keepdim, ReduceOp op,
                                           const char* name) {
  if (!autograd::needs_grad({&x})) return extreme_with_index(x, dim, keepdim, op, name);
  auto [values, indices] =
      autograd::without_grad([&] { return extreme_with_index(x, dim, keepdim, op, name); });
  const Shape keep = plan(x, DimList(dim), name).keep_shape;
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  autograd::record(
      name, {x}, {values}, {indices},
      [keep, d, shape = x.shape()](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
        Shape along(shape.size(), 1);
        if (!shape.empty()) along[size_t(d)] = shape[size_t(d)];
        const Tensor position =
            arange(shape.empty() ? 1 : shape[size_t(d)], {.device = g[0].device()}).reshape(along);
        const Tensor hit = eq(position, s[0].reshape(keep));
        return std::vector<Tensor>{where(hit, g[0].reshape(keep), 0).expand(shape)};
      });
  return {values, indices};
}

}  // namespace

Tensor sum(const Tensor& x, DimList dims, bool keepdim, std::optional<DType> dtype) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return sum(cast(x), dims, keepdim, dtype);
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "sum", x, dims, [&] { return sum(x, dims, keepdim, dtype); },
        [](const Tensor& g, const Reduced& r) { return g.expand(r.x_shape); }, kReadsNothing);
  return sum_like(x, dims, keepdim, dtype, ReduceOp::Sum, "sum");
}

Tensor mean(const Tensor& x, DimList dims, bool keepdim, std::optional<DType> dtype) {
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "mean", x, dims, [&] { return mean(x, dims, keepdim, dtype); },
        [](const Tensor& g, const Reduced& r) { return g.expand(r.x_shape) / r.count; },
        kReadsNothing);
  ops::impl_of(x, "mean");
  const Tensor src = dtype ? x.to(*dtype) : x;
  OX_CHECK(is_floating(src.dtype()), DType, "mean",
           "needs a floating input or dtype (could not infer the output dtype from ", src.dtype(),
           "); pass dtype = ox::kF32");
  const Reduction r = plan(src, dims, "mean");
  require_nonempty(r, src, dims, "mean");
  return reduce_into(src, r, ReduceOp::Mean, src.dtype(), keepdim, "mean");
}

Tensor prod(const Tensor& x, std::optional<DType> dtype) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return prod(cast(x), dtype);
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "prod", x, {}, [&] { return prod(x, dtype); },
        [](const Tensor& g, const Reduced& r) { return prod_rule(g, r.x, r.y, std::nullopt); },
        kReadsXY);
  return sum_like(x, {}, false, dtype, ReduceOp::Prod, "prod");
}
Tensor prod(const Tensor& x, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return prod(cast(x), dim, keepdim, dtype);
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "prod", x, dim, [&] { return prod(x, dim, keepdim, dtype); },
        [dim](const Tensor& g, const Reduced& r) { return prod_rule(g, r.x, r.y, dim); }, kReadsXY);
  return sum_like(x, dim, keepdim, dtype, ReduceOp::Prod, "prod");
}

Tensor max(const Tensor& x) {
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "max", x, {}, [&] { return max(x.detach()); },
        [](const Tensor& g, const Reduced& r) { return extreme_rule(g, r.x, r.y, {}); }, kReadsXY);
  return extreme(x, {}, false, ReduceOp::Max, "max");
}
Tensor min(const Tensor& x) {
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "min", x, {}, [&] { return min(x.detach()); },
        [](const Tensor& g, const Reduced& r) { return extreme_rule(g, r.x, r.y, {}); }, kReadsXY);
  return extreme(x, {}, false, ReduceOp::Min, "min");
}
std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim) {
  return indexed_extreme(x, dim, keepdim, ReduceOp::ArgMax, "max");
}
std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim) {
  return indexed_extreme(x, dim, keepdim, ReduceOp::ArgMin, "min");
}
Tensor amax(const Tensor& x, DimList dims, bool keepdim) {
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "amax", x, dims, [&] { return amax(x, dims, keepdim); },
        [dims](const Tensor& g, const Reduced& r) { return extreme_rule(g, r.x, r.y, dims); },
        kReadsXY);
  return extreme(x, dims, keepdim, ReduceOp::Max, "amax");
}
Tensor amin(const Tensor& x, DimList dims, bool keepdim) {
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "amin", x, dims, [&] { return amin(x, dims, keepdim); },
        [dims](const Tensor& g, const Reduced& r) { return extreme_rule(g, r.x, r.y, dims); },
        kReadsXY);
  return extreme(x, dims, keepdim, ReduceOp::Min, "amin");
}
Tensor argmax(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(x, dim, keepdim, ReduceOp::ArgMax, "argmax");
}
Tensor argmin(const Tensor& x, std::optional<int64_t> dim, bool keepdim) {
  return arg_extreme(x, dim, keepdim, ReduceOp::ArgMin, "argmin");
}

Tensor var(const Tensor& x, DimList dims, double correction, bool keepdim) {
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "var", x, dims, [&] { return var(x, dims, correction, keepdim); },
        [dims, correction](const Tensor& g, const Reduced& r) {
          return g * (r.x - mean(r.x, dims, true)) * (2.0 / (r.count - correction));
        },
        kReadsX);
  return var_std(x, dims, correction, keepdim, ReduceOp::Var, "var");
}
Tensor std(const Tensor& x, DimList dims, double correction, bool keepdim) {
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "std", x, dims, [&] { return std(x, dims, correction, keepdim); },
        [dims, correction](const Tensor& g, const Reduced& r) {
          return g * (r.x - mean(r.x, dims, true)) / (r.y * (r.count - correction));
        },
        kReadsXY);
  return var_std(x, dims, correction, keepdim, ReduceOp::Std, "std");
}

Tensor logsumexp(const Tensor& x, DimList dims, bool keepdim) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return logsumexp(cast(x), dims, keepdim);
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "logsumexp", x, dims, [&] { return logsumexp(x, dims, keepdim); },
        [](const Tensor& g, const Reduced& r) { return g * exp(r.x - r.y); }, kReadsXY);
  ops::impl_of(x, "logsumexp");
  // Integer and bool inputs compute in f32, as PyTorch; an empty extent gives -inf (log 0).
  const Tensor src = is_floating(x.dtype()) ? x : x.to(kF32);
  const Reduction r = plan(src, dims, "logsumexp");
  return reduce_into(src, r, ReduceOp::LogSumExp, src.dtype(), keepdim, "logsumexp");
}

Tensor norm(const Tensor& x, double p, DimList dims, bool keepdim) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return norm(cast(x), p, dims, keepdim);
  if (autograd::needs_grad({&x}))
    return recorded_reduction(
        "norm", x, dims, [&] { return norm(x, p, dims, keepdim); },
        [p, dims](const Tensor& g, const Reduced& r) { return norm_rule(g, r.x, r.y, p, dims); },
        kReadsXY);
  ops::impl_of(x, "norm");
  require_floating(x, "norm");
  OX_CHECK(!std::isnan(p), Value, "norm", "p must not be NaN");
  const Reduction r = plan(x, dims, "norm");
  // Finite p >= 0 sums to 0 over nothing; inf, -inf and negative p have no value there.
  if (!(p >= 0 && std::isfinite(p))) require_nonempty(r, x, dims, "norm");
  return reduce_into(x, r, ReduceOp::Norm, x.dtype(), keepdim, "norm", {.p = p});
}
Tensor norm(const Tensor& x, std::string_view p, DimList dims, bool keepdim) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return norm(cast(x), p, dims, keepdim);
  if (p == "nuc") {
    // torch.norm: the matrix norm over two dims, those of a 2-d tensor when none are given.
    OX_CHECK(!dims.empty() || x.dim() == 2, Shape, "norm",
             "the nuclear norm without dims takes a 2-d tensor, got shape ", x.shape());
    return linalg::matrix_norm(x, "nuc", dims.empty() ? Dims{-2, -1} : dims.dims(), keepdim);
  }
  OX_CHECK(p == "fro", Value, "norm", "p must be a number or \"fro\", got \"", std::string(p),
           "\"");
  return norm(x, 2.0, dims, keepdim);
}

Tensor all(const Tensor& x, DimList dims, bool keepdim) {
  ops::impl_of(x, "all");
  return reduce_into(x, plan(x, dims, "all"), ReduceOp::All, x.dtype() == kU8 ? kU8 : kBool,
                     keepdim, "all");
}
Tensor any(const Tensor& x, DimList dims, bool keepdim) {
  ops::impl_of(x, "any");
  return reduce_into(x, plan(x, dims, "any"), ReduceOp::Any, x.dtype() == kU8 ? kU8 : kBool,
                     keepdim, "any");
}
Tensor count_nonzero(const Tensor& x, DimList dims) {
  ops::impl_of(x, "count_nonzero");
  return reduce_into(x, plan(x, dims, "count_nonzero"), ReduceOp::CountNonzero, kI64, false,
                     "count_nonzero");
}

Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  if (amp::OpCast cast{amp::CastPolicy::Float32, x}) return cumsum(cast(x), dim, dtype);
  return scan_sum_prod(x, dim, dtype, ScanOp::Sum, "cumsum");
}
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype) {
  return scan_sum_prod(x, dim, dtype, ScanOp::Prod, "cumprod");
}
std::tuple<Tensor, Tensor> cummax(const Tensor& x, int64_t dim) {
  return scan_extreme(x, dim, ScanOp::Max, "cummax");
}
std::tuple<Tensor, Tensor> cummin(const Tensor& x, int64_t dim) {
  return scan_extreme(x, dim, ScanOp::Min, "cummin");
}

Tensor Tensor::sum(DimList dims, bool keepdim, std::optional<DType> dtype) const {
  return ox::sum(*this, std::move(dims), keepdim, dtype);
}
Tensor Tensor::mean(DimList dims, bool keepdim, std::optional<DType> dtype) const {
  return ox::mean(*this, std::move(dims), keepdim, dtype);
}
Tensor Tensor::prod(std::optional<DType> dtype) const { return ox::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<DType> dtype) const {
  return ox::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return ox::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const {
  return ox::max(*this, dim, keepdim);
}
Tensor Tensor::min() const { return ox::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const {
  return ox::min(*this, dim, keepdim);
}
Tensor Tensor::amax(DimList dims, bool keepdim) const {
  return ox::amax(*this, std::move(dims), keepdim);
}
Tensor Tensor::amin(DimList dims, bool keepdim) const {
  return ox::amin(*this, std::move(dims), keepdim);
}
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const {
  return ox::argmax(*this, dim, keepdim);
}
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const {
  return ox::argmin(*this, dim, keepdim);
}
Tensor Tensor::var(DimList dims, double correction, bool keepdim) const {
  return ox::var(*this, std::move(dims), correction, keepdim);
}
Tensor Tensor::std(DimList dims, double correction, bool keepdim) const {
  return ox::std(*this, std::move(dims), correction, keepdim);
}
Tensor Tensor::logsumexp(DimList dims, bool keepdim) const {
  return ox::logsumexp(*this, std::move(dims), keepdim);
}
Tensor Tensor::norm(double p, DimList dims, bool keepdim) const {
  return ox::norm(*this, p, std::move(dims), keepdim);
}
Tensor Tensor::norm(std::string_view p, DimList dims, bool keepdim) const {
  return ox::norm(*this, p, std::move(dims), keepdim);
}
Tensor Tensor::all(DimList dims, bool keepdim) const {
  return ox::all(*this, std::move(dims), keepdim);
}
Tensor Tensor::any(DimList dims, bool keepdim) const {
  return ox::any(*this, std::move(dims), keepdim);
}
Tensor Tensor::count_nonzero(DimList dims) const {
  return ox::count_nonzero(*this, std::move(dims));
}
Tensor Tensor::cumsum(int64_t dim, std::optional<DType> dtype) const {
  return ox::cumsum(*this, dim, dtype);
}
Tensor Tensor::cumprod(int64_t dim, std::optional<DType> dtype) const {
  return ox::cumprod(*this, dim, dtype);
}
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return ox::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return ox::cummin(*this, dim); }

}  // namespace ox
