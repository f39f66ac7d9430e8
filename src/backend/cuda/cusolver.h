#pragma once
// cuSOLVER's dense API, loaded at run time by soname like the other optional libraries
// (libraries.h; nothing links it), a handle per device on the thread's current stream, and the
// batch planning the linear algebra launchers (linalg.cpp) share. <cusolverDn.h> gives the
// types and signatures only.

#include <cusolverDn.h>

#include <cstdint>
#include <mutex>
#include <span>
#include <string>

#include "backend/backend.h"
#include "backend/cuda/launch.h"

namespace ox::cuda::detail {

struct Library;

#define OXMERA_CUSOLVER_FUNCTIONS(X) \
  X(cusolverDnCreate)                \
  X(cusolverDnSetStream)             \
  X(cusolverDnSpotrf_bufferSize)     \
  X(cusolverDnDpotrf_bufferSize)     \
  X(cusolverDnSpotrf)                \
  X(cusolverDnDpotrf)                \
  X(cusolverDnSgetrf_bufferSize)     \
  X(cusolverDnDgetrf_bufferSize)     \
  X(cusolverDnSgetrf)                \
  X(cusolverDnDgetrf)                \
  X(cusolverDnSgetrs)                \
  X(cusolverDnDgetrs)                \
  X(cusolverDnSgeqrf_bufferSize)     \
  X(cusolverDnDgeqrf_bufferSize)     \
  X(cusolverDnSgeqrf)                \
  X(cusolverDnDgeqrf)                \
  X(cusolverDnSorgqr_bufferSize)     \
  X(cusolverDnDorgqr_bufferSize)     \
  X(cusolverDnSorgqr)                \
  X(cusolverDnDorgqr)                \
  X(cusolverDnSsyevd_bufferSize)     \
  X(cusolverDnDsyevd_bufferSize)     \
  X(cusolverDnSsyevd)                \
  X(cusolverDnDsyevd)                \
  X(cusolverDnSgesvd_bufferSize)     \
  X(cusolverDnDgesvd_bufferSize)     \
  X(cusolverDnSgesvd)                \
  X(cusolverDnDgesvd)

// The entry points, all resolved, or why not (reason non-empty).
struct Cusolver {
  std::string soname;  // what was loaded ("libcusolver.so.12")
  std::string reason;  // "" when every entry point resolved
#define OXMERA_CUSOLVER_MEMBER(name) decltype(&::name) name = nullptr;
  OXMERA_CUSOLVER_FUNCTIONS(OXMERA_CUSOLVER_MEMBER)
#undef OXMERA_CUSOLVER_MEMBER
};

// The entry points of a loaded library (dlsym), or the reason: the library's own when it did
// not load, else the first missing symbol.
Cusolver resolve_cusolver(const Library& lib);
// The process's cuSOLVER (optional_libraries()'s "cusolver", resolved once).
const Cusolver& cusolver_library();
// `api`, or an ox::Error (Device) naming op and the missing library with the reason.
const Cusolver& require_cusolver(const Cusolver& api, const char* op);

// A device's cuSOLVER handle (made on first use, never destroyed, as the primary contexts), set
// to the current stream of `at`, used under the device's lock (a handle holds one stream).
class SolverSession {
 public:
  SolverSession(const DeviceContext& at, const char* op);
  const Cusolver& api;
  cusolverDnHandle_t handle = nullptr;
  // Throws ox::Error (Backend) naming op and the call unless status is success.
  void check(cusolverStatus_t status, const char* call) const;

 private:
  const char* op_;
  std::unique_lock<std::mutex> lock_;
};

// ---- Planning (plain host code, tests/backend/cuda_linalg_test.cpp) -------------------------

// A batch of column-major matrices (matrix_dims 2: [..., rows, cols]) or vectors (1:
// [..., rows]) as the launchers walk it: matrix t (row-major over the batch dims) at
// offset(t) elements, element (i, j) at i + j * ld with ld = max(1, rows, strides[-1]).
struct MatrixBatch {
  Shape batch_shape;
  Strides batch_strides;
  int64_t rows = 0, cols = 1, ld = 1;

  explicit MatrixBatch(const StridedArray& a, size_t matrix_dims = 2);
  int64_t count() const;  // 0 when a batch dim is 0
  int64_t offset(int64_t t) const;
};

// The kernels of family "linalg" the launchers use (kernels/linalg.cu), for the tests.
std::span<const char* const> linalg_kernel_names();

// n as cuSOLVER's 32-bit int, or an ox::Error (Device) naming op.
int solver_int(int64_t n, const char* op);

}  // namespace ox::cuda::detail
