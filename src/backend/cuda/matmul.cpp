// CUDA launcher: matmul. Floating dtypes run on cuBLAS (cublas.h) where it loaded: one strided
// batched GEMM, after contiguous copies of the operands whose layout it cannot read (and into a
// contiguous dst, copied back, when dst's cannot be written). Integer dtypes, K == 0, sizes
// beyond cuBLAS's int, and every dtype when cuBLAS is missing or OXMERA_CUDA_NO_CUBLAS=1 run
// the tiled kernel of kernels/matmul.cu, which reads and writes any strides.

#include <algorithm>
#include <memory>
#include <type_traits>

#include "backend/cuda/cublas.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/matmul.cuh"
#include "backend/cuda/launch.h"
#include "oxmera/core/error.h"
#include "oxmera/runtime.h"

namespace ox::cuda::detail {

namespace {

const KernelTable<1>& tiled_kernels() {
  static const KernelTable<1> table("matmul", "ox_matmul_", {"tiled"});
  return table;
}
const KernelRef kCopy[4] = {{"matmul", "ox_matmul_copy_w1"},
                            {"matmul", "ox_matmul_copy_w2"},
                            {"matmul", "ox_matmul_copy_w4"},
                            {"matmul", "ox_matmul_copy_w8"}};

// dst = src for arrays of one shape and dtype, any strides.
void strided_copy(const DeviceContext& at, const StridedArray& dst, const StridedArray& src) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  const size_t width = dtype_size(dst.dtype);
  const int row = width == 1 ? 0 : width == 2 ? 1 : width == 4 ? 2 : 3;
  const Offsets<2> o = make_offsets<2>({&dst, &src}, "matmul");
  launch(at, kCopy[row].get(at.device), grid_for(n), dst.data, static_cast<const void*>(src.data),
         n, o);
}

// A contiguous copy of `src` in scratch memory, of src's shape. With `compact`, batch dims that
// src broadcasts (stride 0) are copied once and keep stride 0. With copy_values false the
// memory is left as it is (an output that is written before it is read).
struct Packed {
  std::unique_ptr<DeviceBuffer> memory;
  StridedArray array;
};
Packed pack(const DeviceContext& at, const StridedArray& src, bool compact, bool copy_values) {
  const size_t nd = src.shape.size();
  Shape shape = src.shape;
  if (compact)
    for (size_t d = 0; d + 2 < nd; ++d)
      if (src.strides[d] == 0) shape[d] = 1;
  uint64_t nbytes = dtype_size(src.dtype);
  for (int64_t s : shape)
    OX_CHECK(!__builtin_mul_overflow(nbytes, static_cast<uint64_t>(s), &nbytes), OutOfMemory,
             "matmul", "a contiguous copy of an operand of shape ", src.shape,
             " needs more bytes than 64 bits count");
  Packed out;
  out.memory = std::make_unique<DeviceBuffer>(at, size_t(nbytes));
  const Strides dense = contiguous_strides(shape);
  if (copy_values)
    strided_copy(at, {out.memory->data(), shape, dense, src.dtype, src.device},
                 {src.data, shape, src.strides, src.dtype, src.device});
  Strides strides = dense;
  for (size_t d = 0; d + 2 < nd; ++d)
    if (shape[d] != src.shape[d]) strides[d] = 0;
  out.array = {out.memory->data(), src.shape, strides, src.dtype, src.device};
  return out;
}

bool tf32_allowed() { return get_float32_matmul_precision() != "highest"; }

// dst = beta * dst + alpha * a @ b on cuBLAS (floating dtypes, K >= 1); false when the sizes
// are beyond its int arguments.
bool matmul_cublas(const DeviceContext& at, const StridedArray& dst, const StridedArray& a,
                   const StridedArray& b, const Scalar& alpha, const Scalar& beta) {
  const size_t nd = dst.shape.size();
  const int64_t k = a.shape[nd - 1];
  StridedArray A = a, B = b, C = dst;
  CublasPlan plan = plan_cublas(C.shape, k, C.strides, A.strides, B.strides);
  if (!plan.usable) return false;
  const bool f64 = dst.dtype == DType::F64;
  const double alpha_d = alpha.to_double(), beta_d = beta.to_double();
  const float alpha_f = float(alpha_d), beta_f = float(beta_d);
  // cuBLAS does not read C when beta is 0 (in its scalar type): neither does the copy.
  const bool reads_c = f64 ? beta_d != 0 : beta_f != 0;
  Packed pa, pb, pc;
  if (plan.copy_a) A = (pa = pack(at, a, true, true)).array;
  if (plan.copy_b) B = (pb = pack(at, b, true, true)).array;
  if (plan.copy_c) C = (pc = pack(at, dst, false, reads_c)).array;
  if (plan.copy_a || plan.copy_b || plan.copy_c) {
    plan = plan_cublas(C.shape, k, C.strides, A.strides, B.strides);
    // A broadcast operand copied once may still not collapse to one batch stride (it
    // broadcasts over some batch dims only): copied in full then.
    if (plan.copy_a) A = (pa = pack(at, a, false, true)).array;
    if (plan.copy_b) B = (pb = pack(at, b, false, true)).array;
    if (plan.copy_a || plan.copy_b) plan = plan_cublas(C.shape, k, C.strides, A.strides, B.strides);
    OX_ASSERT(plan.usable && !plan.copy_a && !plan.copy_b && !plan.copy_c,
              "matmul: contiguous copies that cuBLAS cannot read");
  }
  const void* alpha_p = f64 ? static_cast<const void*>(&alpha_d) : &alpha_f;
  const void* beta_p = f64 ? static_cast<const void*>(&beta_d) : &beta_f;
  cublas_gemm(at, plan, dst.dtype, dst.dtype == DType::F32 && tf32_allowed(), alpha_p, beta_p,
              plan.swap ? B.data : A.data, plan.swap ? A.data : B.data, C.data);
  if (pc.memory) strided_copy(at, dst, C);  // dst's layout did not fit: back from scratch
  return true;
}

// dst = beta * dst + alpha * a @ b on the tiled kernel: any dtype but bool, any strides.
void matmul_tiled(const DeviceContext& at, const StridedArray& dst, const StridedArray& a,
                  const StridedArray& b, const Scalar& alpha, const Scalar& beta) {
  const size_t nd = dst.shape.size();
  kernels::TiledGemm g{};
  g.m = dst.shape[nd - 2];
  g.n = dst.shape[nd - 1];
  g.k = a.shape[nd - 1];
  g.batches = 1;
  for (size_t d = 0; d + 2 < nd; ++d) g.batches *= dst.shape[d];
  g.a_rs = a.strides[nd - 2], g.a_cs = a.strides[nd - 1];
  g.b_rs = b.strides[nd - 2], g.b_cs = b.strides[nd - 1];
  g.c_rs = dst.strides[nd - 2], g.c_cs = dst.strides[nd - 1];
  const bool empty_k = g.k == 0;  // dst = beta * dst, whatever alpha is (BLAS, the CPU)
  g.alpha = empty_k ? 0.0 : alpha.to_double();
  g.beta = beta.to_double();
  g.alpha_i = empty_k ? 0 : alpha.to_int();
  g.beta_i = beta.to_int();
  // dst is not read where the CPU does not read it: beta == 0 as the dtype computes it (for
  // K == 0, as a double: the CPU fills zeros then).
  if (is_floating(dst.dtype)) {
    g.beta_zero = empty_k                   ? g.beta == 0
                  : dst.dtype == DType::F64 ? g.beta == 0
                                            : float(g.beta) == 0.0f;
  } else {
    const uint64_t bits = uint64_t(g.beta_i);
    const size_t width = dtype_size(dst.dtype) * 8;
    g.beta_zero = (width == 64 ? bits : bits & ((uint64_t(1) << width) - 1)) == 0;
  }
  const Shape batch_shape(dst.shape.begin(), dst.shape.begin() + ptrdiff_t(nd - 2));
  const Strides sd(dst.strides.begin(), dst.strides.begin() + ptrdiff_t(nd - 2));
  const Strides sa(a.strides.begin(), a.strides.begin() + ptrdiff_t(nd - 2));
  const Strides sb(b.strides.begin(), b.strides.begin() + ptrdiff_t(nd - 2));
  const Offsets<3> batch = make_offsets<3>(batch_shape, {&sd, &sa, &sb}, "matmul");
  constexpr int64_t kTile = kernels::kMatmulTile, kMaxBlocks = 65535;
  Grid grid;
  grid.threads = unsigned(kTile);
  grid.threads_y = unsigned(kTile);
  grid.blocks = unsigned(std::min((g.n + kTile - 1) / kTile, kMaxBlocks));
  grid.blocks_y = unsigned(std::min((g.m + kTile - 1) / kTile, kMaxBlocks));
  grid.blocks_z = unsigned(std::min(g.batches, kMaxBlocks));
  launch(at, tiled_kernels().get(at.device, 0, dst.dtype), grid, dst.data,
         static_cast<const void*>(a.data), static_cast<const void*>(b.data), g, batch);
}

}  // namespace

void CudaBackend::matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
                         const Scalar& alpha, const Scalar& beta) {
  OX_ASSERT(dst.dtype != DType::Bool, "matmul kernel given bool");
  OX_ASSERT(dst.shape.size() >= 2, "matmul of a ", dst.shape.size(), "-d dst");
  if (dst.numel() == 0) return;
  const DeviceContext at = enter(dst);
  const int64_t k = a.shape[a.shape.size() - 1];
  if (k > 0 && is_floating(dst.dtype) && cublas_available() &&
      matmul_cublas(at, dst, a, b, alpha, beta))
    return;
  matmul_tiled(at, dst, a, b, alpha, beta);
}

}  // namespace ox::cuda::detail
