// The sort family: sort, argsort, topk, kthvalue, median. Each moves its dim last (a view, no
// copy) and calls the one sort primitive, which sorts, takes a prefix or selects one position
// of the same stable order, so topk equals a prefix of sort and kthvalue an entry of it.

#include <algorithm>

#include "autograd/record.h"
#include "ops/op_util.h"

namespace ox {

namespace {

struct SortDim {
  int64_t d;     // the dim, wrapped (0 for a 0-d tensor)
  int64_t size;  // its extent (1 for a 0-d tensor)
};

SortDim sort_dim(const Tensor& x, int64_t dim, const char* name) {
  ops::impl_of(x, name);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(x.dim(), 1), name);
  return {d, x.dim() ? x.size(d) : 1};
}

// x's shape with the sorted dim set to m (a 0-d tensor keeps its shape).
Shape with_extent(const Tensor& x, const SortDim& sd, int64_t m) {
  Shape s = x.shape();
  if (!s.empty()) s[static_cast<size_t>(sd.d)] = m;
  return s;
}

// Values (undefined unless want_values) and i64 indices of `shape`, written by the primitive.
// The values' gradient goes back to the positions they came from.
std::tuple<Tensor, Tensor> run_sort(const Tensor& x, const SortDim& sd, const Shape& shape,
                                    const SortParams& params, bool want_values, const char* name) {
  Tensor values = want_values ? make_empty(shape, x.dtype(), x.device(), name) : Tensor();
  Tensor indices = make_empty(shape, kI64, x.device(), name);
  if (indices.numel() > 0) {
    const StridedArray none{nullptr, {}, {}, x.dtype(), x.device()};
    backend_for(x.device(), name)
        .sort(want_values ? ops::dim_last(values.impl()->array(), sd.d) : none,
              ops::dim_last(indices.impl()->array(), sd.d), ops::dim_last(x.impl()->array(), sd.d),
              params);
  }
  if (want_values && is_floating(x.dtype()) && autograd::needs_grad({&x}))
    autograd::record(
        name, {x}, {values}, {indices},
        [shape = x.shape(), d = sd.d](const std::vector<Tensor>& g, const std::vector<Tensor>& s) {
          return std::vector<Tensor>{ops::picked_grad(g[0], s[0], shape, d)};
        });
  return {values, indices};
}

void require_nonempty(const Tensor& x, const SortDim& sd, const char* name) {
  OX_CHECK(sd.size > 0, Empty, name, "cannot select from an empty extent: dimension ", sd.d,
           " of shape ", x.shape(), " has size 0");
}

// Position `pos` (0-based) of the ascending order along dim; nan_wins as median.
std::tuple<Tensor, Tensor> select_position(const Tensor& x, const SortDim& sd, int64_t pos,
                                           bool keepdim, bool nan_wins, const char* name) {
  auto [values, indices] = run_sort(x, sd, with_extent(x, sd, 1),
                                    {.select = true, .k = pos, .nan_wins = nan_wins}, true, name);
  if (keepdim || x.dim() == 0) return {values, indices};
  return {values.squeeze(sd.d), indices.squeeze(sd.d)};
}

}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  const SortDim sd = sort_dim(x, dim, "sort");
  return run_sort(x, sd, x.shape(), {.descending = descending}, true, "sort");
}

Tensor argsort(const Tensor& x, int64_t dim, bool descending, bool /*stable*/) {
  const SortDim sd = sort_dim(x, dim, "argsort");
  return std::get<1>(run_sort(x, sd, x.shape(), {.descending = descending}, false, "argsort"));
}

std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim, bool largest,
                                bool /*sorted*/) {
  const SortDim sd = sort_dim(x, dim, "topk");
  // A 0-d result holds one element, so a 0-d input takes k = 1 only.
  const int64_t lo = x.dim() == 0 ? 1 : 0;
  OX_CHECK(k >= lo && k <= sd.size, Index, "topk", "k = ", k, " is out of range [", lo, ", ",
           sd.size, "] for dimension ", sd.d, " of shape ", x.shape());
  return run_sort(x, sd, with_extent(x, sd, k), {.descending = largest}, true, "topk");
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& x, int64_t k, int64_t dim, bool keepdim) {
  const SortDim sd = sort_dim(x, dim, "kthvalue");
  require_nonempty(x, sd, "kthvalue");
  OX_CHECK(k >= 1 && k <= sd.size, Index, "kthvalue", "k = ", k, " is out of range [1, ", sd.size,
           "] for dimension ", sd.d, " of shape ", x.shape());
  return select_position(x, sd, k - 1, keepdim, false, "kthvalue");
}

Tensor median(const Tensor& x) {
  ops::impl_of(x, "median");
  OX_CHECK(x.numel() > 0, Empty, "median", "cannot take the median of an empty tensor of shape ",
           x.shape());
  const Tensor flat = x.reshape({-1});
  const SortDim sd{0, flat.size(0)};
  return std::get<0>(select_position(flat, sd, (sd.size - 1) / 2, false, true, "median"));
}

std::tuple<Tensor, Tensor> median(const Tensor& x, int64_t dim, bool keepdim) {
  const SortDim sd = sort_dim(x, dim, "median");
  require_nonempty(x, sd, "median");
  return select_position(x, sd, (sd.size - 1) / 2, keepdim, true, "median");
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending, bool stable) const {
  return ox::sort(*this, dim, descending, stable);
}
Tensor Tensor::argsort(int64_t dim, bool descending, bool stable) const {
  return ox::argsort(*this, dim, descending, stable);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return ox::topk(*this, k, dim, largest, sorted);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return ox::kthvalue(*this, k, dim, keepdim);
}
Tensor Tensor::median() const { return ox::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const {
  return ox::median(*this, dim, keepdim);
}

}  // namespace ox
