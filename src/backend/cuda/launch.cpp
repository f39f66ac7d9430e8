// The launch layer every CUDA launcher uses (launch.h).

#include "backend/cuda/launch.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "backend/cuda/driver.h"
#include "backend/cuda/memory.h"
#include "backend/cuda/module.h"
#include "core/convert.h"
#include "core/dispatch.h"
#include "oxmera/core/error.h"
#include "oxmera/cuda.h"

namespace ox::cuda::detail {

namespace {

struct DeviceInfo {
  std::once_flag once;
  int multiprocessors = 1;
  kernels::CheckWord* host_word = nullptr;    // the check word as the host reads it
  kernels::CheckWord* device_word = nullptr;  // and as kernels address it
};

DeviceInfo& device_info(int device) {
  static auto* infos = new std::vector<DeviceInfo>(64);  // never destroyed, as the contexts
  OX_ASSERT(device >= 0 && device < int(infos->size()), "cuda device index ", device);
  DeviceInfo& info = (*infos)[size_t(device)];
  std::call_once(info.once, [&] {
    const Driver& d = driver_for(device);
    set_device(device);
    CUdevice dev{};
    check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    check(d.cuDeviceGetAttribute(&info.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                 dev),
          "cuDeviceGetAttribute");
    void* host = nullptr;
    check(d.cuMemHostAlloc(&host, sizeof(kernels::CheckWord),
                           CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
          "cuMemHostAlloc");
    std::memset(host, 0, sizeof(kernels::CheckWord));
    CUdeviceptr mapped = 0;
    check(d.cuMemHostGetDevicePointer(&mapped, host, 0), "cuMemHostGetDevicePointer");
    info.host_word = static_cast<kernels::CheckWord*>(host);
    info.device_word = reinterpret_cast<kernels::CheckWord*>(mapped);
  });
  return info;
}

}  // namespace

DeviceContext enter(int device) {
  const Driver& d = driver_for(device);
  device_info(device);
  set_device(device);  // a thread-local check when the device is already current
  return {device, static_cast<CUstream>(current_stream(device).handle()), &d};
}

DeviceContext enter(const StridedArray& on) {
  OX_ASSERT(on.device.type() == DeviceType::CUDA, "a CUDA launcher given a ",
            device_type_name(on.device.type()), " array");
  return enter(on.device.index());
}

CUfunction KernelRef::get(int device) const {
  OX_ASSERT(device >= 0 && device < kDevices, "cuda device index ", device);
  std::atomic<CUfunction>& slot = cached_[size_t(device)];
  CUfunction f = slot.load(std::memory_order_acquire);
  if (f == nullptr) {
    f = kernel(device, family_, name_);
    slot.store(f, std::memory_order_release);
  }
  return f;
}

Grid grid_for(int64_t n, unsigned threads) {
  Grid g;
  g.threads = threads;
  const int64_t wanted = std::max<int64_t>(1, (n + threads - 1) / threads);
  // 32 resident blocks of 256 threads per SM at most: more only adds scheduling.
  const int64_t cap = int64_t(32) * 132;
  g.blocks = unsigned(std::min(wanted, cap));
  return g;
}

void launch(const DeviceContext& at, CUfunction f, const Grid& g, void** args) {
  if (g.blocks == 0 || g.blocks_y == 0 || g.blocks_z == 0) return;
  check(at.driver->cuLaunchKernel(f, g.blocks, g.blocks_y, g.blocks_z, g.threads, g.threads_y, 1,
                                  g.shared_bytes, at.stream, args, nullptr),
        "cuLaunchKernel");
}

DeviceBuffer::DeviceBuffer(const DeviceContext& at, size_t nbytes)
    : device_(at.device), data_(nullptr), nbytes_(nbytes) {
  if (nbytes > 0) data_ = device_allocator(at.device).allocate(nbytes, at.stream);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) device_allocator(device_).deallocate(data_, nbytes_);
}

template <int N>
Offsets<N> make_offsets(const Shape& shape, const std::array<const Strides*, N>& strides,
                        const char* op) {
  // Dims from the innermost out, size-1 dims dropped, each merged into the one inside it when
  // every operand's stride there is the inner stride times the inner size.
  struct Dim {
    int64_t size;
    std::array<int64_t, N> stride;
  };
  std::vector<Dim> dims;  // innermost first
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    if (shape[size_t(d)] == 1) continue;
    Dim dim{shape[size_t(d)], {}};
    for (int k = 0; k < N; ++k) dim.stride[size_t(k)] = (*strides[size_t(k)])[size_t(d)];
    if (!dims.empty()) {
      Dim& inner = dims.back();
      bool merges = true;
      for (int k = 0; k < N; ++k)
        merges = merges && dim.stride[size_t(k)] == inner.stride[size_t(k)] * inner.size;
      if (merges) {
        inner.size *= dim.size;
        continue;
      }
    }
    dims.push_back(dim);
  }
  OX_CHECK(dims.size() <= size_t(kernels::kMaxDims), Device, op, "a CUDA kernel takes at most ",
           kernels::kMaxDims, " dims after merging; this layout of shape ", shape, " has ",
           dims.size());
  Offsets<N> o;
  o.ndim = int32_t(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = dims.size() - 1 - i;  // outermost first in the kernel's layout
    o.sizes[d] = dims[i].size;
    for (int k = 0; k < N; ++k) o.strides[k][d] = dims[i].stride[size_t(k)];
  }
  return o;
}

template Offsets<1> make_offsets<1>(const Shape&, const std::array<const Strides*, 1>&,
                                    const char*);
template Offsets<2> make_offsets<2>(const Shape&, const std::array<const Strides*, 2>&,
                                    const char*);
template Offsets<3> make_offsets<3>(const Shape&, const std::array<const Strides*, 3>&,
                                    const char*);
template Offsets<4> make_offsets<4>(const Shape&, const std::array<const Strides*, 4>&,
                                    const char*);

bool all_contiguous(std::initializer_list<const StridedArray*> arrays) {
  return std::all_of(arrays.begin(), arrays.end(),
                     [](const StridedArray* a) { return a->is_contiguous(); });
}

kernels::CheckWord* check_word(int device) { return device_info(device).device_word; }

void raise_reported_check(int device) {
  kernels::CheckWord* word = device_info(device).host_word;
  if (word->failed == 0) return;
  const CheckFailure failure{word->site, word->value, word->position, word->bound};
  std::memset(word, 0, sizeof(kernels::CheckWord));
  raise_check_failure(failure);
}

uint64_t scalar_bits(const Scalar& value, DType dtype) {
  return dispatch_dtype(dtype, [&]<class T>() {
    const T v = elementwise::scalar_as<T>(value);
    uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    return bits;
  });
}

}  // namespace ox::cuda::detail
