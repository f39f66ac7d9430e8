// CUDA launchers: gather, scatter, nonzero (kernels/index.cu; scans and the radix sort of
// kernels/sort.cu through radix.h).
//
// Checks: per index operand, one kernel finds the least bad position over the operand's moving
// dims (as the CPU walks it), then one thread per operand reports it, operands in order, so the
// report is the CPU's. A bad element is skipped; dst is then unspecified, as the contract allows.
// Scatter: each update's destination offset is a key; a stable radix sort by key puts the
// updates meeting at one element together in iteration order, and the first of each run
// applies the run in that order (the contract's row-major order, at any launch size).
// Nonzero: per-block counts, their exclusive scan, then each block writes its rows in order.

#include <array>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/index_plan.cuh"
#include "backend/cuda/launch.h"
#include "backend/cuda/radix.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

using kernels::IndexArgs;

constexpr int kMaxIndices = 8;

const KernelTable<1> kCheck("index", "ox_index_check", {""});
const KernelTable<1> kReport("index", "ox_index_report", {""});
const KernelTable<8> kGather("index", "ox_index_gather",
                             {"1_w1", "1_w2", "1_w4", "1_w8", "8_w1", "8_w2", "8_w4", "8_w8"});
const KernelTable<2> kScatterKeys("index", "ox_index_scatter_keys", {"1", "8"});
const KernelTable<4> kScatterReduce("index", "ox_index_scatter_", {"sum", "prod", "amax", "amin"});
const KernelRef kScatterAssign[4] = {{"index", "ox_index_scatter_assign_w1"},
                                     {"index", "ox_index_scatter_assign_w2"},
                                     {"index", "ox_index_scatter_assign_w4"},
                                     {"index", "ox_index_scatter_assign_w8"}};
// Kinds: w1, w2, w4, w8 (integers and bool by width), f2, f4, f8 (floats by width).
const KernelRef kNonzeroCount[7] = {
    {"index", "ox_index_nonzero_count_w1"}, {"index", "ox_index_nonzero_count_w2"},
    {"index", "ox_index_nonzero_count_w4"}, {"index", "ox_index_nonzero_count_w8"},
    {"index", "ox_index_nonzero_count_f2"}, {"index", "ox_index_nonzero_count_f4"},
    {"index", "ox_index_nonzero_count_f8"}};
const KernelRef kNonzeroWrite[7] = {
    {"index", "ox_index_nonzero_write_w1"}, {"index", "ox_index_nonzero_write_w2"},
    {"index", "ox_index_nonzero_write_w4"}, {"index", "ox_index_nonzero_write_w8"},
    {"index", "ox_index_nonzero_write_f2"}, {"index", "ox_index_nonzero_write_f4"},
    {"index", "ox_index_nonzero_write_f8"}};

// The layout of `arrays` (strides) and then `indices`' arrays over `shape`; operands past the
// index count get stride 0. N = arrays + K.
template <int N>
Offsets<N> index_layout(const Shape& shape, std::initializer_list<const Strides*> arrays,
                        const std::vector<IndexOperand>& indices, const char* op) {
  const Strides zeros(shape.size(), 0);
  const int64_t* strides[N];
  int k = 0;
  for (const Strides* s : arrays) strides[k++] = s->data();
  for (const IndexOperand& ix : indices) strides[k++] = ix.index.strides.data();
  while (k < N) strides[k++] = zeros.data();
  Offsets<N> o;
  OX_CHECK(kernels::merge_offsets<N>(int(shape.size()), shape.data(), strides, o), Device, op,
           "a CUDA kernel takes at most ", kernels::kMaxDims,
           " dims after merging; this iteration of shape ", shape, " has more");
  return o;
}

template <int K>
IndexArgs<K> index_args(const std::vector<IndexOperand>& indices) {
  IndexArgs<K> a;
  a.count = int32_t(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    a.data[k] = indices[k].index.data;
    a.size[k] = indices[k].size;
    a.stride[k] = indices[k].stride;
    a.low[k] = indices[k].wrap ? -indices[k].size : 0;
  }
  return a;
}

void check_count(const std::vector<IndexOperand>& indices, const char* op) {
  OX_CHECK(indices.size() <= size_t(kMaxIndices), Device, op, "the CUDA kernels take at most ",
           kMaxIndices, " index tensors, got ", indices.size());
  for (const IndexOperand& ix : indices)
    OX_ASSERT(ix.index.dtype == indices[0].index.dtype &&
                  (ix.index.dtype == kI64 || ix.index.dtype == kI32),
              op, ": index arrays must share one dtype, i64 or i32");
}

// Checks every index value (a non-empty iteration); reports the CPU's first failure.
void check_indices(const DeviceContext& at, const std::vector<IndexOperand>& indices,
                   const char* op) {
  if (indices.empty()) return;
  const size_t nk = indices.size();
  DeviceBuffer first(at, nk * sizeof(uint64_t));
  uint64_t* f = first.as<uint64_t>();
  fill_u64(at, f, int64_t(nk), ~uint64_t(0));
  std::vector<Offsets<1>> layouts(nk);
  std::vector<int64_t> counts(nk);
  for (size_t k = 0; k < nk; ++k) {
    const StridedArray& a = indices[k].index;
    Shape shape;  // the dims where the index moves, in order
    Strides strides;
    for (size_t d = 0; d < a.shape.size(); ++d) {
      if (a.strides[d] == 0) continue;
      shape.push_back(a.shape[d]);
      strides.push_back(a.strides[d]);
    }
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    counts[k] = n;
    const int64_t* s[1] = {strides.data()};
    OX_CHECK(kernels::merge_offsets<1>(int(shape.size()), shape.data(), s, layouts[k]), Device, op,
             "a CUDA kernel takes at most ", kernels::kMaxDims,
             " dims after merging; an index of shape ", a.shape, " has more");
    launch(at, kCheck.get(at.device, 0, a.dtype), grid_for(n), static_cast<const void*>(a.data), n,
           layouts[k], indices[k].wrap ? -indices[k].size : int64_t(0), indices[k].size, f + k);
  }
  Grid one;
  one.threads = 1;
  for (size_t k = 0; k < nk; ++k) {
    const StridedArray& a = indices[k].index;
    launch(at, kReport.get(at.device, 0, a.dtype), one, static_cast<const void*>(a.data), counts[k],
           layouts[k], indices[k].size, static_cast<const uint64_t*>(f + k), check_word(at.device),
           int32_t(indices[k].site));
  }
}

template <int K>
void launch_gather(const DeviceContext& at, const StridedArray& dst, const StridedArray& src,
                   const std::vector<IndexOperand>& indices, DType idt) {
  const Offsets<2 + K> layout =
      index_layout<2 + K>(dst.shape, {&dst.strides, &src.strides}, indices, "gather");
  const int64_t count = dst.numel();
  const int row = (K == 1 ? 0 : 4) + width_index(dst.dtype);
  launch(at, kGather.get(at.device, row, idt), grid_for(count), dst.data,
         static_cast<const void*>(src.data), count, layout, index_args<K>(indices));
}

template <int K>
void launch_scatter_keys(const DeviceContext& at, uint64_t* keys, int64_t* payload,
                         const StridedArray& dst, const StridedArray& src,
                         const std::vector<IndexOperand>& indices, DType idt, int64_t base,
                         uint64_t invalid) {
  const Offsets<1 + K> layout = index_layout<1 + K>(src.shape, {&dst.strides}, indices, "scatter");
  const int64_t count = src.numel();
  launch(at, kScatterKeys.get(at.device, K == 1 ? 0 : 1, idt), grid_for(count), keys, payload,
         count, layout, index_args<K>(indices), base, invalid);
}

}  // namespace

void CudaBackend::gather(const StridedArray& dst, const StridedArray& src,
                         const std::vector<IndexOperand>& indices) {
  if (dst.numel() == 0) return;
  check_count(indices, "gather");
  const DeviceContext at = enter(dst);
  check_indices(at, indices, "gather");
  const DType idt = indices.empty() ? kI64 : indices[0].index.dtype;
  if (indices.size() <= 1)
    launch_gather<1>(at, dst, src, indices, idt);
  else
    launch_gather<kMaxIndices>(at, dst, src, indices, idt);
}

void CudaBackend::scatter(const StridedArray& dst, const StridedArray& src,
                          const std::vector<IndexOperand>& indices, ScatterReduce reduce) {
  const int64_t count = src.numel();
  if (count == 0) return;
  check_count(indices, "scatter");
  const DeviceContext at = enter(dst);
  check_indices(at, indices, "scatter");
  const DType idt = indices.empty() ? kI64 : indices[0].index.dtype;

  // Every valid destination offset lies in [low, high]: keys offset - low, and one more for a
  // bad index.
  int64_t sizes[kMaxIndices], strides[kMaxIndices];
  for (size_t k = 0; k < indices.size(); ++k) {
    sizes[k] = indices[k].size;
    strides[k] = indices[k].stride;
  }
  int64_t low = 0, high = 0;
  kernels::destination_range(int(src.shape.size()), src.shape.data(), dst.strides.data(),
                             int(indices.size()), sizes, strides, low, high);
  const uint64_t invalid = uint64_t(high - low) + 1;

  DeviceBuffer keys_a(at, size_t(count) * sizeof(uint64_t)), keys_b(at, size_t(count) * 8);
  DeviceBuffer vals_a(at, size_t(count) * sizeof(int64_t)), vals_b(at, size_t(count) * 8);
  uint64_t* keys[2] = {keys_a.as<uint64_t>(), keys_b.as<uint64_t>()};
  int64_t* vals[2] = {vals_a.as<int64_t>(), vals_b.as<int64_t>()};
  if (indices.size() <= 1)
    launch_scatter_keys<1>(at, keys[0], vals[0], dst, src, indices, idt, low, invalid);
  else
    launch_scatter_keys<kMaxIndices>(at, keys[0], vals[0], dst, src, indices, idt, low, invalid);
  const int h = radix_sort(at, keys[0], vals[0], keys[1], vals[1], count, invalid) ? 1 : 0;

  const Offsets<1> src_layout = make_offsets<1>({&src}, "scatter");
  const CUfunction f =
      reduce == ScatterReduce::Assign
          ? kScatterAssign[width_index(src.dtype)].get(at.device)
          : kScatterReduce.get(at.device, int(reduce) - int(ScatterReduce::Sum), src.dtype);
  launch(at, f, grid_for(count), dst.data, static_cast<const void*>(src.data),
         static_cast<const uint64_t*>(keys[h]), static_cast<const int64_t*>(vals[h]), count, low,
         invalid, src_layout);
}

void CudaBackend::nonzero(const StridedArray& dst, const StridedArray& src) {
  const int64_t n = src.numel();
  const size_t nd = src.shape.size();
  OX_ASSERT(dst.shape.size() == 2, "nonzero given an output of shape ", dst.shape);
  const int64_t rows = dst.shape[0];
  if (n == 0 || nd == 0 || rows == 0) return;  // nd == 0: rows of no coordinates
  OX_CHECK(nd <= size_t(kernels::kMaxCoordDims), Device, "nonzero",
           "the CUDA kernel takes at most ", kernels::kMaxCoordDims, " dims, got ", nd);
  kernels::Coords coords;
  coords.ndim = int32_t(nd);
  for (size_t d = 0; d < nd; ++d) coords.shape[d] = src.shape[d];

  const DeviceContext at = enter(src);
  const Offsets<1> layout = make_offsets<1>({&src}, "nonzero");
  const int64_t tile = kernels::nonzero_tile(n);
  const int64_t blocks = (n + tile - 1) / tile;
  const int kind = (is_floating(src.dtype) ? 3 : 0) + width_index(src.dtype);  // f: no w1
  DeviceBuffer starts(at, size_t(blocks) * sizeof(int64_t));
  int64_t* s = starts.as<int64_t>();
  Grid g;
  g.threads = kernels::kScanThreads;
  g.blocks = unsigned(blocks);
  launch(at, kNonzeroCount[kind].get(at.device), g, static_cast<const void*>(src.data), n, layout,
         tile, s);
  exclusive_scan(at, s, blocks);
  launch(at, kNonzeroWrite[kind].get(at.device), g, static_cast<const void*>(src.data), n, layout,
         tile, static_cast<const int64_t*>(s), dst.data, rows, coords);
}

}  // namespace ox::cuda::detail
