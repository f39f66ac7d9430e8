// Exclusive scans and the radix sort on the device (radix.h).

#include "backend/cuda/radix.h"

#include "backend/cuda/kernels/index_plan.cuh"

namespace ox::cuda::detail {

namespace {

const KernelRef kSortFill("sort", "ox_sort_fill_u64");
const KernelRef kSortScanBlock("sort", "ox_sort_scan_block");
const KernelRef kSortScanAdd("sort", "ox_sort_scan_add");
const KernelRef kSortHist("sort", "ox_sort_radix_hist");
const KernelRef kSortScatter("sort", "ox_sort_radix_scatter");

}  // namespace

void fill_u64(const DeviceContext& at, uint64_t* p, int64_t n, uint64_t v) {
  if (n > 0) launch(at, kSortFill.get(at.device), grid_for(n), p, n, v);
}

void exclusive_scan(const DeviceContext& at, int64_t* data, int64_t n) {
  if (n <= 0) return;
  const int64_t blocks = (n + kernels::kScanBlock - 1) / kernels::kScanBlock;
  Grid g;
  g.threads = kernels::kScanThreads;
  g.blocks = unsigned(blocks);
  if (blocks == 1) {
    int64_t* none = nullptr;
    launch(at, kSortScanBlock.get(at.device), g, data, n, none);
    return;
  }
  DeviceBuffer sums(at, size_t(blocks) * sizeof(int64_t));
  int64_t* s = sums.as<int64_t>();
  launch(at, kSortScanBlock.get(at.device), g, data, n, s);
  exclusive_scan(at, s, blocks);
  launch(at, kSortScanAdd.get(at.device), grid_for(n), data, n, static_cast<const int64_t*>(s));
}

bool radix_sort(const DeviceContext& at, uint64_t* keys, int64_t* vals, uint64_t* keys_alt,
                int64_t* vals_alt, int64_t n, uint64_t max_key) {
  const kernels::RadixPlan plan = kernels::radix_plan(n, max_key);
  if (plan.passes == 0) return false;
  const int64_t entries = int64_t(kernels::kRadixThreads) * plan.tiles;
  DeviceBuffer hist(at, size_t(entries) * sizeof(int64_t));
  int64_t* h = hist.as<int64_t>();
  Grid g;
  g.threads = kernels::kRadixThreads;
  g.blocks = unsigned(plan.tiles);
  bool in_alt = false;
  for (int32_t pass = 0; pass < plan.passes; ++pass) {
    const uint64_t* k_in = in_alt ? keys_alt : keys;
    const int64_t* v_in = in_alt ? vals_alt : vals;
    uint64_t* k_out = in_alt ? keys : keys_alt;
    int64_t* v_out = in_alt ? vals : vals_alt;
    launch(at, kSortHist.get(at.device), g, k_in, n, pass, plan.tile_items, plan.tiles, h);
    exclusive_scan(at, h, entries);
    launch(at, kSortScatter.get(at.device), g, k_in, v_in, k_out, v_out, n, pass, plan.tile_items,
           plan.tiles, static_cast<const int64_t*>(h));
    in_alt = !in_alt;
  }
  return in_alt;
}

}  // namespace ox::cuda::detail
