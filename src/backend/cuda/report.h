#pragma once
// What the CUDA runtime reports for `oxmera doctor` (backends > cuda), whether or not the CUDA
// Backend could be made, and the Backend's maker. Defined in every build (off/cuda_off.cpp
// without CUDA).

#include <memory>

#include "oxmera/runtime.h"

namespace ox {
class Backend;
}

namespace ox::cuda::detail {

BackendInfo runtime_report();

// The CUDA Backend (cuda_backend.h) where the runtime is usable; null otherwise (and always in a
// build without CUDA).
std::unique_ptr<Backend> make_backend();

}  // namespace ox::cuda::detail
