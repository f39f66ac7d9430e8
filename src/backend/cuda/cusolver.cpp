// cuSOLVER by dlopen/dlsym (cusolver.h): entry points, per-device handles, batch planning.

#include "backend/cuda/cusolver.h"

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <climits>

#include "backend/cuda/libraries.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

Cusolver resolve_cusolver(const Library& lib) {
  Cusolver api;
  if (lib.handle == nullptr) {
    api.reason = lib.reason.empty() ? "not loaded" : lib.reason;
    return api;
  }
  api.soname = lib.soname;
#define OXMERA_CUSOLVER_RESOLVE(name)                                          \
  if (api.reason.empty()) {                                                    \
    api.name = reinterpret_cast<decltype(api.name)>(dlsym(lib.handle, #name)); \
    if (api.name == nullptr) api.reason = lib.soname + " lacks " + #name;      \
  }
  OXMERA_CUSOLVER_FUNCTIONS(OXMERA_CUSOLVER_RESOLVE)
#undef OXMERA_CUSOLVER_RESOLVE
  return api;
}

const Cusolver& cusolver_library() {
  static const Cusolver api = [] {
    for (const Library& lib : optional_libraries())
      if (lib.name == "cusolver") return resolve_cusolver(lib);
    Cusolver none;
    none.reason = "not among the optional libraries";
    return none;
  }();
  return api;
}

const Cusolver& require_cusolver(const Cusolver& api, const char* op) {
  OX_CHECK(
      api.reason.empty(), Device, op,
      "the CUDA backend needs cuSOLVER (libcusolver) for this op, and it is missing: ", api.reason);
  return api;
}

namespace {

constexpr int kDevices = 64;

struct DeviceSolver {
  std::mutex mutex;
  cusolverDnHandle_t handle = nullptr;  // made under the mutex, never destroyed
};

DeviceSolver& device_solver(int device) {
  static auto* solvers = new std::array<DeviceSolver, kDevices>();  // outlives every thread
  OX_ASSERT(device >= 0 && device < kDevices, "cuda device index ", device);
  return (*solvers)[size_t(device)];
}

}  // namespace

SolverSession::SolverSession(const DeviceContext& at, const char* op)
    : api(require_cusolver(cusolver_library(), op)), op_(op) {
  DeviceSolver& solver = device_solver(at.device);
  lock_ = std::unique_lock<std::mutex>(solver.mutex);
  if (solver.handle == nullptr) {
    // enter() made the device's primary context current: the handle belongs to it.
    check(api.cusolverDnCreate(&solver.handle), "cusolverDnCreate");
  }
  handle = solver.handle;
  // cudaStream_t and CUstream are the same type (struct CUstream_st*).
  check(api.cusolverDnSetStream(handle, at.stream), "cusolverDnSetStream");
}

void SolverSession::check(cusolverStatus_t status, const char* call) const {
  if (status == CUSOLVER_STATUS_SUCCESS) return;
  if (status == CUSOLVER_STATUS_ALLOC_FAILED)
    OX_FAIL(OutOfMemory, op_, call, " could not allocate device memory (cusolverStatus ",
            int(status), ")");
  OX_FAIL(Backend, op_, call, " failed: cusolverStatus ", int(status));
}

MatrixBatch::MatrixBatch(const StridedArray& a, size_t matrix_dims) {
  const size_t nd = a.shape.size();
  OX_ASSERT(nd >= matrix_dims && matrix_dims >= 1 && matrix_dims <= 2, "linalg launcher: ", nd,
            " dims, ", matrix_dims, " matrix dims");
  batch_shape.assign(a.shape.begin(), a.shape.end() - static_cast<int64_t>(matrix_dims));
  batch_strides.assign(a.strides.begin(), a.strides.end() - static_cast<int64_t>(matrix_dims));
  if (matrix_dims == 2) {
    rows = a.shape[nd - 2];
    cols = a.shape[nd - 1];
    OX_ASSERT(a.strides[nd - 2] == 1 || rows <= 1, "linalg launcher: matrix not column-major");
    ld = std::max<int64_t>({1, rows, a.strides[nd - 1]});
  } else {
    rows = a.shape[nd - 1];
    OX_ASSERT(a.strides[nd - 1] == 1 || rows <= 1, "linalg launcher: vector not contiguous");
    ld = std::max<int64_t>(1, rows);
  }
}

int64_t MatrixBatch::count() const {
  for (int64_t s : batch_shape)
    if (s == 0) return 0;
  int64_t n = 1;
  for (int64_t s : batch_shape) n *= s;
  return n;
}

int64_t MatrixBatch::offset(int64_t t) const {
  int64_t offset = 0;
  for (size_t d = batch_shape.size(); d-- > 0;) {
    offset += (t % batch_shape[d]) * batch_strides[d];
    t /= batch_shape[d];
  }
  return offset;
}

int solver_int(int64_t n, const char* op) {
  OX_CHECK(n >= 0 && n <= INT_MAX, Device, op, "extent ", n,
           " is beyond cuSOLVER's 32-bit integers");
  return static_cast<int>(n);
}

}  // namespace ox::cuda::detail
