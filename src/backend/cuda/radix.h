#pragma once
// Device-wide building blocks of the indexing and sorting launchers (index.cpp, sort.cpp), on
// the kernels of kernels/sort.cu: exclusive scans of i64 and the stable LSD radix sort of
// (u64 key, i64 payload) pairs. Nothing here waits for the device.

#include <cstdint>

#include "backend/cuda/launch.h"

namespace ox::cuda::detail {

// data[0, n) replaced by its exclusive prefix sums (in place, on the stream).
void exclusive_scan(const DeviceContext& at, int64_t* data, int64_t n);

// p[0, n) = v.
void fill_u64(const DeviceContext& at, uint64_t* p, int64_t n, uint64_t v);

// Sorts n pairs (keys[i], vals[i]) stably by key, every key at most max_key, using keys_alt
// and vals_alt (n each) as the other half of each pass. Returns whether the result lies in
// the _alt arrays (an odd number of passes ran).
bool radix_sort(const DeviceContext& at, uint64_t* keys, int64_t* vals, uint64_t* keys_alt,
                int64_t* vals_alt, int64_t n, uint64_t max_key);

}  // namespace ox::cuda::detail
