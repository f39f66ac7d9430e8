#include "oxmera/core/layout.h"

#include <algorithm>
#include <ostream>
#include <sstream>

#include "oxmera/core/error.h"

namespace ox {

std::string to_string(const Dims& d) {
  std::ostringstream out;
  out << d;
  return out.str();
}

std::ostream& operator<<(std::ostream& os, const Dims& d) {
  os << '[';
  for (size_t i = 0; i < d.size(); ++i) os << (i ? ", " : "") << d[i];
  return os << ']';
}

int64_t checked_numel(const Shape& shape, std::string_view op) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : shape) {
    OX_CHECK(s >= 0, Shape, op, "negative dimension ", s, " in shape ", shape);
    overflow |= __builtin_mul_overflow(n, s, &n);
  }
  // A zero anywhere makes the product 0 even if a partial product overflowed first.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  OX_CHECK(!overflow, Shape, op, "shape ", shape, " has more than 2^63 elements");
  return n;
}

int64_t checked_nbytes(int64_t numel, int64_t element_size, std::string_view op) {
  int64_t bytes = 0;
  OX_CHECK(!__builtin_mul_overflow(numel, element_size, &bytes), Shape, op, numel, " elements of ",
           element_size, " bytes overflow a 64-bit byte count");
  return bytes;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides = Strides::filled(shape.size(), 0);
  int64_t running = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = running;
    // Only a shape with a 0 in it can overflow here (checked_numel refuses the others, e.g.
    // [2^62, 2^62, 0]); such strides never reach an element, so saturate instead of wrapping.
    if (__builtin_mul_overflow(running, std::max<int64_t>(shape[i], 1), &running))
      running = INT64_MAX;
  }
  return strides;
}

int64_t wrap_dim(int64_t dim, int64_t ndim, std::string_view op) {
  const int64_t lo = ndim == 0 ? -1 : -ndim, hi = ndim == 0 ? 0 : ndim - 1;  // 0-d takes 0/-1
  OX_CHECK(dim >= lo && dim <= hi, Index, op, "dimension ", dim, " out of range for a ", ndim,
           "-d tensor (expected ", lo, " to ", hi, ")");
  return dim < 0 ? dim + std::max<int64_t>(ndim, 1) : dim;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  const size_t n = std::max(a.size(), b.size());
  Shape out = Shape::filled(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    OX_CHECK(da == db || da == 1 || db == 1, Shape, op, "shapes ", a, " and ", b,
             " cannot be broadcast (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape infer_shape(const Shape& proposed, int64_t numel, std::string_view op) {
  Shape out = proposed;
  int64_t known = 1;
  int infer_at = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      OX_CHECK(infer_at < 0, Shape, op, "only one dimension can be -1, got ", proposed);
      infer_at = static_cast<int>(i);
      continue;
    }
    OX_CHECK(out[i] >= 0, Shape, op, "invalid dimension ", out[i], " in shape ", proposed);
    OX_CHECK(!__builtin_mul_overflow(known, out[i], &known), Shape, op, "shape ", proposed,
             " has more than 2^63 elements");
  }
  if (infer_at >= 0) {
    OX_CHECK(known != 0 && numel % known == 0, Shape, op, "shape ", proposed, " is invalid for ",
             numel, " elements");
    out[infer_at] = numel / known;
  } else {
    OX_CHECK(known == numel, Shape, op, "shape ", proposed, " is invalid for ", numel, " elements");
  }
  return out;
}

std::pair<int64_t, int64_t> checked_reach(const Layout& l, std::string_view op) {
  OX_CHECK(l.shape.size() == l.strides.size(), Shape, op, "shape ", l.shape, " and strides ",
           l.strides, " differ in length");
  int64_t lo = l.offset, hi = l.offset;
  if (std::find(l.shape.begin(), l.shape.end(), 0) != l.shape.end()) return {lo, hi};
  for (size_t i = 0; i < l.shape.size(); ++i) {
    int64_t step = 0;
    const bool overflow = __builtin_mul_overflow(l.shape[i] - 1, l.strides[i], &step) ||
                          __builtin_add_overflow(step < 0 ? lo : hi, step, step < 0 ? &lo : &hi);
    OX_CHECK(!overflow, Shape, op, "strides ", l.strides, " with offset ", l.offset,
             " overflow 64 bits for shape ", l.shape);
  }
  return {lo, hi};
}

Layout Layout::contiguous(const Shape& shape, int64_t offset) {
  return {shape, contiguous_strides(shape), offset};
}

int64_t Layout::numel() const {
  // A 0 first: [2^62, 2^62, 0] is a valid empty shape whose partial products overflow.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

bool Layout::is_contiguous() const {
  // Empty layouts are contiguous whatever their strides (as PyTorch), so look for a 0 first.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return true;
  int64_t expected = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    if (shape[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

bool Layout::is_non_overlapping_and_dense() const {
  // An empty layout reaches no element twice, whatever its strides.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return true;
  // Dense with some permutation: sort dims by stride and check they tile exactly.
  Dims order = Dims::filled(shape.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::sort(order.begin(), order.end(),
            [&](int64_t a, int64_t b) { return strides[a] < strides[b]; });
  int64_t expected = 1;
  for (int64_t d : order) {
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

int64_t Layout::min_index() const {
  int64_t lo = offset;
  for (size_t i = 0; i < shape.size(); ++i)
    if (strides[i] < 0) lo += (shape[i] - 1) * strides[i];
  return lo;
}

int64_t Layout::max_index() const {
  int64_t hi = offset;
  for (size_t i = 0; i < shape.size(); ++i)
    if (strides[i] > 0) hi += (shape[i] - 1) * strides[i];
  return hi;
}

Layout Layout::permute(const Dims& dims) const {
  OX_CHECK(static_cast<int64_t>(dims.size()) == dim(), Shape, "permute", "got ", dims.size(),
           " dims ", dims, " for a tensor of shape ", shape);
  Layout out{Shape::filled(dims.size(), 0), Strides::filled(dims.size(), 0), offset};
  Dims seen(dims.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = wrap_dim(dims[i], dim(), "permute");
    OX_CHECK(!seen[d], Value, "permute", "dimension ", dims[i], " repeats in ", dims);
    seen[d] = 1;
    out.shape[i] = shape[d];
    out.strides[i] = strides[d];
  }
  return out;
}

Layout Layout::transpose(int64_t d0, int64_t d1) const {
  Layout out = *this;
  if (dim() == 0) {
    wrap_dim(d0, 0, "transpose");
    wrap_dim(d1, 0, "transpose");
    return out;
  }
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  std::swap(out.shape[d0], out.shape[d1]);
  std::swap(out.strides[d0], out.strides[d1]);
  return out;
}

Layout Layout::narrow(int64_t d, int64_t start, int64_t length) const {
  OX_CHECK(dim() > 0, Shape, "narrow", "cannot narrow a 0-d tensor");
  d = wrap_dim(d, dim(), "narrow");
  const int64_t size = shape[d];
  if (start < 0 && start >= -size) start += size;
  OX_CHECK(start >= 0 && start <= size, Index, "narrow", "start ", start,
           " out of range for dimension ", d, " of size ", size);
  OX_CHECK(length >= 0 && length <= size - start, Index, "narrow", "start ", start, " + length ",
           length, " exceeds dimension ", d, " of size ", size);
  Layout out = *this;
  out.shape[d] = length;
  if (length > 0) out.offset += start * strides[d];
  return out;
}

Layout Layout::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  OX_CHECK(dim() > 0, Shape, "slice", "cannot slice a 0-d tensor");
  OX_CHECK(step > 0, Value, "slice", "step must be positive, got ", step);
  d = wrap_dim(d, dim(), "slice");
  const int64_t size = shape[d];
  // Python slice clamping: negatives count from the end, then clamp to [0, size].
  auto clamp = [size](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
  start = clamp(start);
  end = std::max(clamp(end), start);
  Layout out = *this;
  out.shape[d] = end == start ? 0 : (end - start - 1) / step + 1;
  if (out.shape[d] > 0) out.offset += start * strides[d];
  OX_CHECK(!__builtin_mul_overflow(strides[d], step, &out.strides[d]), Value, "slice", "step ",
           step, " overflows the stride of dimension ", d);
  return out;
}

Layout Layout::select(int64_t d, int64_t index) const {
  OX_CHECK(dim() > 0, Index, "select", "cannot select from a 0-d tensor");
  d = wrap_dim(d, dim(), "select");
  const int64_t size = shape[d];
  OX_CHECK(index >= -size && index < size, Index, "select", "index ", index,
           " out of range for dimension ", d, " of size ", size);
  if (index < 0) index += size;
  Layout out = *this;
  out.offset += index * strides[d];
  out.shape.erase(out.shape.begin() + d);
  out.strides.erase(out.strides.begin() + d);
  return out;
}

Layout Layout::expand(const Shape& target) const {
  OX_CHECK(target.size() >= shape.size(), Shape, "expand", "cannot expand shape ", shape, " to ",
           target, " with fewer dimensions");
  const size_t lead = target.size() - shape.size();
  Layout out{target, Strides(target.size(), 0), offset};
  for (size_t i = 0; i < target.size(); ++i) {
    if (i < lead) {
      OX_CHECK(target[i] >= 0, Shape, "expand", "new leading dimension ", target[i],
               " must be non-negative in ", target);
      continue;
    }
    const int64_t have = shape[i - lead];
    int64_t want = target[i];
    if (want == -1) want = out.shape[i] = have;
    OX_CHECK(want == have || have == 1, Shape, "expand", "cannot expand shape ", shape, " to ",
             target, " (dimension ", i, ": ", have, " to ", want, ")");
    OX_CHECK(want >= 0, Shape, "expand", "invalid size ", want, " in ", target);
    out.strides[i] = want == have ? strides[i - lead] : 0;
  }
  checked_numel(out.shape, "expand");
  return out;
}

Layout Layout::squeeze() const {
  Layout out{{}, {}, offset};
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) {
      out.shape.push_back(shape[i]);
      out.strides.push_back(strides[i]);
    }
  return out;
}

Layout Layout::squeeze(int64_t d) const {
  if (dim() == 0) {
    wrap_dim(d, 0, "squeeze");
    return *this;
  }
  d = wrap_dim(d, dim(), "squeeze");
  if (shape[d] != 1) return *this;
  Layout out = *this;
  out.shape.erase(out.shape.begin() + d);
  out.strides.erase(out.strides.begin() + d);
  return out;
}

Layout Layout::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Layout out = *this;
  const int64_t stride = d < dim() ? shape[d] * strides[d] : 1;
  out.shape.insert(out.shape.begin() + d, 1);
  out.strides.insert(out.strides.begin() + d, stride);
  return out;
}

Layout Layout::flip(const Dims& dims) const {
  Layout out = *this;
  Dims seen(std::max<size_t>(shape.size(), 1), 0);
  for (int64_t raw : dims) {
    const int64_t d = wrap_dim(raw, dim(), "flip");
    OX_CHECK(!seen[d], Value, "flip", "dimension ", raw, " repeats in ", dims);
    seen[d] = 1;
    if (dim() == 0 || shape[d] == 0) continue;
    out.offset += (shape[d] - 1) * strides[d];
    out.strides[d] = -strides[d];
  }
  return out;
}

Layout Layout::diagonal(int64_t diag_offset, int64_t d0, int64_t d1) const {
  OX_CHECK(dim() >= 2, Shape, "diagonal", "needs at least 2 dimensions, got shape ", shape);
  d0 = wrap_dim(d0, dim(), "diagonal");
  d1 = wrap_dim(d1, dim(), "diagonal");
  OX_CHECK(d0 != d1, Value, "diagonal", "dimensions ", d0, " and ", d1, " must differ");
  int64_t length = 0;
  Layout out{{}, {}, offset};
  if (diag_offset >= 0) {
    length = std::max<int64_t>(std::min(shape[d0], shape[d1] - diag_offset), 0);
    if (length > 0) out.offset += diag_offset * strides[d1];
  } else {
    length = std::max<int64_t>(std::min(shape[d0] + diag_offset, shape[d1]), 0);
    if (length > 0) out.offset -= diag_offset * strides[d0];
  }
  for (int64_t i = 0; i < dim(); ++i)
    if (i != d0 && i != d1) {
      out.shape.push_back(shape[i]);
      out.strides.push_back(strides[i]);
    }
  out.shape.push_back(length);
  out.strides.push_back(strides[d0] + strides[d1]);
  return out;
}

Layout Layout::unfold(int64_t d, int64_t size, int64_t step) const {
  d = wrap_dim(d, dim(), "unfold");  // a 0-d layout takes dim 0 or -1, as PyTorch
  const int64_t extent = dim() == 0 ? 1 : shape[d];
  OX_CHECK(size >= 0 && size <= extent, Value, "unfold", "window size ", size,
           " exceeds dimension ", d, " of size ", extent);
  OX_CHECK(step > 0, Value, "unfold", "step must be positive, got ", step);
  Layout out = *this;
  if (dim() == 0) {
    out.shape = {size};
    out.strides = {1};
    return out;
  }
  out.shape[d] = (extent - size) / step + 1;
  out.shape.push_back(size);
  out.strides.push_back(strides[d]);
  OX_CHECK(!__builtin_mul_overflow(strides[d], step, &out.strides[d]), Value, "unfold", "step ",
           step, " overflows the stride of dimension ", d);
  return out;
}

std::optional<Layout> Layout::view(const Shape& new_shape) const {
  Layout out{new_shape, Strides::filled(new_shape.size(), 0), offset};
  if (dim() == 0 || numel() == 0) {
    out.strides = contiguous_strides(new_shape);
    return out;
  }
  // Walk both shapes from the innermost dim, matching chunks of the old layout that are
  // contiguous among themselves to runs of new dims with the same element count.
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = dim() - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= shape[tensor_d];
    if (tensor_d == 0 ||
        (shape[tensor_d - 1] != 1 && strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
        out.strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = strides[tensor_d - 1];
        tensor_numel = view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace ox
