// Allocation of a large tensor, written once (zeros), freed, repeated: with the caching
// allocator the pages stay mapped and warm; without it large rounds fault fresh pages in.

#include <benchmark/benchmark.h>
#include <oxmera/oxmera.h>

#include "backend/cpu/cpu_allocator.h"

namespace {

void alloc_zeros(benchmark::State& state) {
  auto& allocator = ox::cpu::cpu_allocator();
  const size_t saved_limit = allocator.cache_limit();
  allocator.set_cache_limit(state.range(0) ? saved_limit : 0);
  const int64_t n = state.range(1) << 18;  // range(1) MiB of f32
  for (auto _ : state) {
    ox::Tensor t = ox::zeros({n});
    benchmark::DoNotOptimize(t.impl());
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
  state.SetLabel(state.range(0) ? "cached" : "uncached (malloc)");
  allocator.set_cache_limit(saved_limit);
}
// 16 MiB stays under glibc's largest mmap threshold (32 MiB), so malloc recycles it too; 64 MiB
// and up are mmapped and unmapped on every call without the cache.
BENCHMARK(alloc_zeros)
    ->ArgsProduct({{1, 0}, {16, 64, 256}})
    ->ArgNames({"cached", "MiB"})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void small_tensor_create(benchmark::State& state) {
  for (auto _ : state) {
    ox::Tensor t = ox::empty({8});
    benchmark::DoNotOptimize(t.impl());
  }
}
BENCHMARK(small_tensor_create);

}  // namespace
