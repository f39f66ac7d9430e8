// The CUDA Backend's device-wide methods and its construction (cuda_backend.h).

#include "backend/cuda/cuda_backend.h"

#include <memory>

#include "backend/cuda/driver.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/memory.h"
#include "backend/cuda/report.h"

namespace ox::cuda::detail {

DeviceType CudaBackend::device_type() const { return DeviceType::CUDA; }

BackendInfo CudaBackend::info() const { return runtime_report(); }

int CudaBackend::device_count() const { return driver_state().device_count; }

Allocator& CudaBackend::allocator(int device_index) { return device_allocator(device_index); }
Allocator* CudaBackend::pinned_host_allocator() { return &pinned_allocator(); }

void CudaBackend::synchronize(int device_index) {
  const DeviceContext at = enter(device_index);
  check(at.driver->cuCtxSynchronize(), "cuCtxSynchronize");
  raise_reported_check(device_index);
}

void CudaBackend::copy(const StridedArray& dst, const StridedArray& src, bool non_blocking) {
  const bool to_host = dst.device.is_cpu();
  if (!non_blocking || to_host == src.device.is_cpu() || dst.dtype != src.dtype ||
      !dst.is_contiguous() || !src.is_contiguous())
    return copy(dst, src);
  const size_t nbytes = size_t(dst.numel()) * dtype_size(dst.dtype);
  if (nbytes == 0) return;
  const DeviceContext at = enter(to_host ? src : dst);
  if (to_host) {
    check(at.driver->cuMemcpyDtoHAsync(dst.data, reinterpret_cast<CUdeviceptr>(src.data), nbytes,
                                       at.stream),
          "cuMemcpyDtoHAsync");
  } else {
    check(at.driver->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst.data), src.data, nbytes,
                                       at.stream),
          "cuMemcpyHtoDAsync");
  }
}

std::unique_ptr<Backend> make_backend() {
  if (!driver_state().reason.empty()) return nullptr;
  return std::make_unique<CudaBackend>();
}

}  // namespace ox::cuda::detail
