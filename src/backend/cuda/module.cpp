// The module loader.

#include "backend/cuda/module.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/cuda/driver.h"
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

void set_device(int device) {
  check(driver().cuCtxSetCurrent(primary_context(device)), "cuCtxSetCurrent");
}

ModuleImage module_image(const KernelImage& image, int major, int minor) {
  const KernelForm form = kernel_form_for(built_targets(), kernel_build().ptx_target, major, minor);
  if (form == KernelForm::MachineCode) return {image.machine_code, form};
  if (form == KernelForm::PtxJit) return {image.ptx, form};
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
    const ModuleImage source = module_image(image, major, minor);
    OX_CHECK(source.data != nullptr, Device, "cuda", "device cuda:", device,
             " (compute capability ", major, ".", minor,
             ") cannot run these kernels: they are built for ", kernel_build().targets,
             " and PTX for ", kernel_build().ptx_target,
             " (compute capability 7.5 or newer is needed)");
    check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    Module loaded;
    const CUresult r = d.cuModuleLoadData(&loaded.module, source.data);
    OX_CHECK(r == CUDA_SUCCESS, Backend, "cuda", "cuModuleLoadData failed for the ", family,
             " kernels (", kernel_form_name(source.form), ") on cuda:", device, ": ",
             describe(&d, r));
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
