// The machine's ceilings, measured by our own small kernels (not by oxmera): FMA peak and
// STREAM triad bandwidth, both on all cores. This file alone is built with -O3 -march=native
// -ffp-contract=fast (bench/CMakeLists.txt), so the FMA loop uses the widest vectors the CPU
// has; it includes no standard templates that another translation unit could share, so no
// -march=native code leaks into the rest of the program through the linker's COMDAT choice.

#include <omp.h>

#include <cstdint>
#include <cstdlib>

#include "harness.h"

namespace oxbench {

namespace {

#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif
using vfloat = float __attribute__((vector_size(kVectorBytes)));
constexpr int kLanes = kVectorBytes / 4;
// Independent accumulators: more than FMA latency (4 cycles) x FMA pipes (2) so the pipes
// never wait, and with the two constants still within 16 vector registers (AVX2).
constexpr int kAccumulators = 12;

double now() { return omp_get_wtime(); }

// acc = acc * m + a, kAccumulators chains; -ffp-contract=fast makes each one FMA.
[[gnu::noinline]] float fma_chains(int64_t iters, float seed) {
  vfloat acc[kAccumulators];
  for (int j = 0; j < kAccumulators; ++j) acc[j] = vfloat{} + (seed + float(j));
  const vfloat m = vfloat{} + 0.99999994f, a = vfloat{} + 1e-7f;  // stays normal, no overflow
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kAccumulators; ++j) acc[j] = acc[j] * m + a;
  }
  vfloat total = vfloat{};
  for (int j = 0; j < kAccumulators; ++j) total += acc[j];
  float s = 0;
  for (int l = 0; l < kLanes; ++l) s += total[l];
  return s;
}

// Best of `reps` (the ceiling is what the machine can do, so the best run, as STREAM reports).
template <class F>
double best_seconds(int reps, F&& run) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    run();
    const double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

volatile float g_fma_sink;

}  // namespace

double fma_peak_gflops(int threads) {
  // ~0.1 s a run on a 3 GHz core at 2 FMA/cycle.
  constexpr int64_t iters = int64_t{1} << 24;
  fma_chains(iters / 16, 1.f);  // wake the core up to its clock
  const double t = best_seconds(5, [&] {
#pragma omp parallel num_threads(threads)
    g_fma_sink = fma_chains(iters, float(omp_get_thread_num()));
  });
  const double flops = double(iters) * kAccumulators * kLanes * 2 * threads;
  return flops / t * 1e-9;
}

double triad_GBps(int threads) {
  // 128 MiB an array, 3 arrays: far beyond any last-level cache of today (32 MiB here).
  constexpr int64_t n = int64_t{1} << 24;
  auto* a = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  auto* b = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  auto* c = static_cast<double*>(std::aligned_alloc(64, n * sizeof(double)));
  // First touch by the threads that will use the pages, with the same static split.
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) {
    a[i] = 0.0;
    b[i] = 1.0;
    c[i] = 2.0;
  }
  const double s = 3.0;
  const double t = best_seconds(20, [&] {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
  });
  g_fma_sink = float(a[n / 2]);
  std::free(a);
  std::free(b);
  std::free(c);
  return 3.0 * sizeof(double) * double(n) / t * 1e-9;  // STREAM's count: no write-allocate
}

}  // namespace oxbench
