#pragma once
// What every CUDA launcher (the Backend's primitives in src/backend/cuda/<family>.cpp) uses:
// the device's context and current stream, kernels looked up once, launches, stream-ordered
// scratch memory, the layouts kernels walk (kernels/offsets.cuh) and the device's check word.
//
// Conventions (docs/CUDA.md "Kernels"): a family's kernels are extern "C" in
// kernels/<family>.cu, named ox_<what>_<dtype> with DType's short names (f32, bf16, i64, bool);
// a launcher never waits for the device, and reports bad values through the check word.

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "backend/cuda/kernels/check.cuh"
#include "backend/cuda/kernels/offsets.cuh"
#include "backend/cuda/module.h"

namespace ox::cuda::detail {

struct Driver;

// A device ready for launches: its primary context current on this thread, and the thread's
// current stream there (ox::cuda::current_stream).
struct DeviceContext {
  int device = 0;
  CUstream stream = nullptr;
  const Driver* driver = nullptr;
};
DeviceContext enter(int device);
DeviceContext enter(const StridedArray& on);  // the device `on` lives on

// The function `name` of the family, looked up on first use per device and then read with one
// atomic load. The name must outlive the process (a literal) or be built by kernel_name.
class KernelRef {
 public:
  constexpr KernelRef(const char* family, const char* name) : family_(family), name_(name) {}
  CUfunction get(int device) const;

 private:
  static constexpr int kDevices = 16;
  const char* family_;
  const char* name_;
  mutable std::array<std::atomic<CUfunction>, kDevices> cached_{};
};

// A table of kernels with one entry per (row, dtype), e.g. one per UnaryOp and dtype, named
// "<prefix><row name>_<dtype>": looked up once each per device.
template <int kRows>
class KernelTable {
 public:
  KernelTable(const char* family, std::string prefix, std::array<std::string, kRows> rows)
      : family_(family), prefix_(std::move(prefix)), rows_(std::move(rows)) {}
  CUfunction get(int device, int row, DType dtype) const {
    std::atomic<CUfunction>& slot = slot_at(device, row, dtype);
    CUfunction f = slot.load(std::memory_order_acquire);
    if (f == nullptr) {
      const std::string name = prefix_ + rows_[row] + "_" + std::string(dtype_name(dtype));
      f = kernel(device, family_, name.c_str());  // module.h: a lock and a map lookup
      slot.store(f, std::memory_order_release);
    }
    return f;
  }

 private:
  static constexpr int kDevices = 16;
  std::atomic<CUfunction>& slot_at(int device, int row, DType dtype) const {
    OX_ASSERT(device >= 0 && device < kDevices && row >= 0 && row < kRows, "kernel table slot");
    return cached_[(size_t(device) * kRows + size_t(row)) * kNumDTypes + size_t(dtype)];
  }
  const char* family_;
  std::string prefix_;
  std::array<std::string, kRows> rows_;
  mutable std::array<std::atomic<CUfunction>, kDevices * kRows * kNumDTypes> cached_{};
};

// A launch: grid and block in x (y and z where given), dynamic shared memory in bytes.
struct Grid {
  unsigned blocks = 1, threads = 256;
  unsigned blocks_y = 1, blocks_z = 1;
  unsigned threads_y = 1;
  unsigned shared_bytes = 0;
};
// A grid-stride launch over n elements: 256 threads, blocks to cover n up to a cap that keeps
// every SM busy (the kernels loop over the rest).
Grid grid_for(int64_t n, unsigned threads = 256);

void launch(const DeviceContext& at, CUfunction f, const Grid& g, void** args);
// Kernel arguments by value, in the kernel's parameter order and types.
template <class... A>
void launch(const DeviceContext& at, CUfunction f, const Grid& g, const A&... args) {
  void* params[] = {const_cast<void*>(static_cast<const void*>(&args))..., nullptr};
  launch(at, f, g, params);
}

// Memory for a launcher's intermediate results, from the device's caching allocator on the
// current stream: freed when it goes out of scope, and reused only by work queued after the
// kernels that used it (stream order), so nothing waits.
class DeviceBuffer {
 public:
  DeviceBuffer(const DeviceContext& at, size_t nbytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return data_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  int device_;
  void* data_;
  size_t nbytes_;
};

// The layout of N operands of one shape for a kernel: size-1 dims dropped, dims merged where
// every operand steps through them as one, in row-major order (the kernels' index i is the
// row-major index over the shape). An ox::Error (Device) names the op when more than kMaxDims
// dims remain.
using kernels::Offsets;
template <int N>
Offsets<N> make_offsets(const Shape& shape, const std::array<const Strides*, N>& strides,
                        const char* op);
template <int N>
Offsets<N> make_offsets(const std::array<const StridedArray*, N>& arrays, const char* op) {
  std::array<const Strides*, N> strides;
  for (int k = 0; k < N; ++k) strides[k] = &arrays[k]->strides;
  return make_offsets<N>(arrays[0]->shape, strides, op);
}
// Whether every array is contiguous (row-major, any shape): the kernels' vector path.
bool all_contiguous(std::initializer_list<const StridedArray*> arrays);

// The device address of `device`'s check word (kernels/check.cuh), in page-locked host memory
// the device writes; made on first use.
kernels::CheckWord* check_word(int device);
// Raises the report in `device`'s check word, if any, and clears it. Call only after the work
// that could write it has finished (a synchronized stream or context).
void raise_reported_check(int device);

// 0, 1, 2, 3 for elements of 1, 2, 4, 8 bytes: the row of kernels that move elements as words.
inline int width_index(DType dtype) {
  switch (dtype_size(dtype)) {
    case 1:
      return 0;
    case 2:
      return 1;
    case 4:
      return 2;
    default:
      return 3;
  }
}

// The bits of `value` converted to `dtype` as the CPU backend converts a Scalar (fill's value),
// in the low dtype_size(dtype) bytes.
uint64_t scalar_bits(const Scalar& value, DType dtype);

}  // namespace ox::cuda::detail
