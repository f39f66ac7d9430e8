#pragma once
// The CUDA driver, loaded at run time: dlopen("libcuda.so.1") (or the file OXMERA_CUDA_DRIVER
// names), entry points resolved through cuGetProcAddress (or dlsym of their versioned names on
// drivers older than 12.0), cuInit. <cuda.h> gives the types only; nothing links libcuda.

#include <cuda.h>

#include <memory>
#include <string>

namespace ox::cuda::detail {

// The ABI the entry points are requested at: every function below has kept this signature
// since CUDA 12.0.
constexpr int kDriverAbiVersion = 12000;

#define OXMERA_CUDA_DRIVER_FUNCTIONS(X) \
  X(cuGetErrorName)                     \
  X(cuGetErrorString)                   \
  X(cuInit)                             \
  X(cuDriverGetVersion)                 \
  X(cuDeviceGetCount)                   \
  X(cuDeviceGet)                        \
  X(cuDeviceGetName)                    \
  X(cuDeviceGetAttribute)               \
  X(cuDeviceTotalMem)                   \
  X(cuDevicePrimaryCtxRetain)           \
  X(cuDevicePrimaryCtxRelease)          \
  X(cuCtxSetCurrent)                    \
  X(cuCtxGetCurrent)                    \
  X(cuCtxSynchronize)                   \
  X(cuModuleLoadData)                   \
  X(cuModuleUnload)                     \
  X(cuModuleGetFunction)                \
  X(cuModuleGetGlobal)                  \
  X(cuMemcpyDtoH)                       \
  X(cuMemAlloc)                         \
  X(cuMemFree)                          \
  X(cuMemGetInfo)                       \
  X(cuMemHostAlloc)                     \
  X(cuMemFreeHost)                      \
  X(cuStreamCreate)                     \
  X(cuStreamSynchronize)                \
  X(cuStreamQuery)                      \
  X(cuStreamWaitEvent)                  \
  X(cuEventCreate)                      \
  X(cuEventRecord)                      \
  X(cuEventQuery)                       \
  X(cuEventSynchronize)                 \
  X(cuEventElapsedTime)                 \
  X(cuEventDestroy)                     \
  X(cuLaunchKernel)                     \
  X(cuFuncSetAttribute)                 \
  X(cuMemcpyHtoDAsync)                  \
  X(cuMemcpyDtoHAsync)                  \
  X(cuMemcpyDtoDAsync)                  \
  X(cuMemcpyPeerAsync)                  \
  X(cuMemsetD8Async)                    \
  X(cuMemHostGetDevicePointer)

// The entry points. Members are named as the API names them; <cuda.h> maps some names to their
// current versions (cuDeviceTotalMem is cuDeviceTotalMem_v2), and so do the members.
struct Driver {
  std::string path;  // what was loaded ("libcuda.so.1")
  int version = 0;   // cuDriverGetVersion: 13000 for CUDA 13.0
  void* handle = nullptr;
#define OXMERA_CUDA_MEMBER(name) decltype(&::name) name = nullptr;
  OXMERA_CUDA_DRIVER_FUNCTIONS(OXMERA_CUDA_MEMBER)
#undef OXMERA_CUDA_MEMBER
};

// The outcome of loading a driver: the driver when cuInit succeeded (devices may still be 0),
// and why CUDA cannot be used otherwise ("" when it can). A driver that initialized but is too
// old for the kernels is kept (its devices can be listed) with the reason.
struct DriverState {
  std::unique_ptr<Driver> driver;
  std::string reason;
  std::string status;  // the driver alone, for doctor: "CUDA 13.0 (libcuda.so.1)", or what failed
  int device_count = 0;
};

// Loads `path` afresh (no caching; the tests load the toolkit's stub this way).
DriverState load_driver(const std::string& path);
// The process's driver, loaded once: OXMERA_CUDA_DRIVER when set, else libcuda.so.1.
const DriverState& driver_state();
// The process's driver, or an ox::Error (Device) with the reason CUDA cannot be used.
const Driver& driver();
// The process's driver after checking that `device` exists: ox::Error (Device) with the reason
// CUDA cannot be used, or naming the device count.
const Driver& driver_for(int device);

// "CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)": the driver's own words when it
// gives them, the enumerator's name from <cuda.h> otherwise (a stub gives none).
std::string describe(const Driver* driver, CUresult result);
// Throws ox::Error (Backend; OutOfMemory for CUDA_ERROR_OUT_OF_MEMORY) naming the call and
// the result, unless result is CUDA_SUCCESS.
void check(CUresult result, const char* call);

}  // namespace ox::cuda::detail
