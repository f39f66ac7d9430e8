// Optional CUDA libraries by soname: the toolkit's major version first, then the previous one.

#include "backend/cuda/libraries.h"

#include <dlfcn.h>

namespace ox::cuda::detail {

Library dlopen_first(std::string name, std::initializer_list<const char*> sonames) {
  Library lib;
  lib.name = std::move(name);
  for (const char* soname : sonames) {
    dlerror();
    if (void* handle = dlopen(soname, RTLD_LAZY | RTLD_LOCAL)) {
      lib.handle = handle;
      lib.soname = soname;
      lib.reason.clear();
      return lib;
    }
    const char* error = dlerror();
    lib.reason += std::string(lib.reason.empty() ? "" : "; ") + (error ? error : soname);
  }
  return lib;
}

const std::vector<Library>& optional_libraries() {
  static const std::vector<Library> libraries{
      dlopen_first("cublas", {"libcublas.so.13", "libcublas.so.12"}),
      dlopen_first("cublasLt", {"libcublasLt.so.13", "libcublasLt.so.12"}),
      dlopen_first("nvrtc", {"libnvrtc.so.13", "libnvrtc.so.12"}),
      // cuSOLVER kept its major at 12 in CUDA 13; .11 is CUDA 11's (the same legacy dense API).
      dlopen_first("cusolver", {"libcusolver.so.12", "libcusolver.so.11"}),
  };
  return libraries;
}

}  // namespace ox::cuda::detail
