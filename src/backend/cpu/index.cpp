// Indexing kernels: gather through index arrays, and nonzero (scatter is scatter.cpp). Index
// values are data, so gather and scatter check every one of them before they write anything.

#include "backend/cpu/index_walk.h"

namespace ox::cpu {

namespace {

using namespace index_walk;

// ---- Gather --------------------------------------------------------------------------------

template <class U, class I>
void gather_kernel(const StridedArray& dst, const StridedArray& src,
                   const std::vector<IndexOperand>& indices) {
  const Walk w = make_walk(dst.shape, walk_strides(dst, src, indices), all_dims(dst.shape.size()));
  const IndexBases ib = index_bases(indices, src.dtype);
  char* const d0 = static_cast<char*>(dst.data);
  const char* const s0 = static_cast<const char*>(src.data);
  const size_t nidx = indices.size();
  parallel_for(0, w.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    walk_runs(w, b, e, [&](const int64_t* off, const int64_t* step, int64_t n) {
      char* d = d0 + off[0];
      const char* s = s0 + off[1];
      bool fixed = true;  // the indices do not move along this stretch (a row of embedding)
      for (size_t k = 0; k < nidx; ++k) fixed = fixed && step[2 + k] == 0;
      if (fixed) {
        s += index_offset<I>(ib, off, step, 0);
        if (step[0] == sizeof(U) && step[1] == sizeof(U)) {
          std::memcpy(d, s, static_cast<size_t>(n) * sizeof(U));
          return;
        }
        for (int64_t i = 0; i < n; ++i)
          *reinterpret_cast<U*>(d + i * step[0]) = *reinterpret_cast<const U*>(s + i * step[1]);
        return;
      }
      if (nidx == 1) {  // gather, index_select, take: one index, no inner loop over indices
        const char* ip = ib.base[0] + off[2];
        const int64_t is = step[2], size = ib.size[0], jump = ib.jump[0];
        for (int64_t i = 0; i < n; ++i) {
          int64_t v = *reinterpret_cast<const I*>(ip + i * is);
          if (v < 0) v += size;
          *reinterpret_cast<U*>(d + i * step[0]) =
              *reinterpret_cast<const U*>(s + i * step[1] + v * jump);
        }
        return;
      }
      for (int64_t i = 0; i < n; ++i)
        *reinterpret_cast<U*>(d + i * step[0]) =
            *reinterpret_cast<const U*>(s + i * step[1] + index_offset<I>(ib, off, step, i));
    });
  });
}

// ---- Nonzero -------------------------------------------------------------------------------

template <class T>
inline bool is_nonzero(const char* p) {
  if constexpr (is_half_v<T>)
    return static_cast<float>(*reinterpret_cast<const T*>(p)) != 0.0f;
  else
    return *reinterpret_cast<const T*>(p) != T(0);
}

// Fixed-size chunks: each counts its nonzeros, then writes its rows from the prefix sum.
constexpr int64_t kNonzeroChunk = 1 << 16;

template <class T>
void nonzero_kernel(const StridedArray& dst, const StridedArray& src) {
  const int64_t numel = src.numel();
  if (numel == 0) return;
  const Shape& shape = src.shape;
  const size_t nd = shape.size();
  const Strides sb = byte_strides(src);
  const Walk w = make_walk(shape, {sb}, all_dims(nd));
  const char* base = static_cast<const char*>(src.data);
  const int64_t chunks = (numel + kNonzeroChunk - 1) / kNonzeroChunk;
  std::vector<int64_t> start(static_cast<size_t>(chunks) + 1, 0);
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t count = 0;
      walk_runs(w, c * kNonzeroChunk, std::min(numel, (c + 1) * kNonzeroChunk),
                [&](const int64_t* off, const int64_t* step, int64_t n) {
                  const char* p = base + off[0];
                  for (int64_t i = 0; i < n; ++i) count += is_nonzero<T>(p + i * step[0]);
                });
      start[static_cast<size_t>(c) + 1] = count;
    }
  });
  for (int64_t c = 0; c < chunks; ++c) start[c + 1] += start[c];
  int64_t* out = static_cast<int64_t*>(dst.data);
  OX_ASSERT(dst.shape.size() == 2 && dst.shape[0] == start[chunks],
            "nonzero given an output of shape ", dst.shape, " for ", start[chunks], " elements");
  if (nd == 0) return;  // rows of no coordinates
  parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) {
      int64_t pos = c * kNonzeroChunk;
      const int64_t end = std::min(numel, pos + kNonzeroChunk);
      Dims index(nd, 0);
      int64_t rest = pos, offset = 0;
      for (size_t d = nd; d-- > 0;) {
        index[d] = rest % shape[d];
        rest /= shape[d];
        offset += index[d] * sb[d];
      }
      int64_t* row = out + start[c] * static_cast<int64_t>(nd);
      const size_t last = nd - 1;
      const int64_t inner = shape[last], step = sb[last];
      while (pos < end) {  // a stretch along the last dim, then an odometer step
        const int64_t n = std::min(inner - index[last], end - pos);
        const char* p = base + offset;
        for (int64_t j = 0; j < n; ++j) {
          if (is_nonzero<T>(p + j * step)) {
            std::copy(index.begin(), index.begin() + last, row);
            row[last] = index[last] + j;
            row += nd;
          }
        }
        pos += n;
        index[last] += n;
        offset += n * step;
        for (size_t d = last + 1; d-- > 0;) {
          if (index[d] < shape[d]) break;
          offset -= shape[d] * sb[d];
          index[d] = 0;
          if (d == 0) break;
          ++index[d - 1];
          offset += sb[d - 1];
        }
      }
    }
  });
}

}  // namespace

void gather(const StridedArray& dst, const StridedArray& src,
            const std::vector<IndexOperand>& indices) {
  if (dst.numel() == 0) return;
  if (indices.empty()) return cpu::copy(dst, src);
  dispatch_index(indices[0].index.dtype, [&]<class I>() {
    check_all<I>(indices);
    dispatch_bytes(dtype_size(dst.dtype),
                   [&]<class U>() { gather_kernel<U, I>(dst, src, indices); });
  });
}

void nonzero(const StridedArray& dst, const StridedArray& src) {
  dispatch_dtype(src.dtype, [&]<class T>() { nonzero_kernel<T>(dst, src); });
}

}  // namespace ox::cpu
