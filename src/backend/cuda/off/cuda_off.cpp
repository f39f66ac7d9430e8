// ox::cuda (include/oxmera/cuda.h) in a build without CUDA: nothing is available, and the
// reason says why (OXMERA_CUDA_REASON, set by cmake/cuda.cmake).

#include "backend/backend.h"
#include "backend/cuda/memory.h"
#include "backend/cuda/report.h"
#include "distributed/backends.h"
#include "oxmera/core/error.h"
#include "oxmera/cuda.h"
#include "oxmera/tensor.h"

#ifndef OXMERA_CUDA_REASON
#define OXMERA_CUDA_REASON "this library was built without CUDA"
#endif

namespace ox::cuda {

bool is_available() { return false; }
std::string unavailable_reason() { return OXMERA_CUDA_REASON; }
int device_count() { return 0; }
DeviceProperties get_device_properties(int device) {
  OX_FAIL(Device, "cuda", "device cuda:", device, " does not exist: ", OXMERA_CUDA_REASON);
}
int driver_version() { return 0; }
bool is_built() { return false; }
std::string kernel_fingerprint() { return ""; }
std::vector<std::string> kernel_targets() { return {}; }
KernelForm kernel_form(int device) {
  OX_FAIL(Device, "cuda", "device cuda:", device, " does not exist: ", OXMERA_CUDA_REASON);
}
std::string_view kernel_form_name(KernelForm form) {
  return form == KernelForm::MachineCode ? "machine code"
         : form == KernelForm::PtxJit    ? "PTX JIT"
                                         : "none";
}

// Streams, events and memory: nothing can be used (no Stream can be made, so the members that
// need one are unreachable, and say so all the same).
#define OXMERA_CUDA_OFF(what) OX_FAIL(Device, what, "CUDA is not available: ", OXMERA_CUDA_REASON)
Stream Stream::default_stream(int) { OXMERA_CUDA_OFF("cuda"); }
Stream Stream::create(int) { OXMERA_CUDA_OFF("cuda"); }
void Stream::synchronize() const { OXMERA_CUDA_OFF("cuda"); }
bool Stream::query() const { OXMERA_CUDA_OFF("cuda"); }
void Stream::wait(const Event&) const { OXMERA_CUDA_OFF("cuda"); }
Event::~Event() = default;
Event::Event(Event&& other) noexcept : timing_(other.timing_) {}
Event& Event::operator=(Event&& other) noexcept {
  timing_ = other.timing_;
  return *this;
}
void Event::record(const Stream&) { OXMERA_CUDA_OFF("Event::record"); }
void Event::synchronize() const {}  // never recorded
bool Event::query() const { return true; }
float Event::elapsed_time(const Event&) const { OXMERA_CUDA_OFF("Event::elapsed_time"); }
Stream current_stream(int) { OXMERA_CUDA_OFF("cuda"); }
void set_current_stream(const Stream&) { OXMERA_CUDA_OFF("cuda"); }
StreamGuard::StreamGuard(const Stream& stream) : previous_(stream) { OXMERA_CUDA_OFF("cuda"); }
StreamGuard::~StreamGuard() = default;
void record_stream(const Tensor&, const Stream&) { OXMERA_CUDA_OFF("record_stream"); }
MemoryStats memory_stats(int) { OXMERA_CUDA_OFF("cuda"); }
void reset_peak_memory_stats(int) { OXMERA_CUDA_OFF("cuda"); }
void empty_cache() {}
Tensor pin_memory(const Tensor&) { OXMERA_CUDA_OFF("pin_memory"); }
bool is_pinned(const Tensor&) { return false; }

}  // namespace ox::cuda

namespace ox::cuda::detail {

DeviceCachingAllocator& device_allocator(int) { OXMERA_CUDA_OFF("cuda"); }
DeviceCachingAllocator& pinned_allocator() { OXMERA_CUDA_OFF("pin_memory"); }
DeviceCachingAllocator* pinned_allocator_if_made() noexcept { return nullptr; }
Tensor empty_pinned(const Shape&, DType) { OXMERA_CUDA_OFF("pin_memory"); }
StreamHandle stream_key(int, void*) { OXMERA_CUDA_OFF("cuda"); }
void empty_device_caches() noexcept {}

BackendInfo runtime_report() {
  BackendInfo info;
  info.name = "cuda";
  info.reason = OXMERA_CUDA_REASON;
  info.features.emplace_back("build", "without CUDA: " OXMERA_CUDA_REASON);
  return info;
}

std::unique_ptr<Backend> make_backend() { return nullptr; }

}  // namespace ox::cuda::detail
