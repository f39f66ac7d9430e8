// CUDA launchers: copy (kernels/copy.cu, and the transfers between host and devices), fill,
// arange, linspace (kernels/fill.cu on contiguous memory, kernels/elementwise.cu's strided
// fill), unary, binary, where (kernels/elementwise.cu). Launchers never wait for the device,
// except a copy to the host (which returns when the host data is valid), a copy between two
// devices, and a copy from page-locked host memory.

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "backend/cuda/copy_plan.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/elementwise_kernels.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/memory.h"
#include "backend/cuda/module.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

CUdeviceptr dptr(const void* p) { return reinterpret_cast<CUdeviceptr>(p); }

// ---- Tables ----------------------------------------------------------------------------------

const KernelTable<kUnaryOpCount>& unary_kernels() {
  static const KernelTable<kUnaryOpCount> table("elementwise", "ox_unary_", unary_rows());
  return table;
}
const KernelTable<kBinaryOpCount>& binary_kernels() {
  static const KernelTable<kBinaryOpCount> table("elementwise", "ox_binary_", binary_rows());
  return table;
}
// Row d: copies to dtype d; the column is the source dtype (ox_copy_<to>_<from>).
const KernelTable<kNumDTypes>& copy_kernels() {
  static const KernelTable<kNumDTypes> table("copy", "ox_copy_", copy_rows());
  return table;
}
const KernelTable<1>& arange_kernels() {
  static const KernelTable<1> table("fill", "ox_arange", {""});
  return table;
}
const KernelTable<1>& linspace_kernels() {
  static const KernelTable<1> table("fill", "ox_linspace", {""});
  return table;
}

constinit const KernelRef kFill[] = {
    {"fill", "ox_fill_w1"}, {"fill", "ox_fill_w2"}, {"fill", "ox_fill_w4"}, {"fill", "ox_fill_w8"}};
constinit const KernelRef kFillStrided[] = {{"elementwise", "ox_fill_strided_w1"},
                                            {"elementwise", "ox_fill_strided_w2"},
                                            {"elementwise", "ox_fill_strided_w4"},
                                            {"elementwise", "ox_fill_strided_w8"}};
constinit const KernelRef kWhere[] = {{"elementwise", "ox_where_w1"},
                                      {"elementwise", "ox_where_w2"},
                                      {"elementwise", "ox_where_w4"},
                                      {"elementwise", "ox_where_w8"}};

// The value's bits as the kernel's parameter type of its width.
template <class F>
void with_bits(DType dtype, uint64_t bits, F&& f) {
  switch (dtype_size(dtype)) {
    case 1:
      return f(uint8_t(bits));
    case 2:
      return f(uint16_t(bits));
    case 4:
      return f(uint32_t(bits));
    default:
      return f(uint64_t(bits));
  }
}

// ---- Copy ------------------------------------------------------------------------------------

// A contiguous array of `like`'s shape at `data`.
StridedArray contiguous_at(void* data, const StridedArray& like, DType dtype, Device device) {
  return StridedArray{data, like.shape, contiguous_strides(like.shape), dtype, device};
}

// dst = convert(src) by the copy kernel, both on at's device.
void copy_kernel(const DeviceContext& at, const StridedArray& dst, const StridedArray& src) {
  const int64_t n = dst.numel();
  const Offsets<2> layout = make_offsets<2>({&dst, &src}, "copy");
  launch(at, copy_kernels().get(at.device, int(dst.dtype), src.dtype), grid_for(n), dst.data,
         src.data, n, layout);
}

size_t nbytes(const StridedArray& a, DType dtype) { return size_t(a.numel()) * dtype_size(dtype); }

void copy_on_device(const StridedArray& dst, const StridedArray& src, const CopyPlan& plan) {
  const DeviceContext at = enter(dst);
  if (plan.memcpy()) {
    if (dst.data == src.data) return;
    check(at.driver->cuMemcpyDtoDAsync(dptr(dst.data), dptr(src.data), nbytes(dst, dst.dtype),
                                       at.stream),
          "cuMemcpyDtoDAsync");
    return;
  }
  copy_kernel(at, dst, src);
}

// A strided copy between host arrays (staging), by the CPU backend through the registry.
void host_copy(const StridedArray& dst, const StridedArray& src) {
  backend_for(Device::cpu(), "copy").copy(dst, src, /*non_blocking=*/false);
}

// CPU -> CUDA. Pageable source memory has been consumed when cuMemcpyHtoDAsync returns; from
// page-locked memory (the pinned allocator's) the copy is asynchronous, so the stream is
// synchronized then, and only then (the caller may overwrite or free the source as soon as copy
// returns).
void upload(const StridedArray& dst, const StridedArray& src, const CopyPlan& plan) {
  const DeviceContext at = enter(dst);
  const size_t bytes = nbytes(dst, dst.dtype);
  std::unique_ptr<unsigned char[]> staged;
  const void* host = src.data;
  if (plan.src_stage) {  // contiguous, of dst's dtype, on the host (pageable)
    staged.reset(new unsigned char[bytes]);
    host_copy(contiguous_at(staged.get(), dst, dst.dtype, Device::cpu()), src);
    host = staged.get();
  }
  std::optional<DeviceBuffer> buffer;
  void* target = dst.data;
  if (plan.dst_stage) {
    buffer.emplace(at, bytes);
    target = buffer->data();
  }
  check(at.driver->cuMemcpyHtoDAsync(dptr(target), host, bytes, at.stream), "cuMemcpyHtoDAsync");
  const DeviceCachingAllocator* pinned = pinned_allocator_if_made();
  if (staged == nullptr && pinned != nullptr && pinned->holds(host))
    check(at.driver->cuStreamSynchronize(at.stream), "cuStreamSynchronize");
  if (plan.dst_stage) copy_kernel(at, dst, contiguous_at(target, dst, dst.dtype, dst.device));
}

// CUDA -> CPU: returns when the host data is valid, raising a check a kernel reported.
void download(const StridedArray& dst, const StridedArray& src, const CopyPlan& plan) {
  const DeviceContext at = enter(src);
  const size_t bytes = nbytes(dst, dst.dtype);
  std::optional<DeviceBuffer> buffer;
  const void* from = src.data;
  if (plan.src_stage) {  // contiguous, of dst's dtype, on the device
    buffer.emplace(at, bytes);
    copy_kernel(at, contiguous_at(buffer->data(), dst, dst.dtype, src.device), src);
    from = buffer->data();
  }
  std::unique_ptr<unsigned char[]> staged;
  void* target = dst.data;
  if (plan.dst_stage) {
    staged.reset(new unsigned char[bytes]);
    target = staged.get();
  }
  check(at.driver->cuMemcpyDtoHAsync(target, dptr(from), bytes, at.stream), "cuMemcpyDtoHAsync");
  check(at.driver->cuStreamSynchronize(at.stream), "cuStreamSynchronize");
  raise_reported_check(at.device);
  if (plan.dst_stage) host_copy(dst, contiguous_at(target, dst, dst.dtype, Device::cpu()));
}

// CUDA i -> CUDA j: the bytes move with cuMemcpyPeerAsync on j's stream once i's stream has
// finished with src, and j's stream is synchronized after it, so that neither src nor i's
// staging buffer is reused while the transfer reads it.
void peer(const StridedArray& dst, const StridedArray& src, const CopyPlan& plan) {
  const size_t bytes = nbytes(dst, dst.dtype);
  const DeviceContext from_at = enter(src);
  std::optional<DeviceBuffer> src_buffer;
  const void* from = src.data;
  if (plan.src_stage) {  // contiguous, of dst's dtype, on src's device
    src_buffer.emplace(from_at, bytes);
    copy_kernel(from_at, contiguous_at(src_buffer->data(), dst, dst.dtype, src.device), src);
    from = src_buffer->data();
  }
  check(from_at.driver->cuStreamSynchronize(from_at.stream), "cuStreamSynchronize");
  const DeviceContext to_at = enter(dst);
  std::optional<DeviceBuffer> dst_buffer;
  void* target = dst.data;
  if (plan.dst_stage) {
    dst_buffer.emplace(to_at, bytes);
    target = dst_buffer->data();
  }
  check(
      to_at.driver->cuMemcpyPeerAsync(dptr(target), primary_context(dst.device.index()), dptr(from),
                                      primary_context(src.device.index()), bytes, to_at.stream),
      "cuMemcpyPeerAsync");
  check(to_at.driver->cuStreamSynchronize(to_at.stream), "cuStreamSynchronize");
  if (src_buffer) {
    // Freeing it may make src's context current (the allocator's own calls); dst's is made
    // current again, which this thread's launches assume (enter() remembers dst's).
    src_buffer.reset();
    set_device(dst.device.index());
  }
  if (plan.dst_stage) copy_kernel(to_at, dst, contiguous_at(target, dst, dst.dtype, dst.device));
}

}  // namespace

void CudaBackend::copy(const StridedArray& dst, const StridedArray& src) {
  const CopyPlan plan = plan_copy(dst, src);
  switch (plan.route) {
    case CopyRoute::None:
      return;
    case CopyRoute::OnDevice:
      return copy_on_device(dst, src, plan);
    case CopyRoute::Upload:
      return upload(dst, src, plan);
    case CopyRoute::Download:
      return download(dst, src, plan);
    case CopyRoute::Peer:
      return peer(dst, src, plan);
  }
}

// ---- Fill and sequences ----------------------------------------------------------------------

void CudaBackend::fill(const StridedArray& dst, const Scalar& value) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DeviceContext at = enter(dst);
  const uint64_t bits = scalar_bits(value, dst.dtype);
  const int w = width_index(dst.dtype);
  if (dst.is_contiguous()) {
    with_bits(dst.dtype, bits,
              [&](auto v) { launch(at, kFill[w].get(at.device), grid_for(n), dst.data, n, v); });
    return;
  }
  const Offsets<1> layout = make_offsets<1>({&dst}, "fill");
  with_bits(dst.dtype, bits, [&](auto v) {
    launch(at, kFillStrided[w].get(at.device), grid_for(n), dst.data, n, layout, v);
  });
}

void CudaBackend::arange(const StridedArray& dst, const Scalar& start, const Scalar& step) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DeviceContext at = enter(dst);
  const CUfunction f = arange_kernels().get(at.device, 0, dst.dtype);
  if (is_floating(dst.dtype)) {  // as the CPU: f64 for floats, i64 modulo 2^64 otherwise
    launch(at, f, grid_for(n), dst.data, n, start.to_double(), step.to_double());
  } else {
    launch(at, f, grid_for(n), dst.data, n, uint64_t(start.to_int()), uint64_t(step.to_int()));
  }
}

void CudaBackend::linspace(const StridedArray& dst, double start, double end) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DeviceContext at = enter(dst);
  launch(at, linspace_kernels().get(at.device, 0, dst.dtype), grid_for(n), dst.data, n, start, end);
}

// where's parameters, the largest of the family: within the 4 KiB every driver takes.
static_assert(sizeof(Offsets<4>) + 4 * sizeof(void*) + sizeof(int64_t) <= 4096);

// ---- Unary, binary, where --------------------------------------------------------------------

void CudaBackend::unary(UnaryOp op, const StridedArray& dst, const StridedArray& src,
                        const UnaryParams& params) {
  OX_ASSERT(int(op) < kUnaryOpCount, "invalid unary op ", int(op));
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DeviceContext at = enter(dst);
  const Offsets<2> layout = make_offsets<2>({&dst, &src}, unary_name(op));
  launch(at, unary_kernels().get(at.device, int(op), src.dtype), grid_for(n), dst.data, src.data, n,
         layout, params);
}

void CudaBackend::binary(BinaryOp op, const StridedArray& dst, const StridedArray& a,
                         const StridedArray& b, double alpha) {
  OX_ASSERT(int(op) < kBinaryOpCount, "invalid binary op ", int(op));
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DeviceContext at = enter(dst);
  const Offsets<3> layout = make_offsets<3>({&dst, &a, &b}, binary_name(op));
  launch(at, binary_kernels().get(at.device, int(op), a.dtype), grid_for(n), dst.data, a.data,
         b.data, n, layout, alpha);
}

void CudaBackend::where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
                        const StridedArray& b) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const DeviceContext at = enter(dst);
  const Offsets<4> layout = make_offsets<4>({&dst, &cond, &a, &b}, "where");
  launch(at, kWhere[width_index(dst.dtype)].get(at.device), grid_for(n), dst.data, cond.data,
         a.data, b.data, n, layout);
}

}  // namespace ox::cuda::detail
