// The module loader.

#include "backend/cuda/module.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/driver.h"
#include "backend/cuda/nvrtc.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

struct Module {
  CUmodule module = nullptr;
  std::map<std::string, CUfunction, std::less<>> functions;
};

struct Modules {
  std::mutex mutex;
  std::vector<CUcontext> contexts;        // per device, retained on first use
  std::map<std::string, Module> modules;  // by "device:family"
};

Modules& modules() {
  static Modules* m = new Modules();  // never destroyed: the driver may be gone at exit
  return *m;
}

void check_device(int device) {
  const int count = driver_state().device_count;
  OX_CHECK(device >= 0 && device < count, Device, "cuda", "device cuda:", device,
           " does not exist (", count, " CUDA device(s) present)");
}

CUcontext retained_context(Modules& m, int device) {
  const Driver& d = driver();
  check_device(device);
  if (m.contexts.size() <= static_cast<size_t>(device))
    m.contexts.resize(static_cast<size_t>(device) + 1, nullptr);
  CUcontext& ctx = m.contexts[static_cast<size_t>(device)];
  if (ctx == nullptr) {
    CUdevice dev{};
    check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    check(d.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  }
  return ctx;
}

}  // namespace

CUcontext primary_context(int device) {
  Modules& m = modules();
  std::lock_guard lock(m.mutex);
  return retained_context(m, device);
}

namespace {
// The device whose primary context this thread made current last: every switch goes through
// set_device (or the module load below), so a launch on the same device costs no driver call.
thread_local int t_current_device = -1;
}  // namespace

void set_device(int device) {
  if (t_current_device == device) return;
  check(driver().cuCtxSetCurrent(primary_context(device)), "cuCtxSetCurrent");
  t_current_device = device;
}

ModuleImage module_image(const KernelImage& image, int major, int minor) {
  const KernelForm form = kernel_form_for(built_targets(), kernel_build().ptx_target, major, minor);
  if (form == KernelForm::MachineCode) return {image.machine_code, form};
  if (form == KernelForm::PtxJit) return {ptx_fatbin(image).data(), form};
  return {};
}

CUfunction kernel(int device, std::string_view family, const char* name) {
  Modules& m = modules();
  std::lock_guard lock(m.mutex);
  const CUcontext ctx = retained_context(m, device);
  const Driver& d = driver();
  const std::string key = std::to_string(device) + ":" + std::string(family);
  auto it = m.modules.find(key);
  if (it == m.modules.end()) {
    const KernelImage& image = kernel_image(family);
    CUdevice dev{};
    check(d.cuDeviceGet(&dev, device), "cuDeviceGet");
    int major = 0, minor = 0;
    check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
          "cuDeviceGetAttribute");
    check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
          "cuDeviceGetAttribute");
    // The embedded code, unless OXMERA_CUDA_NVRTC=1; NVRTC when that is forced or when the
    // driver cannot load the embedded code it was given (its PTX is newer than the driver
    // knows, or no code fits the device).
    const bool forced = nvrtc_forced();
    const ModuleImage source = forced ? ModuleImage{} : module_image(image, major, minor);
    OX_CHECK(forced || source.data != nullptr, Device, "cuda", "device cuda:", device,
             " (compute capability ", major, ".", minor,
             ") cannot run these kernels: they are built for [", kernel_build().targets,
             "] and PTX for ", kernel_build().ptx_target,
             " (compute capability 7.5 or newer is needed)");
    check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    t_current_device = device;
    Module loaded;
    CUresult r = CUDA_ERROR_NO_BINARY_FOR_GPU;
    if (!forced) r = d.cuModuleLoadData(&loaded.module, source.data);
    const bool fallback = r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION ||
                          r == CUDA_ERROR_NO_BINARY_FOR_GPU || r == CUDA_ERROR_INVALID_PTX ||
                          r == CUDA_ERROR_INVALID_IMAGE || r == CUDA_ERROR_JIT_COMPILER_NOT_FOUND ||
                          r == CUDA_ERROR_INVALID_SOURCE;
    std::string how = forced ? "" : std::string(kernel_form_name(source.form));
    if (forced || fallback) {
      const std::string embedded_failure =
          forced ? "" : how + " refused: " + describe(&d, r) + "; then ";
      int driver_version = 0;
      d.cuDriverGetVersion(&driver_version);
      NvrtcCode code;
      try {
        code = nvrtc_code(image, major * 10 + minor, driver_version);
      } catch (const Error& e) {
        OX_FAIL(Backend, "cuda", "the ", family, " kernels cannot be loaded on cuda:", device, ": ",
                embedded_failure, e.what());
      }
      how = std::string(code.cubin ? "NVRTC sm_" : "NVRTC PTX compute_") +
            std::to_string(code.target);
      r = d.cuModuleLoadData(&loaded.module, code.bytes.data());
    }
    OX_CHECK(r == CUDA_SUCCESS, Backend, "cuda", "cuModuleLoadData failed for the ", family,
             " kernels (", how, ") on cuda:", device, ": ", describe(&d, r));
    // The stamp the module carries must be the one this library was built with.
    CUdeviceptr stamp_ptr = 0;
    size_t stamp_size = 0;
    std::string stamp;
    if (d.cuModuleGetGlobal(&stamp_ptr, &stamp_size, loaded.module, "oxmera_kernel_stamp") ==
        CUDA_SUCCESS) {
      stamp.resize(stamp_size);
      check(d.cuMemcpyDtoH(stamp.data(), stamp_ptr, stamp_size), "cuMemcpyDtoH");
      stamp.resize(stamp.find('\0') == std::string::npos ? stamp.size() : stamp.find('\0'));
    }
    if (stamp != image.stamp) {
      d.cuModuleUnload(loaded.module);
      OX_FAIL(Backend, "cuda", "the ", family, " kernels loaded on cuda:", device,
              " carry the stamp '", stamp, "', not this library's '", image.stamp,
              "': a stale kernel image; rebuild oxmera");
    }
    it = m.modules.emplace(key, std::move(loaded)).first;
  }
  Module& module = it->second;
  auto f = module.functions.find(std::string_view(name));
  if (f == module.functions.end()) {
    CUfunction fn = nullptr;
    const CUresult r = d.cuModuleGetFunction(&fn, module.module, name);
    OX_CHECK(r == CUDA_SUCCESS, Internal, "cuda", "no kernel ", name, " in the ", family,
             " module: ", describe(&d, r));
    f = module.functions.emplace(name, fn).first;
  }
  return f->second;
}

}  // namespace ox::cuda::detail
