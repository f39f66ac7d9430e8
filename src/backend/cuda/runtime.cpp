// ox::cuda (include/oxmera/cuda.h) in a build with CUDA, and the runtime's report for doctor.

#include <cstdio>
#include <string>
#include <vector>

#include "backend/cuda/driver.h"
#include "backend/cuda/image.h"
#include "backend/cuda/libraries.h"
#include "backend/cuda/nvrtc.h"
#include "backend/cuda/report.h"
#include "oxmera/core/error.h"
#include "oxmera/cuda.h"

namespace ox::cuda {

bool is_available() { return detail::driver_state().reason.empty(); }

std::string unavailable_reason() { return detail::driver_state().reason; }

int device_count() { return detail::driver_state().device_count; }

DeviceProperties get_device_properties(int device) {
  const detail::DriverState& s = detail::driver_state();
  OX_CHECK(s.driver != nullptr, Device, "cuda", "no CUDA device: ", s.reason);
  OX_CHECK(device >= 0 && device < s.device_count, Device, "cuda", "device cuda:", device,
           " does not exist (", s.device_count, " CUDA device(s) present)");
  const detail::Driver& d = *s.driver;
  CUdevice dev{};
  detail::check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
  DeviceProperties p;
  char name[256] = {};
  detail::check(d.cuDeviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  p.name = name;
  auto attribute = [&](CUdevice_attribute a) {
    int v = 0;
    detail::check(d.cuDeviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute");
    return v;
  };
  p.major = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  p.minor = attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  p.multiprocessor_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  size_t bytes = 0;
  detail::check(d.cuDeviceTotalMem(&bytes, dev), "cuDeviceTotalMem");
  p.total_memory = bytes;
  return p;
}

int driver_version() {
  const detail::DriverState& s = detail::driver_state();
  return s.driver != nullptr ? s.driver->version : 0;
}

bool is_built() { return true; }

std::string kernel_fingerprint() { return detail::combined_fingerprint(); }

std::vector<std::string> kernel_targets() {
  std::vector<std::string> targets;
  for (const int t : detail::built_targets()) targets.push_back("sm_" + std::to_string(t));
  targets.push_back("compute_" + std::to_string(detail::kernel_build().ptx_target));
  return targets;
}

KernelForm kernel_form(int device) {
  const DeviceProperties p = get_device_properties(device);
  return detail::kernel_form_for(detail::built_targets(), detail::kernel_build().ptx_target,
                                 p.major, p.minor);
}

std::string_view kernel_form_name(KernelForm form) {
  switch (form) {
    case KernelForm::MachineCode:
      return "machine code";
    case KernelForm::PtxJit:
      return "PTX JIT";
    case KernelForm::None:
      break;
  }
  return "none";
}

}  // namespace ox::cuda

namespace ox::cuda::detail {

namespace {

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// Which form the embedded kernels take and what a GPU of another generation does with them.
std::string kernel_code_summary() {
  const KernelBuild& b = kernel_build();
  const std::string ptx =
      std::to_string(b.ptx_target / 10) + "." + std::to_string(b.ptx_target % 10);
  const std::string jit =
      "compiles the PTX at first use of each kernel family (seconds each, "
      "kept in the driver's cache, ~/.nv/ComputeCache)";
  if (built_targets().empty())
    return "PTX only, for compute capability " + ptx +
           " (built where no GPU was found): a GPU of " + ptx + " or newer " + jit +
           "; rebuild with OXMERA_CUDA_ARCHS=all, or on the GPU's machine, for machine code";
  std::string targets;
  for (const int t : built_targets())
    targets += (targets.empty() ? "" : ", ") + std::string("sm_") + std::to_string(t);
  return "machine code for " + targets + " (" + b.selection + ") and PTX for " + ptx +
         ": a GPU of those generations runs the machine code; any other GPU of " + ptx +
         " or newer " + jit;
}

}  // namespace

BackendInfo runtime_report() {
  BackendInfo info;
  info.name = "cuda";
  const DriverState& s = driver_state();
  info.available = s.reason.empty();
  info.reason = s.reason;
  info.features.emplace_back("build",
                             "with CUDA (nvcc " + std::string(kernel_build().nvcc_version) + ")");
  info.features.emplace_back("driver", s.status);
  for (int i = 0; i < s.device_count; ++i) {
    try {
      const DeviceProperties p = get_device_properties(i);
      const KernelForm form =
          kernel_form_for(built_targets(), kernel_build().ptx_target, p.major, p.minor);
      // OXMERA_CUDA_NVRTC=1 compiles the kernels with NVRTC instead (nvrtc.h); the fallback
      // to NVRTC when the driver refuses the embedded code is seen only at the first load.
      const std::string kernels =
          nvrtc_forced() ? "NVRTC (OXMERA_CUDA_NVRTC=1, cache " + kernel_cache_dir() + ")"
                         : std::string(kernel_form_name(form));
      info.devices.push_back(p.name + ", compute capability " + std::to_string(p.major) + "." +
                             std::to_string(p.minor) + ", " + gib(p.total_memory) + ", " +
                             std::to_string(p.multiprocessor_count) + " SMs, kernels: " + kernels);
    } catch (const Error& e) {
      info.devices.push_back(std::string("unreadable: ") + e.what());
    }
  }
  info.features.emplace_back("kernel fingerprint", combined_fingerprint());
  info.features.emplace_back("kernel targets", joined(kernel_targets()));
  info.features.emplace_back("kernel code", kernel_code_summary());
  std::vector<std::string> families;
  for (const KernelImage* image : kernel_images()) families.push_back(image->family);
  info.features.emplace_back("kernel families", joined(families));
  for (const Library& lib : optional_libraries())
    info.features.emplace_back(
        lib.name, lib.handle != nullptr ? lib.soname + " (found)" : "missing: " + lib.reason);
  return info;
}

}  // namespace ox::cuda::detail
