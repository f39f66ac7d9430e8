#pragma once
// Layout: shape, strides (in elements, may be 0 or negative) and an element offset into
// storage. All view arithmetic lives here, device-free and overflow-checked; a Tensor
// view is a new Layout over the same Storage.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "oxmera/core/shape.h"

namespace ox {

// Product of the dims; throws ErrorKind::Shape on a negative dim or on overflow of int64.
int64_t checked_numel(const Shape& shape, std::string_view op);
// numel * element_size; throws ErrorKind::Shape on overflow.
int64_t checked_nbytes(int64_t numel, int64_t element_size, std::string_view op);
// Row-major strides for `shape` (the stride of a size-0 or size-1 dim is still the product
// of the dims after it, clamped to at least 1, as PyTorch does).
Strides contiguous_strides(const Shape& shape);
// A dim in [-ndim, ndim) made non-negative; throws ErrorKind::Index otherwise.
int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op);
// NumPy broadcasting; throws ErrorKind::Shape naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op = "broadcast");
// Replaces one -1 in `proposed` so the product equals numel; throws ErrorKind::Shape.
Shape infer_shape(const Shape& proposed, int64_t numel, std::string_view op);

struct Layout;
// The lowest and highest element index a layout reaches (the offset twice when it is empty),
// overflow-checked: a Shape error naming `op` when shape and strides differ in length or the
// reach does not fit 64 bits. For layouts from anywhere
// (as_strided, from_blob); min_index/max_index assume a layout already known to be sane.
std::pair<int64_t, int64_t> checked_reach(const Layout& layout, std::string_view op);

struct Layout {
  Shape shape;
  Strides strides;
  int64_t offset = 0;

  static Layout contiguous(const Shape& shape, int64_t offset = 0);

  int64_t dim() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const;
  bool is_contiguous() const;  // row-major and dense; strides of size-1 dims do not matter
  // True when no two indices reach the same element (no stride-0 broadcast, no overlap).
  bool is_non_overlapping_and_dense() const;
  // The lowest and highest element index reached; only meaningful when numel() > 0.
  int64_t min_index() const;
  int64_t max_index() const;

  // View arithmetic. Each validates its arguments and throws ox::Error naming `op`.
  Layout permute(const Dims& dims) const;
  Layout transpose(int64_t d0, int64_t d1) const;
  Layout narrow(int64_t dim, int64_t start, int64_t length) const;
  Layout slice(int64_t dim, int64_t start, int64_t end, int64_t step) const;
  Layout select(int64_t dim, int64_t index) const;
  Layout expand(const Shape& target) const;
  Layout squeeze() const;
  Layout squeeze(int64_t dim) const;
  Layout unsqueeze(int64_t dim) const;
  Layout flip(const Dims& dims) const;
  Layout diagonal(int64_t offset, int64_t d0, int64_t d1) const;
  Layout unfold(int64_t dim, int64_t size, int64_t step) const;
  // The strided layout that reads this one's elements in row-major order with the new shape,
  // when one exists without copying (PyTorch's computeStride); nullopt otherwise.
  std::optional<Layout> view(const Shape& new_shape) const;
};

// Iteration shape: size-1 dims dropped and neighbouring dims merged wherever every operand
// steps through them as one, so kernels loop over as few and as long dims as possible.
// Always at least one dim.
template <size_t N>
struct MergedDims {
  Shape shape;
  std::array<Strides, N> strides;
};

template <size_t N>
MergedDims<N> merge_dims(const Shape& shape, const std::array<const Strides*, N>& strides) {
  MergedDims<N> out;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    const bool merge = !out.shape.empty() && [&] {
      for (size_t k = 0; k < N; ++k)
        if (out.strides[k].back() != (*strides[k])[d] * shape[d]) return false;
      return true;
    }();
    if (merge) {
      out.shape[out.shape.size() - 1] *= shape[d];
      for (size_t k = 0; k < N; ++k) out.strides[k][out.strides[k].size() - 1] = (*strides[k])[d];
    } else {
      out.shape.push_back(shape[d]);
      for (size_t k = 0; k < N; ++k) out.strides[k].push_back((*strides[k])[d]);
    }
  }
  if (out.shape.empty()) {
    out.shape.push_back(1);
    for (size_t k = 0; k < N; ++k) out.strides[k].push_back(0);
  }
  return out;
}

}  // namespace ox
