// The backend registry and the process-wide runtime settings.

#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/memory.h"
#include "backend/cuda/report.h"
#include "backend/forwarding_backend.h"
#include "backend/thread_governor.h"
#include "oxmera/core/error.h"

namespace ox {

namespace {

// The hardware threads this process may run on: its CPU affinity mask (taskset, cpusets),
// else what the C++ library reports, at least 1.
int hardware_threads() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// More threads than hardware threads only adds contention, and OpenBLAS sizes per-thread
// buffers from the count: under an address-space limit it spun forever retrying them. So the
// count is capped, with a line on stderr saying so (once per distinct request). `source`
// names the request in that line ("set_num_threads(64)", "OMP_NUM_THREADS=64").
void apply_thread_count(int n, const std::string& source) {
  const int cap = hardware_threads();
  if (n > cap) {
    static std::mutex mutex;
    static std::set<int> warned;  // the requests already reported
    const std::lock_guard<std::mutex> lock(mutex);
    if (warned.insert(n).second)
      std::fprintf(stderr,
                   "oxmera: %s exceeds the %d hardware thread%s this process may use; using %d\n",
                   source.c_str(), cap, cap == 1 ? "" : "s", cap);
    n = cap;
  }
  omp_set_num_threads(n);
  cpu::set_blas_threads(n);
  detail::note_requested_threads(n);
}

// The op that last asked for a backend on this thread (backend_for), copied so that a name
// built on the fly cannot dangle: an allocation failure inside a primitive names it.
thread_local std::array<char, 48> t_current_op{};

void remember_op(const char* op) {
  if (op == nullptr) op = "";
  const size_t n = std::min(std::strlen(op), t_current_op.size() - 1);
  std::memcpy(t_current_op.data(), op, n);
  t_current_op[n] = '\0';
}

// Runs one primitive, turning an allocation failure inside it into an ox::Error of kind
// OutOfMemory that names the op: kernels size scratch memory from element counts, and every
// library entry point promises ox::Error, never std::bad_alloc. An OutOfMemory error a kernel
// raised itself (with the byte count) gains the op's name in front of the kernel's.
template <class F>
decltype(auto) guarded(const char* primitive, F&& f) {
  // A copy: an op nested inside the primitive would rename the thread's current op.
  const std::array<char, 48> current = t_current_op;
  const char* op = current[0] != '\0' ? current.data() : primitive;
  try {
    return f();
  } catch (const std::bad_alloc&) {
    OX_FAIL(OutOfMemory, op, "out of memory in the ", primitive,
            " kernel (a scratch allocation failed)");
  } catch (const Error& e) {
    const std::string prefix = std::string("[") + op + "]";
    if (e.kind() != ErrorKind::OutOfMemory || std::string_view(e.what()).starts_with(prefix)) throw;
    OX_FAIL(OutOfMemory, op, e.what());
  }
}

// Every registered backend is wrapped in one of these.
struct Guard {
  template <class F>
  decltype(auto) operator()(const char* primitive, F&& f) const {
    return guarded(primitive, std::forward<F>(f));
  }
};
using GuardedBackend = ForwardingBackend<Guard>;

// Every op looks its backend up, so the lookup is one atomic load, no lock. Backends are never
// destroyed (tensors in static storage may outlive everything), so a registration that replaces
// one keeps the old alive for callers that still hold it.
struct Registry {
  std::array<std::atomic<Backend*>, kNumDeviceTypes> current{};
  std::mutex mutex;                             // guards `owned`
  std::vector<std::unique_ptr<Backend>> owned;  // every backend ever registered

  void install(std::unique_ptr<Backend> backend) {
    const std::lock_guard lock(mutex);
    const auto type = static_cast<size_t>(backend->device_type());
    owned.push_back(std::make_unique<GuardedBackend>(std::move(backend), Guard{}));
    current[type].store(owned.back().get(), std::memory_order_release);
  }
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry();  // never destroyed, as the backends
    reg->install(cpu::make_backend());
    // OMP_NUM_THREADS may ask for more threads than the hardware has: capped as a request is.
    if (const int n = omp_get_max_threads(); n > hardware_threads())
      apply_thread_count(n, "OMP_NUM_THREADS=" + std::to_string(n));
    return reg;
  }();
  return *r;
}

}  // namespace

Backend* find_backend(DeviceType type) {
  Registry& r = registry();
  Backend* b = r.current[static_cast<size_t>(type)].load(std::memory_order_acquire);
  if (b == nullptr && type == DeviceType::CUDA) [[unlikely]] {
    // Made on the first use of CUDA, not at start-up: loading the driver and cuInit take time
    // a CPU-only program should not pay. A backend registered before (the tests' stand-in) is
    // kept.
    static std::once_flag once;
    std::call_once(once, [&r] {
      if (r.current[static_cast<size_t>(DeviceType::CUDA)].load() != nullptr) return;
      if (std::unique_ptr<Backend> cuda = cuda::detail::make_backend()) r.install(std::move(cuda));
    });
    b = r.current[static_cast<size_t>(type)].load(std::memory_order_acquire);
  }
  return b;
}

void register_backend(std::unique_ptr<Backend> backend) { registry().install(std::move(backend)); }

Backend& backend_for(DeviceType type, const char* op) {
  remember_op(op);
  if (type == DeviceType::CPU) detail::govern_threads();
  Backend* b = find_backend(type);
  if (b == nullptr) [[unlikely]] {
    const std::string why = type == DeviceType::CUDA ? cuda::detail::runtime_report().reason
                                                     : std::string("not built into this library");
    OX_FAIL(Device, op, "no ", device_type_name(type), " backend: ", why,
            " (`oxmera doctor` says which backends exist and why)");
  }
  return *b;
}

Backend& backend_for(Device device, const char* op) {
  Backend& b = backend_for(device.type(), op);
  OX_CHECK(device.index() >= 0 && device.index() < b.device_count(), Device, op, "device ", device,
           " does not exist (", b.device_count(), " ", device_type_name(device.type()),
           " device(s) present)");
  return b;
}

std::vector<BackendInfo> backend_infos() {
  std::vector<BackendInfo> infos;
  for (int t = 0; t < kNumDeviceTypes; ++t) {
    const auto type = static_cast<DeviceType>(t);
    if (Backend* b = find_backend(type)) {
      infos.push_back(b->info());
    } else if (type == DeviceType::CUDA) {
      infos.push_back(cuda::detail::runtime_report());  // why there is no CUDA backend
    } else {
      BackendInfo missing;
      missing.name = std::string(device_type_name(type));
      missing.reason = "not built into this library";
      infos.push_back(missing);
    }
  }
  return infos;
}

void set_num_threads(int n) {
  OX_CHECK(n >= 1, Value, "set_num_threads", "thread count must be at least 1, got ", n);
  apply_thread_count(n, "set_num_threads(" + std::to_string(n) + ")");
}

int get_num_threads() {
  registry();  // applies the cap to a count that came from OMP_NUM_THREADS
  // The count asked for, not what the thread governor has lowered it to for now.
  return detail::requested_threads();
}

void synchronize(Device device) { backend_for(device, "synchronize").synchronize(device.index()); }

void synchronize() {
  for (int t = 0; t < kNumDeviceTypes; ++t)
    if (Backend* b = find_backend(static_cast<DeviceType>(t)))
      for (int d = 0; d < b->device_count(); ++d) b->synchronize(d);
}

void empty_cache() {
  for (int t = 0; t < kNumDeviceTypes; ++t)
    if (Backend* b = find_backend(static_cast<DeviceType>(t)))
      for (int d = 0; d < b->device_count(); ++d) b->allocator(d).empty_cache();
  // Pinned host memory is cached too (and the device caches when another backend, the tests'
  // stand-in, took CUDA's place).
  cuda::detail::empty_device_caches();
}

}  // namespace ox
