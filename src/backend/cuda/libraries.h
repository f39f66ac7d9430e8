#pragma once
// Optional CUDA libraries (cuBLAS, cuBLASLt, NVRTC; later cuSOLVER, NCCL), loaded at run time by
// soname like the driver, each with the reason it is missing.

#include <initializer_list>
#include <string>
#include <vector>

namespace ox::cuda::detail {

struct Library {
  std::string name;        // "cublas"
  void* handle = nullptr;  // never closed
  std::string soname;      // the name that loaded ("libcublas.so.13")
  std::string reason;      // why none loaded: each name with its dlopen error
};

// Loads the first of `sonames` that dlopen accepts.
Library dlopen_first(std::string name, std::initializer_list<const char*> sonames);

// cublas, cublasLt, nvrtc, cusolver, probed once per process (on first call: doctor asks, and
// the linear algebra launchers through cusolver.h).
const std::vector<Library>& optional_libraries();

}  // namespace ox::cuda::detail
