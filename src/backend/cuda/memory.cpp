// The CUDA caching allocator of each device: DeviceCachingAllocator over the driver
// (docs/CUDA.md "Memory"), and ox::cuda's memory statistics.

#include "backend/cuda/memory.h"

#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/driver.h"
#include "backend/cuda/module.h"
#include "oxmera/core/error.h"
#include "oxmera/cuda.h"
#include "oxmera/tensor.h"
#include "tensor/tensor_impl.h"

namespace ox::cuda::detail {

namespace {

// Events and streams for both allocators; every call makes the right primary context current
// first (the allocator may run on any thread).
class EventOps : public DeviceMemoryOps {
 protected:
  static const Driver& on_device(int device) {
    const Driver& d = driver();
    set_device(device);
    return d;
  }
  static EventHandle record_on(int device, StreamHandle stream) {
    const Driver& d = on_device(device);
    CUevent event = nullptr;
    check(d.cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    if (const CUresult r = d.cuEventRecord(event, static_cast<CUstream>(stream));
        r != CUDA_SUCCESS) {
      d.cuEventDestroy(event);
      check(r, "cuEventRecord");
    }
    return event;
  }

 public:
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
};

class DriverMemoryOps final : public EventOps {
 public:
  explicit DriverMemoryOps(int device) : device_(device) {}

  void* reserve(size_t nbytes) override {
    CUdeviceptr ptr = 0;
    const CUresult r = on_device(device_).cuMemAlloc(&ptr, nbytes);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemAlloc");
    return reinterpret_cast<void*>(ptr);
  }
  void release(void* ptr) override {
    check(on_device(device_).cuMemFree(reinterpret_cast<CUdeviceptr>(ptr)), "cuMemFree");
  }
  EventHandle record_event(StreamHandle stream) override { return record_on(device_, stream); }
  void synchronize_stream(StreamHandle stream) override {
    check(on_device(device_).cuStreamSynchronize(static_cast<CUstream>(stream)),
          "cuStreamSynchronize");
  }
  size_t free_bytes() override {
    size_t free = 0, total = 0;
    check(on_device(device_).cuMemGetInfo(&free, &total), "cuMemGetInfo");
    return free;
  }

 private:
  int device_;
};

// A stream of a device, as the pinned allocator names it.
struct StreamKey {
  int device;
  void* stream;
};
StreamKey host_stream{-1, nullptr};  // every pinned block's own stream: no copy runs on it

class PinnedMemoryOps final : public EventOps {
 public:
  void* reserve(size_t nbytes) override {
    void* ptr = nullptr;
    const CUresult r = on_device(0).cuMemHostAlloc(&ptr, nbytes, CU_MEMHOSTALLOC_PORTABLE);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(r, "cuMemHostAlloc");
    return ptr;
  }
  void release(void* ptr) override { check(driver().cuMemFreeHost(ptr), "cuMemFreeHost"); }
  EventHandle record_event(StreamHandle key) override {
    const auto* k = static_cast<const StreamKey*>(key);
    return record_on(k->device, k->stream);
  }
  void synchronize_stream(StreamHandle key) override {
    const auto* k = static_cast<const StreamKey*>(key);
    if (k == &host_stream) return;
    check(on_device(k->device).cuStreamSynchronize(static_cast<CUstream>(k->stream)),
          "cuStreamSynchronize");
  }
  size_t free_bytes() override {
    const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : 0;
  }
};

struct Allocators {
  std::mutex mutex;
  std::vector<std::unique_ptr<DriverMemoryOps>> ops;  // per device; null until first use
  std::vector<std::unique_ptr<DeviceCachingAllocator>> allocators;
  PinnedMemoryOps pinned_ops;
  std::unique_ptr<DeviceCachingAllocator> pinned;
  std::map<std::pair<int, void*>, std::unique_ptr<StreamKey>> keys;
};

Allocators& allocators() {
  static auto* a = new Allocators();  // never destroyed: the driver may be gone at exit
  return *a;
}

DeviceCachingAllocator::Mode mode_from_environment() {
  return DeviceCachingAllocator::mode_named(std::getenv("OXMERA_CUDA_ALLOC"));
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

DeviceCachingAllocator& pinned_allocator() {
  driver();
  Allocators& a = allocators();
  std::lock_guard lock(a.mutex);
  if (!a.pinned)
    a.pinned = std::make_unique<DeviceCachingAllocator>(
        a.pinned_ops, "pinned host memory", mode_from_environment(), [] { return &host_stream; });
  return *a.pinned;
}

DeviceCachingAllocator* pinned_allocator_if_made() noexcept {
  Allocators& a = allocators();
  std::lock_guard lock(a.mutex);
  return a.pinned.get();
}

StreamHandle stream_key(int device, void* stream) {
  Allocators& a = allocators();
  std::lock_guard lock(a.mutex);
  std::unique_ptr<StreamKey>& key = a.keys[{device, stream}];
  if (!key) key = std::make_unique<StreamKey>(StreamKey{device, stream});
  return key.get();
}

Tensor empty_pinned(const Shape& shape, DType dtype) {
  DeviceCachingAllocator& pinned = pinned_allocator();
  int64_t numel = 1;
  for (const int64_t d : shape) numel *= d;
  auto storage = std::make_shared<Storage>(static_cast<size_t>(numel) * dtype_size(dtype),
                                           Device::cpu(), pinned);
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), Layout::contiguous(shape), dtype));
}

void empty_device_caches() noexcept {
  Allocators& a = allocators();
  std::lock_guard lock(a.mutex);
  for (const auto& allocator : a.allocators)
    if (allocator) allocator->empty_cache();
  if (a.pinned) a.pinned->empty_cache();
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

bool is_pinned(const Tensor& tensor) {
  if (!tensor.defined() || !tensor.device().is_cpu()) return false;
  const DeviceCachingAllocator* pinned = detail::pinned_allocator_if_made();
  return pinned != nullptr && tensor.storage()->data() != nullptr &&
         pinned->owns(tensor.storage()->data());
}

Tensor pin_memory(const Tensor& tensor) {
  OX_CHECK(tensor.device().is_cpu(), Device, "pin_memory", "the tensor is on ", tensor.device(),
           "; only CPU tensors can be pinned");
  if (is_pinned(tensor)) return tensor;
  Tensor out = detail::empty_pinned(tensor.shape(), tensor.dtype());
  out.copy_(tensor.detach());
  return out;
}

}  // namespace ox::cuda
