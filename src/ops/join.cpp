// Joining and splitting: cat, stack, split, chunk, meshgrid. Written with public ops and views;
// cat is one copy per input into a slice of the output.

#include <numeric>

#include "autograd/record.h"
#include "ops/op_util.h"

namespace ox {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  OX_CHECK(!tensors.empty(), Value, "cat", "expected a non-empty list of tensors");
  // As PyTorch, 1-d empty tensors are skipped whatever the other shapes are.
  std::vector<const Tensor*> parts;
  ResultType rt;
  for (const Tensor& t : tensors) {
    ops::impl_of(t, "cat");
    rt.tensor(t.dtype());
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(&t);
  }
  const DType dtype = rt.get();
  if (parts.empty()) return empty({0}, {.dtype = dtype, .device = tensors.front().device()});
  const Tensor& first = *parts.front();
  OX_CHECK(first.dim() > 0, Shape, "cat", "zero-dimensional tensors cannot be concatenated");
  const int64_t d = wrap_dim(dim, first.dim(), "cat");
  Shape shape = first.shape();
  int64_t total = 0;
  for (const Tensor* t : parts) {
    OX_CHECK(t->device() == first.device(), Device, "cat",
             "expected all tensors on one device, got ", first.device(), " and ", t->device());
    OX_CHECK(t->dim() == first.dim(), Shape, "cat", "tensors must have the same number of ",
             "dimensions: got shapes ", first.shape(), " and ", t->shape());
    for (int64_t i = 0; i < first.dim(); ++i)
      OX_CHECK(i == d || t->size(i) == first.size(i), Shape, "cat", "shapes ", first.shape(),
               " and ", t->shape(), " differ in dimension ", i, " (concatenating along ", d, ")");
    total += t->size(d);
  }
  shape[d] = total;
  const auto concatenate = [&] {
    Tensor out = empty(shape, {.dtype = dtype, .device = first.device()});
    int64_t offset = 0;
    for (const Tensor* t : parts) {
      out.narrow(d, offset, t->size(d)).copy_(*t);
      offset += t->size(d);
    }
    return out;
  };
  std::vector<Tensor> inputs;
  for (const Tensor* t : parts) inputs.push_back(*t);
  if (!autograd::needs_grad(inputs)) return concatenate();
  Tensor out = autograd::without_grad(concatenate);
  std::vector<int64_t> extents;
  for (const Tensor* t : parts) extents.push_back(t->size(d));
  // Each input's gradient is its slice of the output's.
  autograd::record("cat", inputs, {out}, {},
                   [d, extents](const std::vector<Tensor>& g, const std::vector<Tensor>&) {
                     return split(g[0], extents, d);
                   });
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  OX_CHECK(!tensors.empty(), Value, "stack", "expected a non-empty list of tensors");
  const Shape& shape = ops::impl_of(tensors.front(), "stack").layout().shape;
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(shape.size()) + 1, "stack");
  std::vector<Tensor> lifted;
  lifted.reserve(tensors.size());
  for (const Tensor& t : tensors) {
    OX_CHECK(ops::impl_of(t, "stack").layout().shape == shape, Shape, "stack",
             "expects tensors of one shape, got ", shape, " and ", t.shape());
    lifted.push_back(t.unsqueeze(d));
  }
  return cat(lifted, d);
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  OX_CHECK(ops::impl_of(x, "split").layout().dim() > 0, Shape, "split",
           "cannot split a 0-d tensor");
  OX_CHECK(split_size > 0 || (split_size == 0 && x.size(dim) == 0), Value, "split",
           "split_size must be positive, got ", split_size);
  const int64_t d = wrap_dim(dim, x.dim(), "split"), n = x.size(d);
  std::vector<Tensor> parts;
  if (n == 0) return {x};
  for (int64_t start = 0; start < n; start += split_size)
    parts.push_back(x.narrow(d, start, std::min(split_size, n - start)));
  return parts;
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  OX_CHECK(ops::impl_of(x, "split").layout().dim() > 0, Shape, "split",
           "cannot split a 0-d tensor");
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    OX_CHECK(s >= 0, Value, "split", "sizes must be non-negative, got ", Dims(sizes));
    total += s;
  }
  OX_CHECK(total == x.size(d), Value, "split", "sizes ", Dims(sizes), " sum to ", total,
           ", not to dimension ", d, " of size ", x.size(d));
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t s : sizes) {
    parts.push_back(x.narrow(d, start, s));
    start += s;
  }
  return parts;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  OX_CHECK(chunks > 0, Value, "chunk", "number of chunks must be positive, got ", chunks);
  OX_CHECK(ops::impl_of(x, "chunk").layout().dim() > 0, Shape, "chunk",
           "cannot chunk a 0-d tensor");
  const int64_t n = x.size(wrap_dim(dim, x.dim(), "chunk"));
  return split(x, n == 0 ? 0 : (n + chunks - 1) / chunks, dim);
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, std::string_view indexing) {
  OX_CHECK(indexing == "ij" || indexing == "xy", Value, "meshgrid",
           "indexing must be \"ij\" or \"xy\", got \"", std::string(indexing), "\"");
  Shape shape;
  for (const Tensor& t : tensors) {
    OX_CHECK(ops::impl_of(t, "meshgrid").layout().dim() <= 1, Shape, "meshgrid",
             "expects 0-d or 1-d tensors, got shape ", t.shape());
    shape.push_back(t.numel());
  }
  // "xy" swaps the first two output dims, as NumPy's Cartesian indexing.
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> grids;
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t axis = i;
    if (swap && i < 2) axis = 1 - i;
    Shape view_shape(tensors.size(), 1);
    view_shape[axis] = tensors[i].numel();
    grids.push_back(tensors[i].reshape(view_shape).expand(shape));
  }
  return grids;
}

}  // namespace ox
