// matmul (Backend contract in src/backend/backend.h) where cuBLAS does not run it: integer
// dtypes, and every floating dtype when cuBLAS is missing or turned off (OXMERA_CUDA_NO_CUBLAS).
// Plus the strided copy the cuBLAS path uses to make operands contiguous.
//   ox_matmul_tiled_<dtype>(c, a, b, TiledGemm, Offsets<3> batch)
//     kMatmulTile x kMatmulTile threads per block, one element of C each; tiles of A and B go
//     through shared memory. Each element sums its products in k order (f32 for f32 and the
//     16-bit floats, f64 for f64, integers modulo 2^bits), so the bits do not depend on the
//     grid. Batch item t of the grid's z walk reads its offsets from `batch` (0: c, 1: a, 2: b).
//   ox_matmul_copy_w{1,2,4,8}(dst, src, n, Offsets<2>)   dst[i] = src[i] by element width

#include <type_traits>

#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/matmul.cuh"
#include "backend/cuda/kernels/offsets.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;

namespace {

// The accumulator of each storage type.
template <class T>
struct AccOf {
  using type = T;  // f32, f64
};
template <>
struct AccOf<F16> {
  using type = float;
};
template <>
struct AccOf<BF16> {
  using type = float;
};
template <>
struct AccOf<int64_t> {
  using type = uint64_t;
};
template <>
struct AccOf<int32_t> {
  using type = uint32_t;
};
template <>
struct AccOf<int16_t> {
  using type = uint32_t;
};
template <>
struct AccOf<int8_t> {
  using type = uint32_t;
};
template <>
struct AccOf<uint8_t> {
  using type = uint32_t;
};

template <class A, class T>
__device__ inline A load(T v) {
  if constexpr (std::is_same_v<T, F16>)
    return ox::detail::half_bits_to_float(v.bits);
  else if constexpr (std::is_same_v<T, BF16>)
    return ox::detail::bfloat16_bits_to_float(v.bits);
  else
    return static_cast<A>(v);  // integers: sign-extended, then modulo 2^bits of A
}

template <class T, class A>
__device__ inline T store(A v) {
  if constexpr (std::is_same_v<T, F16>)
    return {ox::detail::float_to_half_bits(v)};
  else if constexpr (std::is_same_v<T, BF16>)
    return {ox::detail::float_to_bfloat16_bits(v)};
  else
    return static_cast<T>(v);  // integers: the low bits (modular)
}

template <class A>
__device__ inline A madd(A acc, A x, A y) {
  if constexpr (std::is_same_v<A, float>)
    return fmaf(x, y, acc);
  else if constexpr (std::is_same_v<A, double>)
    return fma(x, y, acc);
  else
    return acc + x * y;  // unsigned: wraps
}

template <class T>
__device__ inline void tiled(T* __restrict__ c, const T* __restrict__ a, const T* __restrict__ b,
                             const TiledGemm& g, const Offsets<3>& batch) {
  using A = typename AccOf<T>::type;
  constexpr int kT = kMatmulTile;
  __shared__ A as[kT][kT];
  __shared__ A bs[kT][kT];
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const int64_t tiles_m = (g.m + kT - 1) / kT, tiles_n = (g.n + kT - 1) / kT;
  A alpha, beta;
  if constexpr (std::is_floating_point_v<A>) {
    alpha = static_cast<A>(g.alpha);
    beta = static_cast<A>(g.beta);
  } else {
    alpha = static_cast<A>(static_cast<uint64_t>(g.alpha_i));
    beta = static_cast<A>(static_cast<uint64_t>(g.beta_i));
  }
  // Every loop bound below depends on the block only: all its threads reach each barrier.
  for (int64_t t = blockIdx.z; t < g.batches; t += gridDim.z) {
    int64_t off[3];
    batch.get(t, off);
    T* const ct = c + off[0];
    const T* const at = a + off[1];
    const T* const bt = b + off[2];
    for (int64_t tm = blockIdx.y; tm < tiles_m; tm += gridDim.y) {
      for (int64_t tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
        const int64_t i = tm * kT + ty, j = tn * kT + tx;
        A acc = A(0);
        for (int64_t k0 = 0; k0 < g.k; k0 += kT) {
          const int64_t ka = k0 + tx, kb = k0 + ty;
          as[ty][tx] = i < g.m && ka < g.k ? load<A>(at[i * g.a_rs + ka * g.a_cs]) : A(0);
          bs[ty][tx] = kb < g.k && j < g.n ? load<A>(bt[kb * g.b_rs + j * g.b_cs]) : A(0);
          __syncthreads();
          // Padding past K adds 0 * 0: acc (never -0) is unchanged.
          for (int kk = 0; kk < kT; ++kk) acc = madd(acc, as[ty][kk], bs[kk][tx]);
          __syncthreads();
        }
        if (i < g.m && j < g.n) {
          T* const out = ct + i * g.c_rs + j * g.c_cs;
          A v = alpha * acc;
          if (!g.beta_zero) v = madd(v, beta, load<A>(*out));
          *out = store<T>(v);
        }
      }
    }
  }
}

}  // namespace

#define OX_TILED(NAME, T)                                                                       \
  extern "C" __global__ void ox_matmul_tiled_##NAME(T* __restrict__ c, const T* __restrict__ a, \
                                                    const T* __restrict__ b, TiledGemm g,       \
                                                    Offsets<3> batch) {                         \
    tiled<T>(c, a, b, g, batch);                                                                \
  }
OX_TILED(f32, float)
OX_TILED(f64, double)
OX_TILED(f16, F16)
OX_TILED(bf16, BF16)
OX_TILED(i64, int64_t)
OX_TILED(i32, int32_t)
OX_TILED(i16, int16_t)
OX_TILED(i8, int8_t)
OX_TILED(u8, uint8_t)
#undef OX_TILED

#define OX_COPY(WIDTH, T)                                                        \
  extern "C" __global__ void ox_matmul_copy_w##WIDTH(                            \
      T* __restrict__ dst, const T* __restrict__ src, int64_t n, Offsets<2> o) { \
    grid_stride(n, [&](int64_t i) {                                              \
      int64_t off[2];                                                            \
      o.get(i, off);                                                             \
      dst[off[0]] = src[off[1]];                                                 \
    });                                                                          \
  }
OX_COPY(1, uint8_t)
OX_COPY(2, uint16_t)
OX_COPY(4, uint32_t)
OX_COPY(8, uint64_t)
#undef OX_COPY
