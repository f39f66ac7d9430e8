// CUDA launcher: sort (kernels/sort.cu). Every element of src gets its order-preserving key
// (kernels/index_plan.cuh) and its flat row-major index as payload; a stable radix sort by key,
// then a stable one by row (payload / n), leaves each row's elements in the CPU's order (value,
// then index). The outputs take each row's first m positions (or position k). Simple and exact
// rather than fast: a top-m or select sorts whole rows.

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/index_plan.cuh"
#include "backend/cuda/launch.h"
#include "backend/cuda/radix.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

const KernelTable<1> kKeys("sort", "ox_sort_keys", {""});
const KernelTable<1> kFirstNan("sort", "ox_sort_first_nan", {""});
const KernelRef kRowKeys("sort", "ox_sort_row_keys");
const KernelRef kWrite1("sort", "ox_sort_write_w1");
const KernelRef kWrite2("sort", "ox_sort_write_w2");
const KernelRef kWrite4("sort", "ox_sort_write_w4");
const KernelRef kWrite8("sort", "ox_sort_write_w8");

}  // namespace

void CudaBackend::sort(const StridedArray& values, const StridedArray& indices,
                       const StridedArray& src, const SortParams& params) {
  if (indices.numel() == 0) return;
  OX_ASSERT(indices.dtype == kI64 && (!values.data || values.dtype == src.dtype),
            "sort writes i64 indices and values of the source dtype");
  const size_t nd = src.shape.size();
  const int64_t total = src.numel();
  const int64_t n = nd ? src.shape[nd - 1] : 1;
  const int64_t m = nd ? indices.shape[nd - 1] : 1;
  const int64_t rows = total / n;
  OX_ASSERT(m <= n && (!params.select || (m == 1 && params.k >= 0 && params.k < n)),
            "sort: output row of ", m, " for a row of ", n);

  const DeviceContext at = enter(src);
  const Offsets<1> src_layout = make_offsets<1>({&src}, "sort");
  DeviceBuffer keys_a(at, size_t(total) * sizeof(uint64_t)), keys_b(at, size_t(total) * 8);
  DeviceBuffer vals_a(at, size_t(total) * sizeof(int64_t)), vals_b(at, size_t(total) * 8);
  uint64_t* keys[2] = {keys_a.as<uint64_t>(), keys_b.as<uint64_t>()};
  int64_t* vals[2] = {vals_a.as<int64_t>(), vals_b.as<int64_t>()};

  const uint64_t max_key = kernels::max_sort_key(int(dtype_size(src.dtype)), src.dtype == kBool);
  const uint64_t flip = params.descending ? max_key : 0;
  launch(at, kKeys.get(at.device, 0, src.dtype), grid_for(total), keys[0], vals[0],
         static_cast<const void*>(src.data), total, src_layout, flip);
  int at_half = radix_sort(at, keys[0], vals[0], keys[1], vals[1], total, max_key) ? 1 : 0;
  if (rows > 1) {  // stable by row: within a row, the order by key stays
    launch(at, kRowKeys.get(at.device), grid_for(total), keys[at_half],
           static_cast<const int64_t*>(vals[at_half]), total, n);
    const int other = 1 - at_half;
    if (radix_sort(at, keys[at_half], vals[at_half], keys[other], vals[other], total,
                   uint64_t(rows - 1)))
      at_half = other;
  }

  uint64_t* first_nan = nullptr;
  DeviceBuffer nan_rows(at, params.select && params.nan_wins && is_floating(src.dtype)
                                ? size_t(rows) * sizeof(uint64_t)
                                : 0);
  if (nan_rows.data() != nullptr) {
    first_nan = nan_rows.as<uint64_t>();
    fill_u64(at, first_nan, rows, uint64_t(n));
    launch(at, kFirstNan.get(at.device, 0, src.dtype), grid_for(total),
           static_cast<const void*>(src.data), total, src_layout, n, first_nan);
  }

  const StridedArray& value_layout = values.data ? values : indices;
  const Offsets<2> out_layout =
      make_offsets<2>(indices.shape, {&value_layout.strides, &indices.strides}, "sort");
  const int64_t count = indices.numel();
  const int64_t k = params.select ? params.k : -1;
  const KernelRef* write = &kWrite8;
  switch (dtype_size(src.dtype)) {
    case 1:
      write = &kWrite1;
      break;
    case 2:
      write = &kWrite2;
      break;
    case 4:
      write = &kWrite4;
      break;
    default:
      break;
  }
  launch(at, write->get(at.device), grid_for(count), values.data, indices.data,
         static_cast<const void*>(src.data), static_cast<const int64_t*>(vals[at_half]),
         static_cast<const uint64_t*>(first_nan), count, m, n, k, out_layout, src_layout);
}

}  // namespace ox::cuda::detail
