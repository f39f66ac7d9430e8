#pragma once
// What the CUDA runtime reports for `oxmera doctor` while no CUDA backend is registered (the
// registry shows it under backends > cuda). Defined in every build (off/cuda_off.cpp without
// CUDA).

#include "oxmera/runtime.h"

namespace ox::cuda::detail {

BackendInfo runtime_report();

}  // namespace ox::cuda::detail
