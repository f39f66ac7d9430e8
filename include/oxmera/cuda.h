#pragma once
// CUDA: whether this process can use it and why not, its devices, and the kernels this library
// carries (as torch.cuda.is_available() and friends). Present in every build: a library built
// without CUDA answers "not available" with the reason. Nothing here needs a CUDA header, and
// nothing links the driver: it is loaded at run time (libcuda.so.1, or the file
// OXMERA_CUDA_DRIVER names), on first use.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ox {
class Tensor;
}

namespace ox::cuda {

// Whether CUDA kernels can run here: built with CUDA, the driver loaded and initialized, new
// enough for the kernels, and at least one device.
bool is_available();
// Why not, in words ("" when available): the build, the driver's absence (the dlopen error),
// cuInit's error, an old driver, or no device.
std::string unavailable_reason();

// Devices the driver reports (0 without a usable driver).
int device_count();
struct DeviceProperties {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int major = 0;     // compute capability
  int minor = 0;
  uint64_t total_memory = 0;  // bytes
  int multiprocessor_count = 0;
};
// Throws ox::Error (Device) for an index outside [0, device_count()).
DeviceProperties get_device_properties(int device = 0);
// The CUDA version the driver supports (13000 for 13.0), 0 when no driver could be initialized.
int driver_version();

// Whether this library was built with CUDA kernels (nvcc found and OXMERA_CUDA on).
bool is_built();
// The stamp of the embedded kernels: a hash of their sources, the nvcc version, flags and
// targets ("" in a build without CUDA). The loader refuses a module whose stamp differs.
std::string kernel_fingerprint();
// The targets embedded: "sm_75", ..., and "compute_75" for PTX ({} in a build without CUDA).
std::vector<std::string> kernel_targets();

// How a device runs the embedded kernels: machine code built for it (or for a lower minor of
// its compute capability's major), PTX compiled by the driver on first load, or not at all
// (older than the PTX target).
enum class KernelForm { None, MachineCode, PtxJit };
KernelForm kernel_form(int device = 0);
std::string_view kernel_form_name(KernelForm form);  // "machine code", "PTX JIT", "none"

// ---- Streams and events (docs/CUDA.md "Streams") ---------------------------------------------
// Where CUDA is not available, everything below that needs a device raises ox::Error (Device)
// with unavailable_reason().

class Event;

// A queue of work on one device. A value: copies name the same queue. Streams live as long as
// the process (the allocator keys cached blocks by them), so create() hands out the streams of a
// fixed pool per device in turn, as PyTorch does.
class Stream {
 public:
  // The device's default stream (the legacy default stream of its primary context).
  static Stream default_stream(int device = 0);
  // A non-blocking stream (it does not wait for the default stream): the next of the device's
  // pool of kPoolSize, created on first use.
  static Stream create(int device = 0);
  static constexpr int kPoolSize = 32;

  int device() const { return device_; }
  void* handle() const { return handle_; }  // the CUstream; nullptr for the default stream
  bool is_default() const { return handle_ == nullptr; }
  // Blocks until every piece of work queued on the stream has finished.
  void synchronize() const;
  // Whether every piece of work queued so far has finished (never blocks).
  bool query() const;
  // Work queued on this stream from now on waits for `event` (recorded on any stream).
  void wait(const Event& event) const;

  friend bool operator==(const Stream&, const Stream&) = default;

 private:
  friend Stream current_stream(int device);
  Stream(int device, void* handle) : device_(device), handle_(handle) {}
  int device_;
  void* handle_;
};

// A marker in a stream's work. Created on its first record(); move-only. An event never
// recorded counts as completed.
class Event {
 public:
  explicit Event(bool enable_timing = false) : timing_(enable_timing) {}
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Marks the work queued on `stream` so far (re-recording moves the marker; the stream must be
  // on the device of the first record).
  void record(const Stream& stream);
  void synchronize() const;  // blocks until the marked work has finished
  bool query() const;        // whether it has (never blocks)
  // Milliseconds from this event to `end`, both recorded with timing enabled and completed.
  float elapsed_time(const Event& end) const;
  bool is_recorded() const { return handle_ != nullptr; }
  int device() const { return device_; }

 private:
  friend class Stream;
  int device_ = -1;
  void* handle_ = nullptr;  // CUevent
  bool timing_;
};

// The stream new work on `device` is queued on, for this thread: the default stream until
// set_current_stream (or a StreamGuard) names another.
Stream current_stream(int device = 0);
void set_current_stream(const Stream& stream);

// Makes `stream` current on its device for this thread, and restores the previous current
// stream of that device when it goes out of scope (c10::cuda::CUDAStreamGuard).
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream);
  ~StreamGuard();
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;

 private:
  Stream previous_;
};

// The memory of `tensor` (on stream.device(), or pinned host memory) is not reused by the allocator
// until the work queued on `stream` when the tensor's storage is freed has completed (torch's
// record_stream): call it when a stream other than the one the tensor was allocated on uses the
// tensor.
void record_stream(const Tensor& tensor, const Stream& stream);

// ---- Memory (docs/CUDA.md "Memory") ----------------------------------------------------------
struct MemoryStats {
  uint64_t allocated = 0;       // bytes in tensors' blocks (rounded to 512)
  uint64_t reserved = 0;        // bytes the caching allocator holds on the device
  uint64_t peak_allocated = 0;  // since the start or reset_peak_memory_stats
  uint64_t peak_reserved = 0;
  uint64_t allocations = 0;    // live blocks
  uint64_t segments = 0;       // reservations (cuMemAlloc calls) held
  uint64_t cache_flushes = 0;  // times the cache was emptied to retry after out-of-memory
  uint64_t ooms = 0;           // out-of-memory errors raised
};
MemoryStats memory_stats(int device = 0);
void reset_peak_memory_stats(int device = 0);
// A copy of `tensor` (a CPU tensor) in page-locked host memory, which the GPU reads and writes
// directly; `tensor` itself when it is pinned already. Pinned blocks are cached like device
// memory; record_stream(pinned, stream) keeps a block from reuse until the work on `stream` (an
// asynchronous copy) has completed.
Tensor pin_memory(const Tensor& tensor);
bool is_pinned(const Tensor& tensor);  // false for any tensor where CUDA is unavailable

// Releases every cached segment that holds no live tensor, on every device the allocator has
// been used on (ox::empty_cache() does this too). Does nothing where CUDA was never used.
void empty_cache();

}  // namespace ox::cuda
