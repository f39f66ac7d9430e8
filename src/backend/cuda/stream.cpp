// Streams and events (include/oxmera/cuda.h; docs/CUDA.md "Streams") over the driver.

#include <array>
#include <mutex>
#include <utility>
#include <vector>

#include "backend/cuda/driver.h"
#include "backend/cuda/memory.h"
#include "backend/cuda/module.h"
#include "oxmera/core/error.h"
#include "oxmera/cuda.h"
#include "oxmera/tensor.h"
#include "tensor/storage.h"

namespace ox::cuda {

namespace {

// The driver, with `device`'s primary context current on this thread.
const detail::Driver& on_device(int device) {
  const detail::Driver& d = detail::driver_for(device);
  detail::set_device(device);
  return d;
}

CUstream cu(const Stream& s) { return static_cast<CUstream>(s.handle()); }

struct StreamPools {
  std::mutex mutex;
  std::vector<std::array<CUstream, Stream::kPoolSize>> streams;  // per device; nullptr: not yet
  std::vector<unsigned> next;
};

StreamPools& stream_pools() {
  static auto* pools = new StreamPools();  // never destroyed: the streams live for the process
  return *pools;
}

// This thread's current stream of each device (nullptr: the default stream).
std::vector<void*>& current_streams() {
  thread_local std::vector<void*> current;
  return current;
}

}  // namespace

Stream Stream::default_stream(int device) {
  detail::driver_for(device);
  return Stream(device, nullptr);
}

Stream Stream::create(int device) {
  const detail::Driver& d = detail::driver_for(device);
  StreamPools& p = stream_pools();
  std::lock_guard lock(p.mutex);
  if (p.streams.size() <= static_cast<size_t>(device)) {
    p.streams.resize(static_cast<size_t>(device) + 1, {});
    p.next.resize(static_cast<size_t>(device) + 1, 0);
  }
  CUstream& s = p.streams[device][p.next[device]++ % kPoolSize];
  if (s == nullptr) {
    detail::set_device(device);
    detail::check(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  return Stream(device, s);
}

void Stream::synchronize() const {
  detail::check(on_device(device_).cuStreamSynchronize(cu(*this)), "cuStreamSynchronize");
}

bool Stream::query() const {
  const CUresult r = on_device(device_).cuStreamQuery(cu(*this));
  if (r == CUDA_ERROR_NOT_READY) return false;
  detail::check(r, "cuStreamQuery");
  return true;
}

void Stream::wait(const Event& event) const {
  if (event.handle_ == nullptr) return;  // never recorded: nothing to wait for
  detail::check(
      on_device(device_).cuStreamWaitEvent(cu(*this), static_cast<CUevent>(event.handle_), 0),
      "cuStreamWaitEvent");
}

Event::~Event() {
  if (handle_ != nullptr) detail::driver().cuEventDestroy(static_cast<CUevent>(handle_));
}

Event::Event(Event&& other) noexcept
    : device_(std::exchange(other.device_, -1)),
      handle_(std::exchange(other.handle_, nullptr)),
      timing_(other.timing_) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    std::swap(device_, other.device_);
    std::swap(handle_, other.handle_);
    std::swap(timing_, other.timing_);
  }
  return *this;
}

void Event::record(const Stream& stream) {
  const detail::Driver& d = on_device(stream.device());
  if (handle_ == nullptr) {
    CUevent e = nullptr;
    detail::check(d.cuEventCreate(&e, timing_ ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING),
                  "cuEventCreate");
    handle_ = e;
    device_ = stream.device();
  }
  OX_CHECK(device_ == stream.device(), Device, "Event::record",
           "the event belongs to cuda:", device_, ", the stream to cuda:", stream.device());
  detail::check(d.cuEventRecord(static_cast<CUevent>(handle_), cu(stream)), "cuEventRecord");
}

void Event::synchronize() const {
  if (handle_ == nullptr) return;
  detail::check(detail::driver().cuEventSynchronize(static_cast<CUevent>(handle_)),
                "cuEventSynchronize");
}

bool Event::query() const {
  if (handle_ == nullptr) return true;
  const CUresult r = detail::driver().cuEventQuery(static_cast<CUevent>(handle_));
  if (r == CUDA_ERROR_NOT_READY) return false;
  detail::check(r, "cuEventQuery");
  return true;
}

float Event::elapsed_time(const Event& end) const {
  OX_CHECK(handle_ != nullptr && end.handle_ != nullptr, Value, "Event::elapsed_time",
           "both events must be recorded");
  OX_CHECK(timing_ && end.timing_, Value, "Event::elapsed_time",
           "both events must be created with enable_timing = true");
  float ms = 0;
  detail::check(detail::driver().cuEventElapsedTime(&ms, static_cast<CUevent>(handle_),
                                                    static_cast<CUevent>(end.handle_)),
                "cuEventElapsedTime");
  return ms;
}

Stream current_stream(int device) {
  detail::driver_for(device);
  const std::vector<void*>& current = current_streams();
  return static_cast<size_t>(device) < current.size() ? Stream(device, current[device])
                                                      : Stream(device, nullptr);
}

void set_current_stream(const Stream& stream) {
  std::vector<void*>& current = current_streams();
  if (current.size() <= static_cast<size_t>(stream.device()))
    current.resize(static_cast<size_t>(stream.device()) + 1, nullptr);
  current[stream.device()] = stream.handle();
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device())) {
  set_current_stream(stream);
}

StreamGuard::~StreamGuard() { set_current_stream(previous_); }

void record_stream(const Tensor& tensor, const Stream& stream) {
  if (is_pinned(tensor)) {  // a copy between it and the device ran on `stream`
    detail::pinned_allocator().record_stream(tensor.storage()->data(),
                                             detail::stream_key(stream.device(), stream.handle()));
    return;
  }
  OX_CHECK(tensor.device() == Device::cuda(stream.device()), Device, "record_stream",
           "the tensor is on ", tensor.device(), ", the stream on cuda:", stream.device(),
           " (a CPU tensor must be pinned)");
  const std::shared_ptr<Storage>& storage = tensor.storage();
  // Memory the allocator does not own (from_blob) is the caller's to order.
  if (storage && storage->data() != nullptr)
    detail::device_allocator(stream.device()).record_stream(storage->data(), stream.handle());
}

}  // namespace ox::cuda
