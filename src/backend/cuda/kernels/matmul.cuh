#pragma once
// The arguments of the tiled matmul kernel (kernels/matmul.cu), shared with its launcher
// (backend/cuda/matmul.cpp). Plain C++.

#include <cstdint>

namespace ox::cuda::kernels {

// The tile edge: blocks of kTile x kTile threads, each computing one element of C.
inline constexpr int kMatmulTile = 16;

// dst = beta * dst + alpha * a @ b for one matrix of each batch item; element (i, j) of a
// matrix at i * rs + j * cs (elements), from the batch item's offset.
struct TiledGemm {
  int64_t m, n, k;
  int64_t batches;  // batch items (the kernel reads each one's offsets from an Offsets<3>)
  int64_t a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;
  double alpha, beta;       // floating dtypes (rounded to the accumulator type)
  int64_t alpha_i, beta_i;  // integer dtypes (modulo 2^bits, as the arithmetic wraps)
  int32_t beta_zero;        // dst is not read
};

}  // namespace ox::cuda::kernels
