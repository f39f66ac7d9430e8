// cuBLAS at run time (cublas.h): entry points by dlsym from the soname libraries.cpp loaded,
// a handle per device, and the planning of strided batched GEMM calls.

#include "backend/cuda/cublas.h"

#include <cublas_api.h>
#include <dlfcn.h>

#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backend/cuda/launch.h"
#include "backend/cuda/libraries.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

// ---- Planning -------------------------------------------------------------------------------

namespace {

bool fits_int(int64_t v) { return v >= 1 && v <= int64_t(INT_MAX); }

}  // namespace

int64_t row_major_ld(const GemmMatrix& m) {
  if (m.cols > 1 && m.cs != 1) return -1;
  const int64_t ld = m.rows > 1 ? m.rs : std::max<int64_t>(m.cols, 1);
  return ld >= std::max<int64_t>(m.cols, 1) && fits_int(ld) ? ld : -1;
}

int64_t col_major_ld(const GemmMatrix& m) {
  if (m.rows > 1 && m.rs != 1) return -1;
  const int64_t ld = m.cols > 1 ? m.cs : std::max<int64_t>(m.rows, 1);
  return ld >= std::max<int64_t>(m.rows, 1) && fits_int(ld) ? ld : -1;
}

int64_t batch_stride(const Shape& shape, const Strides& strides) {
  const int nd = int(shape.size());
  int64_t stride = 0, expected = 0;
  bool seen = false;
  for (int d = nd - 3; d >= 0; --d) {  // the batch dims, innermost first
    const int64_t size = shape[size_t(d)], s = strides[size_t(d)];
    if (size == 1) continue;
    if (!seen) {
      stride = s;
      seen = true;
    } else if (s != expected) {
      return -1;
    }
    expected = s * size;
  }
  return stride >= 0 ? stride : -1;
}

CublasPlan plan_cublas(const Shape& dst_shape, int64_t k, const Strides& dst, const Strides& a,
                       const Strides& b) {
  CublasPlan p;
  const size_t nd = dst_shape.size();
  OX_ASSERT(nd >= 2, "matmul plan of a ", nd, "-d dst");
  const int64_t M = dst_shape[nd - 2], N = dst_shape[nd - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < nd; ++d) batch *= dst_shape[d];
  if (!fits_int(M) || !fits_int(N) || !fits_int(k) || !fits_int(batch)) {
    p.usable = false;
    return p;
  }
  const GemmMatrix A{M, k, a[nd - 2], a[nd - 1]}, B{k, N, b[nd - 2], b[nd - 1]},
      C{M, N, dst[nd - 2], dst[nd - 1]};
  const int64_t sa = batch_stride(dst_shape, a), sb = batch_stride(dst_shape, b),
                sc = batch_stride(dst_shape, dst);
  const int64_t a_row = row_major_ld(A), a_col = col_major_ld(A);
  const int64_t b_row = row_major_ld(B), b_col = col_major_ld(B);
  const int64_t c_row = row_major_ld(C), c_col = col_major_ld(C);
  p.copy_a = (a_row < 0 && a_col < 0) || sa < 0;
  p.copy_b = (b_row < 0 && b_col < 0) || sb < 0;
  p.copy_c = (c_row < 0 && c_col < 0) || sc < 0 || (batch > 1 && sc == 0);
  if (p.copy_a || p.copy_b || p.copy_c) return p;
  p.k = k;
  p.batch = batch;
  p.stride_c = sc;
  p.swap = c_row >= 0;
  if (p.swap) {  // C^T (N x M) = B^T A^T
    p.m = N;
    p.n = M;
    p.ldc = c_row;
    p.trans_a = b_row < 0;  // b stored by rows is B^T column-major
    p.lda = b_row >= 0 ? b_row : b_col;
    p.trans_b = a_row < 0;
    p.ldb = a_row >= 0 ? a_row : a_col;
    p.stride_a = sb;
    p.stride_b = sa;
  } else {  // C (M x N) = A B, all column-major
    p.m = M;
    p.n = N;
    p.ldc = c_col;
    p.trans_a = a_col < 0;
    p.lda = a_col >= 0 ? a_col : a_row;
    p.trans_b = b_col < 0;
    p.ldb = b_col >= 0 ? b_col : b_row;
    p.stride_a = sa;
    p.stride_b = sb;
  }
  return p;
}

// ---- The library ----------------------------------------------------------------------------

namespace {

struct CublasApi {
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t) = nullptr;
  const char* (*status_string)(cublasStatus_t) = nullptr;
  cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                         const void*, const void*, cudaDataType, int, long long int, const void*,
                         cudaDataType, int, long long int, const void*, void*, cudaDataType, int,
                         long long int, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  bool ok = false;
  std::string soname;
  std::string reason;
};

const CublasApi& api() {
  static const CublasApi loaded = [] {
    CublasApi c;
    if (const char* off = std::getenv("OXMERA_CUDA_NO_CUBLAS"); off && std::strcmp(off, "1") == 0) {
      c.reason = "disabled by OXMERA_CUDA_NO_CUBLAS=1";
      return c;
    }
    const Library* lib = nullptr;
    for (const Library& l : optional_libraries())
      if (l.name == "cublas") lib = &l;
    if (lib == nullptr || lib->handle == nullptr) {
      c.reason = lib ? lib->reason : "cublas is not among the optional libraries";
      return c;
    }
    const auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib->handle, name));
      if (fn == nullptr && c.reason.empty()) c.reason = lib->soname + " has no " + name;
    };
    sym(c.create, "cublasCreate_v2");
    sym(c.destroy, "cublasDestroy_v2");
    sym(c.set_stream, "cublasSetStream_v2");
    sym(c.set_math_mode, "cublasSetMathMode");
    sym(c.status_string, "cublasGetStatusString");
    sym(c.gemm, "cublasGemmStridedBatchedEx");
    c.ok = c.reason.empty();
    if (c.ok) c.soname = lib->soname;
    return c;
  }();
  return loaded;
}

std::string status_text(cublasStatus_t s) {
  const char* text = api().status_string ? api().status_string(s) : nullptr;
  return std::string(text ? text : "cuBLAS error") + " (" + std::to_string(int(s)) + ")";
}

void check_status(cublasStatus_t s, const char* what) {
  OX_CHECK(s == CUBLAS_STATUS_SUCCESS, Device, "matmul", what, " failed: ", status_text(s));
}

// A handle per device, never destroyed (as the primary contexts it lives in); calls on one
// handle are serialised, since its stream is set before each.
struct DeviceHandle {
  std::mutex mutex;
  cublasHandle_t handle = nullptr;
};
DeviceHandle& device_handle(int device) {
  static std::array<DeviceHandle, 64> handles;
  OX_ASSERT(device >= 0 && device < int(handles.size()), "cuda device index ", device);
  return handles[size_t(device)];
}

}  // namespace

bool cublas_available() { return api().ok; }
const std::string& cublas_unavailable_reason() { return api().reason; }
const std::string& cublas_soname() { return api().soname; }

void cublas_gemm(const DeviceContext& at, const CublasPlan& plan, DType dtype, bool tf32,
                 const void* alpha, const void* beta, const void* a_prime, const void* b_prime,
                 void* c_prime) {
  const CublasApi& c = api();
  OX_ASSERT(c.ok && plan.usable && !plan.copy_a && !plan.copy_b && !plan.copy_c,
            "cublas_gemm given a plan it cannot run");
  cudaDataType type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (dtype) {
    case DType::F32:
      compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
      break;
    case DType::F64:
      type = CUDA_R_64F;
      compute = CUBLAS_COMPUTE_64F;
      break;
    case DType::F16:
      type = CUDA_R_16F;
      break;
    case DType::BF16:
      type = CUDA_R_16BF;
      break;
    default:
      OX_ASSERT(false, "cublas_gemm given ", dtype_name(dtype));
  }
  DeviceHandle& h = device_handle(at.device);
  std::lock_guard<std::mutex> lock(h.mutex);
  if (h.handle == nullptr) {  // the device's context is current (enter)
    cublasHandle_t handle = nullptr;
    check_status(c.create(&handle), "cublasCreate");
    // f32 accumulation for f16/bf16 in every kernel cuBLAS picks (no f16 split-K reductions).
    const auto mode = static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                                CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    const cublasStatus_t s = c.set_math_mode(handle, mode);
    if (s != CUBLAS_STATUS_SUCCESS) {
      c.destroy(handle);
      check_status(s, "cublasSetMathMode");
    }
    h.handle = handle;
  }
  check_status(c.set_stream(h.handle, reinterpret_cast<cudaStream_t>(at.stream)),
               "cublasSetStream");
  check_status(c.gemm(h.handle, plan.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                      plan.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, int(plan.m), int(plan.n),
                      int(plan.k), alpha, a_prime, type, int(plan.lda), plan.stride_a, b_prime,
                      type, int(plan.ldb), plan.stride_b, beta, c_prime, type, int(plan.ldc),
                      plan.stride_c, int(plan.batch), compute, CUBLAS_GEMM_DEFAULT),
               "cublasGemmStridedBatchedEx");
}

}  // namespace ox::cuda::detail
