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

}  // namespace ox::cuda
