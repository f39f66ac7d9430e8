// Loading the CUDA driver at run time.

#include "backend/cuda/driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

#define OXMERA_STRINGIFY2(x) #x
#define OXMERA_STRINGIFY(x) OXMERA_STRINGIFY2(x)

const char* result_name(CUresult r) {
  switch (r) {
#define OXMERA_RESULT(e) \
  case e:                \
    return #e;
    OXMERA_RESULT(CUDA_SUCCESS)
    OXMERA_RESULT(CUDA_ERROR_INVALID_VALUE)
    OXMERA_RESULT(CUDA_ERROR_OUT_OF_MEMORY)
    OXMERA_RESULT(CUDA_ERROR_NOT_INITIALIZED)
    OXMERA_RESULT(CUDA_ERROR_DEINITIALIZED)
    OXMERA_RESULT(CUDA_ERROR_STUB_LIBRARY)
    OXMERA_RESULT(CUDA_ERROR_DEVICE_UNAVAILABLE)
    OXMERA_RESULT(CUDA_ERROR_NO_DEVICE)
    OXMERA_RESULT(CUDA_ERROR_INVALID_DEVICE)
    OXMERA_RESULT(CUDA_ERROR_DEVICE_NOT_LICENSED)
    OXMERA_RESULT(CUDA_ERROR_INVALID_IMAGE)
    OXMERA_RESULT(CUDA_ERROR_INVALID_CONTEXT)
    OXMERA_RESULT(CUDA_ERROR_NO_BINARY_FOR_GPU)
    OXMERA_RESULT(CUDA_ERROR_INVALID_PTX)
    OXMERA_RESULT(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    OXMERA_RESULT(CUDA_ERROR_JIT_COMPILER_NOT_FOUND)
    OXMERA_RESULT(CUDA_ERROR_NOT_FOUND)
    OXMERA_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS)
    OXMERA_RESULT(CUDA_ERROR_LAUNCH_FAILED)
    OXMERA_RESULT(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)
    OXMERA_RESULT(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE)
    OXMERA_RESULT(CUDA_ERROR_SYSTEM_NOT_READY)
    OXMERA_RESULT(CUDA_ERROR_UNKNOWN)
#undef OXMERA_RESULT
    default:
      return nullptr;
  }
}

// Words for the results a user meets when CUDA cannot start (a stub driver answers
// cuGetErrorString with an error of its own).
const char* result_text(CUresult r) {
  switch (r) {
    case CUDA_ERROR_STUB_LIBRARY:
      return "this libcuda is the toolkit's stub for linking, not a driver";
    case CUDA_ERROR_NO_DEVICE:
      return "no CUDA-capable device is detected";
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
      return "the kernel driver and libcuda versions differ";
    default:
      return nullptr;
  }
}

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Resolves every entry point; "" on success, else what is missing.
std::string resolve(Driver& d) {
  using GetProcAddress = decltype(&::cuGetProcAddress);  // cuGetProcAddress_v2 (CUDA 12.0+)
  const auto get_proc =
      reinterpret_cast<GetProcAddress>(dlsym(d.handle, OXMERA_STRINGIFY(cuGetProcAddress)));
  std::string missing;
  auto lookup = [&](const char* base, const char* versioned, void** slot) {
    if (get_proc != nullptr) {
      CUdriverProcAddressQueryResult status{};
      if (get_proc(base, slot, kDriverAbiVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status) ==
              CUDA_SUCCESS &&
          *slot != nullptr)
        return;
    }
    *slot = dlsym(d.handle, versioned);
    if (*slot == nullptr) missing += std::string(missing.empty() ? "" : ", ") + versioned;
  };
  // #name is the API's name (cuGetProcAddress picks its version); OXMERA_STRINGIFY(name) is the
  // versioned symbol <cuda.h> maps it to (for dlsym).
#define OXMERA_CUDA_LOOKUP(name) \
  lookup(#name, OXMERA_STRINGIFY(name), reinterpret_cast<void**>(&d.name));
  OXMERA_CUDA_DRIVER_FUNCTIONS(OXMERA_CUDA_LOOKUP)
#undef OXMERA_CUDA_LOOKUP
  return missing;
}

}  // namespace

std::string describe(const Driver* driver, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver != nullptr && driver->cuGetErrorName != nullptr &&
      driver->cuGetErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (driver != nullptr && driver->cuGetErrorString != nullptr &&
      driver->cuGetErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  if (name == nullptr) name = result_name(result);
  if (text == nullptr) text = result_text(result);
  std::string out = name != nullptr ? name : "CUresult " + std::to_string(static_cast<int>(result));
  if (text != nullptr) out += std::string(" (") + text + ")";
  return out;
}

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) [[likely]]
    return;
  const Driver* d = driver_state().driver.get();
  if (result == CUDA_ERROR_OUT_OF_MEMORY)
    OX_FAIL(OutOfMemory, "cuda", call, " failed: ", describe(d, result));
  OX_FAIL(Backend, "cuda", call, " failed: ", describe(d, result));
}

DriverState load_driver(const std::string& path) {
  DriverState state;
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    state.status = "not loaded: " + std::string(error != nullptr ? error : "dlopen failed");
    state.reason = (path == "libcuda.so.1" ? "no NVIDIA driver (" : "no CUDA driver (") + path +
                   " could not be loaded: " + (error != nullptr ? error : "dlopen failed") + ")";
    return state;
  }
  auto d = std::make_unique<Driver>();
  d->path = path;
  d->handle = handle;  // never closed: modules and contexts live until the process ends
  if (const std::string missing = resolve(*d); !missing.empty()) {
    state.status = path + " loaded, but it lacks " + missing;
    state.reason = "the CUDA driver " + state.status;
    return state;
  }
  if (const CUresult r = d->cuInit(0); r != CUDA_SUCCESS) {
    state.status = path + " loaded, cuInit failed: " + describe(d.get(), r);
    state.reason = "cuInit failed: " + describe(d.get(), r) + " (driver " + path + ")";
    return state;
  }
  int version = 0;
  if (const CUresult r = d->cuDriverGetVersion(&version); r != CUDA_SUCCESS) {
    state.reason = "cuDriverGetVersion failed: " + describe(d.get(), r);
    state.status = path + " loaded, " + state.reason;
    return state;
  }
  d->version = version;
  state.status = "CUDA " + version_text(version) + " (" + path + ")";
  int count = 0;
  if (const CUresult r = d->cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    state.reason = "cuDeviceGetCount failed: " + describe(d.get(), r);
    count = 0;
  }
  state.device_count = count;
  // The kernels need a driver of their toolkit's major version or newer (CUDA_VERSION is the
  // toolkit's: <cuda.h> comes from the nvcc that built them).
  if (state.reason.empty() && version / 1000 < CUDA_VERSION / 1000)
    state.reason = "the driver supports CUDA " + version_text(version) +
                   "; the kernels were built with CUDA " + version_text(CUDA_VERSION) +
                   " and need a driver for CUDA " + std::to_string(CUDA_VERSION / 1000) +
                   ".0 or newer";
  if (state.reason.empty() && count == 0) state.reason = "the CUDA driver reports no device";
  state.driver = std::move(d);
  return state;
}

const DriverState& driver_state() {
  static const DriverState state = [] {
    const char* env = std::getenv("OXMERA_CUDA_DRIVER");
    return load_driver(env != nullptr && *env != '\0' ? env : "libcuda.so.1");
  }();
  return state;
}

const Driver& driver() {
  const DriverState& s = driver_state();
  OX_CHECK(s.driver != nullptr && s.reason.empty(), Device, "cuda",
           "CUDA is not available: ", s.reason);
  return *s.driver;
}

const Driver& driver_for(int device) {
  const Driver& d = driver();
  const int count = driver_state().device_count;
  OX_CHECK(device >= 0 && device < count, Device, "cuda", "device cuda:", device,
           " does not exist (", count, " CUDA device(s) present)");
  return d;
}

}  // namespace ox::cuda::detail
