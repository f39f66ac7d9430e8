#pragma once
// Intra-op parallelism. Work is split into at most one contiguous range per thread; kernels
// whose result could depend on the split (reductions) must use fixed-size chunks instead.
// An exception may not leave an OpenMP region (the runtime calls std::terminate), so one thrown
// by a worker (an ox::Error, an allocation failure) is caught there and rethrown by the caller
// once the team has finished.

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>

namespace ox::cpu {

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& fn) {
  const int64_t n = end - begin;
  if (n <= 0) return;
  const int64_t max_threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int64_t threads =
      std::min<int64_t>(max_threads, (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (threads <= 1) {
    fn(begin, end);
    return;
  }
  std::exception_ptr failure;
#pragma omp parallel num_threads(static_cast <int>(threads))
  {
    const int64_t nt = omp_get_num_threads(), tid = omp_get_thread_num();
    const int64_t chunk = (n + nt - 1) / nt;
    const int64_t b = begin + tid * chunk, e = std::min(end, b + chunk);
    if (b < e) {
      try {
        fn(b, e);
      } catch (...) {
#pragma omp critical(ox_parallel_for_failure)
        if (!failure) failure = std::current_exception();
      }
    }
  }
  if (failure) std::rethrow_exception(failure);
}

// fn(i) for every i in [0, n), each item handed to whichever thread is free next: for items of
// uneven cost, or when a thread may be descheduled (a loaded VM), where a fixed split leaves
// the others waiting. The results may not depend on which thread runs an item.
template <class F>
void parallel_for_each_item(int64_t n, F&& fn) {
  std::atomic<int64_t> next{0};
  parallel_for(0, std::min<int64_t>(n, omp_get_max_threads()), 1, [&](int64_t, int64_t) {
    for (int64_t i = next++; i < n; i = next++) fn(i);
  });
}

}  // namespace ox::cpu
