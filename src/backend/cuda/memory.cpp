// The CUDA caching allocator of each device: DeviceCachingAllocator over the driver
// (docs/CUDA.md "Memory"), and ox::cuda's memory statistics.

#include "backend/cuda/memory.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/driver.h"
#include "backend/cuda/module.h"
#include "oxmera/core/error.h"
#include "oxmera/cuda.h"

namespace ox::cuda::detail {

namespace {

// Every call makes the device's primary context current first (the allocator may run on any
// thread).
class DriverMemoryOps final : public DeviceMemoryOps {
 public:
  explicit DriverMemoryOps(int device) : device_(device) {}

  void* reserve(size_t nbytes) override {
    CUdeviceptr ptr = 0;
    const CUresult r = on_device().cuMemAlloc(&ptr, nbytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(ptr);
  }
  void release(void* ptr) override {
    check(on_device().cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
  }
  EventHandle record_event(StreamHandle stream) override {
    const Driver& d = on_device();
    CUevent event = nullptr;
    check(d.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    if (const CUresult r = d.cuEventRecord(event, static_cast<CUstream>(stream));
        r != CUDA_SUCCESS) {
      d.cuEventDestroy(event);
      check(r, "cuEventRecord");
    }
    return event;
  }
  bool event_done(EventHandle event) override {
    const CUresult r = driver().cuEventQuery(static_cast<CUevent>(event));
    if (r == CUDA_ERROR_NOT_READY) return false;
    check(r, "cuEventQuery");
    return true;
  }
  void wait_event(EventHandle event) override {
    check(driver().cuEventSynchronize(static_cast<CUevent>(event)), "cuEventSynchronize");
  }
  void destroy_event(EventHandle event) override {
    check(driver().cuEventDestroy(static_cast<CUevent>(event)), "cuEventDestroy");
  }
  void synchronize_stream(StreamHandle stream) override {
    check(on_device().cuStreamSynchronize(static_cast<CUstream>(stream)), "cuStreamSynchronize");
  }
  size_t free_bytes() override {
    size_t free = 0, total = 0;
    check(on_device().cuMemGetInfo(&free, &total), "cuMemGetInfo");
    return free;
  }

 private:
  const Driver& on_device() {
    const Driver& d = driver();
    set_device(device_);
    return d;
  }
  int device_;
};

struct Allocators {
  std::mutex mutex;
  std::vector<std::unique_ptr<DriverMemoryOps>> ops;  // per device; null until first use
  std::vector<std::unique_ptr<DeviceCachingAllocator>> allocators;
};

Allocators& allocators() {
  static auto* a = new Allocators();  // never destroyed: the driver may be gone at exit
  return *a;
}

DeviceCachingAllocator::Mode mode_from_environment() {
  const char* mode = std::getenv("OXMERA_CUDA_ALLOC");
  if (mode == nullptr || *mode == '\0' || std::string(mode) == "caching")
    return DeviceCachingAllocator::Mode::Caching;
  OX_CHECK(std::string(mode) == "direct", Value, "cuda", "OXMERA_CUDA_ALLOC=", mode,
           " is neither \"caching\" (the default) nor \"direct\"");
  return DeviceCachingAllocator::Mode::Direct;
}

}  // namespace

DeviceCachingAllocator& device_allocator(int device) {
  driver_for(device);
  Allocators& a = allocators();
  std::lock_guard lock(a.mutex);
  const auto index = static_cast<size_t>(device);
  if (a.allocators.size() <= index) {
    a.ops.resize(index + 1);
    a.allocators.resize(index + 1);
  }
  if (!a.allocators[index]) {
    const DeviceCachingAllocator::Mode mode = mode_from_environment();
    a.ops[index] = std::make_unique<DriverMemoryOps>(device);
    a.allocators[index] = std::make_unique<DeviceCachingAllocator>(
        *a.ops[index], "cuda:" + std::to_string(device), mode,
        [device] { return current_stream(device).handle(); });
  }
  return *a.allocators[index];
}

void empty_device_caches() noexcept {
  Allocators& a = allocators();
  std::lock_guard lock(a.mutex);
  for (const auto& allocator : a.allocators)
    if (allocator) allocator->empty_cache();
}

}  // namespace ox::cuda::detail

namespace ox::cuda {

MemoryStats memory_stats(int device) {
  const DeviceMemoryStats s = detail::device_allocator(device).stats();
  return {s.allocated,   s.reserved, s.peak_allocated, s.peak_reserved,
          s.allocations, s.segments, s.cache_flushes,  s.ooms};
}

void reset_peak_memory_stats(int device) { detail::device_allocator(device).reset_peak_stats(); }

void empty_cache() { detail::empty_device_caches(); }

}  // namespace ox::cuda
