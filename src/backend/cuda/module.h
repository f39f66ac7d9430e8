#pragma once
// Kernel modules: a family's image loaded into a device's primary context on first use, its
// stamp checked against the one the host was built with, functions looked up by name and cached.

#include <cuda.h>

#include <string_view>

#include "backend/cuda/image.h"

namespace ox::cuda::detail {

// The primary context of `device`, retained on first use and kept for the process's lifetime.
CUcontext primary_context(int device);
// Makes the device's primary context current on this thread (no driver call when it is).
void set_device(int device);

// The bytes cuModuleLoadData gets for a device of compute capability major.minor, and in which
// form. Today: the machine-code fatbin when it holds code the device runs, else the PTX fatbin.
// (NVRTC, later, adds a third source: the embedded kernel source compiled for the device.)
struct ModuleImage {
  const void* data = nullptr;
  KernelForm form = KernelForm::None;
};
ModuleImage module_image(const KernelImage& image, int major, int minor);

// The function `name` of `family` on `device` (loading the module on first use). Throws
// ox::Error: Device when the device cannot run the kernels, Backend when the driver refuses
// the module or the stamp differs (a stale build), Internal for an unknown family or name.
CUfunction kernel(int device, std::string_view family, const char* name);

}  // namespace ox::cuda::detail
