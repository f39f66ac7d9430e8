// ox::cuda (include/oxmera/cuda.h) in a build without CUDA: nothing is available, and the
// reason says why (OXMERA_CUDA_REASON, set by cmake/cuda.cmake).

#include "backend/cuda/report.h"
#include "oxmera/core/error.h"
#include "oxmera/cuda.h"

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

}  // namespace ox::cuda

namespace ox::cuda::detail {

BackendInfo runtime_report() {
  BackendInfo info;
  info.name = "cuda";
  info.reason = OXMERA_CUDA_REASON;
  info.features.emplace_back("build", "without CUDA: " OXMERA_CUDA_REASON);
  return info;
}

}  // namespace ox::cuda::detail
