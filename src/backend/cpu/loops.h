#pragma once
// Strided iteration shared by CPU kernels: merged dims, runs along the innermost dim.

#include <array>
#include <cstdint>

#include "backend/backend.h"
#include "backend/cpu/parallel.h"

namespace ox::cpu {

// Elements per parallel task for cheap elementwise work: big enough that a thread's share
// outweighs waking it.
inline constexpr int64_t kElementwiseGrain = 32768;

// Calls run(ptrs, strides_in_bytes, n) for each stretch of n elements along the innermost
// merged dim, over the row-major element range [begin, end) of `arrays`' common shape.
template <size_t N, class Run>
void for_each_run(const MergedDims<N>& dims, const std::array<char*, N>& base,
                  const std::array<int64_t, N>& elem_size, int64_t begin, int64_t end, Run&& run) {
  const size_t nd = dims.shape.size();
  const int64_t inner = dims.shape[nd - 1];
  std::array<int64_t, N> inner_bytes;
  for (size_t k = 0; k < N; ++k) inner_bytes[k] = dims.strides[k][nd - 1] * elem_size[k];
  // Outer multi-index of `begin`.
  Dims index(nd, 0);
  int64_t rest = begin / inner;
  for (size_t d = nd - 1; d-- > 0;) {
    index[d] = rest % dims.shape[d];
    rest /= dims.shape[d];
  }
  int64_t pos = begin % inner;
  while (begin < end) {
    const int64_t n = std::min(inner - pos, end - begin);
    std::array<char*, N> ptrs;
    for (size_t k = 0; k < N; ++k) {
      int64_t offset = pos * dims.strides[k][nd - 1];
      for (size_t d = 0; d + 1 < nd; ++d) offset += index[d] * dims.strides[k][d];
      ptrs[k] = base[k] + offset * elem_size[k];
    }
    run(ptrs, inner_bytes, n);
    begin += n;
    pos = 0;
    for (size_t d = nd - 1; d-- > 0;) {  // odometer step over the outer dims
      if (++index[d] < dims.shape[d]) break;
      index[d] = 0;
    }
  }
}

// Parallel for_each_run over all elements of arrays that share one shape.
template <size_t N, class Run>
void parallel_runs(const std::array<const StridedArray*, N>& arrays, Run&& run,
                   int64_t grain = kElementwiseGrain) {
  const int64_t numel = arrays[0]->numel();
  if (numel == 0) return;
  std::array<const Strides*, N> strides;
  std::array<char*, N> base;
  std::array<int64_t, N> elem_size;
  for (size_t k = 0; k < N; ++k) {
    strides[k] = &arrays[k]->strides;
    base[k] = static_cast<char*>(arrays[k]->data);
    elem_size[k] = static_cast<int64_t>(dtype_size(arrays[k]->dtype));
  }
  const MergedDims<N> dims = merge_dims<N>(arrays[0]->shape, strides);
  parallel_for(0, numel, grain,
               [&](int64_t b, int64_t e) { for_each_run<N>(dims, base, elem_size, b, e, run); });
}

}  // namespace ox::cpu
