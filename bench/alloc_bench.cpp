// Allocation of a large tensor, written once, freed, repeated: with the caching allocator the
// pages stay mapped and warm; without it every round faults 16 MiB of fresh pages in.

#include <benchmark/benchmark.h>
#include <oxmera/oxmera.h>

#include "backend/cpu/cpu_allocator.h"

namespace {

void alloc_fill_16M(benchmark::State& state) {
  auto& allocator = ox::cpu::cpu_allocator();
  const size_t saved_limit = allocator.cache_limit();
  allocator.set_cache_limit(state.range(0) ? saved_limit : 0);
  const int64_t n = int64_t{1} << 22;  // 4 Mi f32 = 16 MiB
  for (auto _ : state) {
    ox::Tensor t = ox::zeros({n});
    benchmark::DoNotOptimize(t.impl());
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
  state.SetLabel(state.range(0) ? "cached" : "uncached");
  allocator.set_cache_limit(saved_limit);
}
BENCHMARK(alloc_fill_16M)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();

void small_tensor_create(benchmark::State& state) {
  for (auto _ : state) {
    ox::Tensor t = ox::empty({8});
    benchmark::DoNotOptimize(t.impl());
  }
}
BENCHMARK(small_tensor_create);

}  // namespace
