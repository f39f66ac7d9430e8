#pragma once
// Process-wide settings and what the backends report about themselves.

#include <string>
#include <utility>
#include <vector>

#include "oxmera/core/device.h"

namespace ox {

// Threads for intra-op parallelism on the CPU (OpenMP and BLAS). Results do not depend on it.
// A count above the hardware threads this process may run on (its CPU affinity) is capped
// there, with one line on stderr; get_num_threads reports the count in use. So is a larger
// OMP_NUM_THREADS, on first use.
void set_num_threads(int n);
int get_num_threads();

struct BackendInfo {
  std::string name;                                           // "cpu", "cuda"
  bool available = false;                                     // usable in this process
  std::string reason;                                         // why not, when it is not
  std::vector<std::string> devices;                           // one line each
  std::vector<std::pair<std::string, std::string>> features;  // key, value
};
// Every backend built into this library, available or not, with what it reports.
std::vector<BackendInfo> backend_infos();

// The SIMD instruction sets the CPU kernels are compiled for and this CPU runs, best first, as
// Highway names them ("AVX3" is AVX-512, "AVX2", "SSE4", and "SCALAR" or "EMU128" for portable
// C++), and the one in use: the best, unless set_simd_target (or OXMERA_SIMD_TARGET) chose.
std::vector<std::string> simd_targets();
std::string simd_target();
// Runs the CPU kernels at `name`, one of simd_targets() ("" for the best): to compare targets
// or to check the portable path. Not while kernels run on other threads.
void set_simd_target(const std::string& name);

// The precision of f32 matrix products, as PyTorch's torch.set_float32_matmul_precision:
// "highest" (the default) computes them in f32; "high" and "medium" let CUDA matmul run them on
// TF32 tensor cores (inputs rounded to 10 mantissa bits, f32 accumulation). It affects CUDA
// matmul only: the CPU always computes in f32. Any other value is an ox::Error (Value) naming
// the accepted ones. Process-wide; safe to call from any thread.
void set_float32_matmul_precision(const std::string& precision);
std::string get_float32_matmul_precision();

// Waits until every op called so far on `device` has finished, and raises the first error a
// kernel found there since the last synchronizing call (an index out of range: ErrorKind
// Index, naming the op and the value). Ops on a GPU run asynchronously and report such errors
// here or at the next copy to the host (item(), to_vector(), cpu()); CPU ops finish, and raise,
// before they return.
void synchronize(Device device);
// Every device of every backend.
void synchronize();

// Returns memory cached by the allocators to the system.
void empty_cache();

}  // namespace ox
