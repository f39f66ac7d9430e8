// random, bernoulli and randperm (Backend contracts in src/backend/backend.h) on contiguous dst.
// Each element reads exactly the Philox words core/philox.h assigns it (one thread per block of
// words, its lanes in order), and its value comes from kernels/random.cuh, the functions the
// host tests check against the CPU backend: uniform, integer and bernoulli draws are the CPU's
// bits, normals differ by the device's log/sin/cos (a few ULP).
//   ox_random_{uniform32,uniform64,normal,integer}_<dtype>(dst, n, draw)
//   ox_random_bernoulli_<dtype>(dst, n, p, p_dtype, one_p, seed, first_block)
//   ox_random_check_p_init(min_bad)                 min_bad = INT64_MAX
//   ox_random_check_p(p, p_dtype, np, min_bad)      the first p outside [0, 1] (or NaN)
//   ox_random_check_p_report(min_bad, word, site)   reported as the CPU does: value 0, bound 1
//   ox_random_iota_<dtype>(dst, n), ox_random_shuffle_<dtype>(dst, n, seed, first_block)
//     randperm: 0..n-1, then the CPU's Fisher-Yates on one thread (it is sequential)

#include "backend/cuda/kernels/check.cuh"
#include "backend/cuda/kernels/common.cuh"
#include "backend/cuda/kernels/random.cuh"

OXMERA_DEFINE_KERNEL_STAMP;

using namespace ox::cuda::kernels;
using ox::cuda::kernels::rng::Draw;

namespace {

// p's element i as a double (cpu::convert<double>): p_dtype 0 f32, 1 f64, 2 f16, 3 bf16.
__device__ inline double probability(const void* p, int32_t p_dtype, int64_t i) {
  switch (p_dtype) {
    case 0:
      return double(static_cast<const float*>(p)[i]);
    case 1:
      return static_cast<const double*>(p)[i];
    case 2:
      return rng::to_double(static_cast<const rng::F16*>(p)[i]);
    default:
      return rng::to_double(static_cast<const rng::BF16*>(p)[i]);
  }
}

// value(block, lane, i) for every element i < n: one Philox block per loop step.
template <class T, class Value>
__device__ inline void draw_blocks(T* __restrict__ dst, int64_t n, int per, uint64_t seed,
                                   uint64_t first, Value&& value) {
  const int64_t blocks = (n + per - 1) / per;
  grid_stride(blocks, [&](int64_t j) {
    const ox::philox::Block blk = ox::philox::block(seed, first + uint64_t(j));
    const int64_t base = j * per;
    for (int lane = 0; lane < per && base + lane < n; ++lane)
      dst[base + lane] = value(blk, lane, base + lane);
  });
}

}  // namespace

#define OX_RANDOM_KIND(KIND, PER, NAME, T)                                             \
  extern "C" __global__ void ox_random_##KIND##_##NAME(T* __restrict__ dst, int64_t n, \
                                                       Draw<T> d) {                    \
    draw_blocks(dst, n, PER, d.seed, d.first_block,                                    \
                [&](const ox::philox::Block& blk, int lane, int64_t) {                 \
                  return rng::KIND##_value<T>(blk, lane, d);                           \
                });                                                                    \
  }
#define OX_RANDOM(NAME, T)                                                                        \
  OX_RANDOM_KIND(uniform32, 4, NAME, T)                                                           \
  OX_RANDOM_KIND(uniform64, 2, NAME, T)                                                           \
  OX_RANDOM_KIND(normal, 2, NAME, T)                                                              \
  OX_RANDOM_KIND(integer, 2, NAME, T)                                                             \
  extern "C" __global__ void ox_random_bernoulli_##NAME(                                          \
      T* __restrict__ dst, int64_t n, const void* __restrict__ p, int32_t p_dtype, int32_t one_p, \
      uint64_t seed, uint64_t first) {                                                            \
    draw_blocks(dst, n, 4, seed, first, [&](const ox::philox::Block& blk, int lane, int64_t i) {  \
      return rng::bernoulli_value<T>(blk, lane, probability(p, p_dtype, one_p ? 0 : i));          \
    });                                                                                           \
  }                                                                                               \
  extern "C" __global__ void ox_random_iota_##NAME(T* __restrict__ dst, int64_t n) {              \
    grid_stride(n, [&](int64_t i) { dst[i] = rng::from_int64<T>(i); });                           \
  }                                                                                               \
  extern "C" __global__ void ox_random_shuffle_##NAME(T* __restrict__ dst, int64_t n,             \
                                                      uint64_t seed, uint64_t first) {            \
    if (blockIdx.x != 0 || threadIdx.x != 0) return;                                              \
    for (int64_t i = n - 1; i > 0; --i) {                                                         \
      const int64_t j = rng::shuffle_partner(seed, first, i);                                     \
      const T t = dst[i];                                                                         \
      dst[i] = dst[j];                                                                            \
      dst[j] = t;                                                                                 \
    }                                                                                             \
  }

OX_RANDOM(f32, float)
OX_RANDOM(f64, double)
OX_RANDOM(f16, rng::F16)
OX_RANDOM(bf16, rng::BF16)
OXMERA_FOR_EACH_INT_DTYPE(OX_RANDOM)
#undef OX_RANDOM
#undef OX_RANDOM_KIND

extern "C" __global__ void ox_random_check_p_init(unsigned long long* min_bad) {
  if (blockIdx.x == 0 && threadIdx.x == 0) *min_bad = 0x7fffffffffffffffull;
}

extern "C" __global__ void ox_random_check_p(const void* __restrict__ p, int32_t p_dtype,
                                             int64_t np, unsigned long long* min_bad) {
  grid_stride(np, [&](int64_t i) {
    if (!rng::probability_ok(probability(p, p_dtype, i)))
      atomicMin(min_bad, static_cast<unsigned long long>(i));
  });
}

extern "C" __global__ void ox_random_check_p_report(const unsigned long long* min_bad,
                                                    CheckWord* word, int32_t site) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  const unsigned long long i = *min_bad;
  if (i != 0x7fffffffffffffffull) report_check(word, site, 0, int64_t(i), 1);
}
