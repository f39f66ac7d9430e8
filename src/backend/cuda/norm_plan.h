#pragma once
// The host half of the CUDA row kernels (norm.cpp, kernels/norm.cu): the kernels' names and the
// launch shapes, chosen from the row length alone so that a row's reduction tree, and so its
// bits, depend on nothing else. Plain functions, tested on the CPU (cuda_norm_test.cpp).

#include <algorithm>
#include <array>
#include <cstdint>

#include "backend/cuda/launch.h"

namespace ox::cuda::detail {

// The kernels of kernels/norm.cu, named "ox_norm_<row>_<dtype>" for each floating dtype.
enum NormKernel : int {
  kSoftmax,
  kSoftmaxBackward,
  kLayerNorm,
  kLayerNormBackward,
  kLayerNormPartials,
  kColumnSum,
  kCrossEntropy,
  kCrossEntropyBackward,
  kWeightTotal,
  kNormKernelCount
};
inline constexpr std::array<const char*, kNormKernelCount> kNormKernelNames = {
    "softmax",
    "softmax_backward",
    "layer_norm",
    "layer_norm_backward",
    "layer_norm_partials",
    "column_sum",
    "cross_entropy",
    "cross_entropy_backward",
    "weight_total"};

// Threads per row's block: a power of two from 32 to 256 (kernels/norm.cu's kMaxThreads), from
// the row length only.
inline unsigned row_threads(int64_t n) { return n <= 64 ? 32u : n <= 1024 ? 128u : 256u; }

// One block per row up to kMaxRowBlocks blocks; the blocks loop over the rest.
inline constexpr int64_t kMaxRowBlocks = 65535;
inline Grid row_grid(int64_t rows, int64_t n) {
  Grid g;
  g.threads = row_threads(n);
  g.blocks = unsigned(std::clamp<int64_t>(rows, 0, kMaxRowBlocks));
  return g;
}

// Rows of one partial sum of the layer-norm weight and bias gradients (the CPU backend's
// blocks, kernels/norm.cu's kRowBlock), and how many partials a column has.
inline constexpr int64_t kNormRowBlock = 64;
inline int64_t row_blocks(int64_t rows) { return (rows + kNormRowBlock - 1) / kNormRowBlock; }

// Rows of a [..., n] array as the CPU backend counts them: none when n is 0.
inline int64_t row_count(const StridedArray& a, int64_t* n_out) {
  const int64_t n = a.shape.empty() ? 1 : a.shape.back();
  *n_out = n;
  return n == 0 ? 0 : a.numel() / n;
}

}  // namespace ox::cuda::detail
