// CUDA launchers: cholesky, lu_factor, triangular_solve, lu_solve, geqrf, orgqr, eigh, svd
// (Backend contracts in src/backend/backend.h; the CPU's in src/backend/cpu/linalg.cpp), f32 and
// f64, on cuSOLVER's legacy dense API (cusolver.h) with the helper kernels of
// kernels/linalg.cu; triangular_solve is a kernel of its own.
//
// The host loops over the batch, one cuSOLVER call per matrix on the current stream, each
// writing its status straight into info[t]; nothing waits for the device. A matrix holding NaN
// or Inf must be left as it is with info kLinalgNonFinite, which the host cannot see without
// waiting: the routines that report info therefore factor a packed copy of the batch (scratch),
// into which the gather kernel writes zeros instead of a non-finite matrix (so cuSOLVER never
// sees one) and a flag per matrix; the scatter kernel then copies back only the unflagged ones
// and writes kLinalgNonFinite into info for the others, after cuSOLVER's info (stream order).
// Results that go to other outputs (pivots, tau, w, s, u, vh) are written by cuSOLVER directly;
// for a flagged matrix they hold the zero matrix's results.

#include <algorithm>
#include <type_traits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cusolver.h"
#include "backend/cuda/driver.h"
#include "backend/cuda/launch.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

constexpr const char* kKernelNames[] = {
    "ox_linalg_gather_f32",  "ox_linalg_gather_f64",    "ox_linalg_scatter_f32",
    "ox_linalg_scatter_f64", "ox_linalg_transpose_f32", "ox_linalg_transpose_f64",
    "ox_linalg_trsm_f32",    "ox_linalg_trsm_f64",
};

const KernelRef kLinalgGather[2] = {{"linalg", kKernelNames[0]}, {"linalg", kKernelNames[1]}};
const KernelRef kLinalgScatter[2] = {{"linalg", kKernelNames[2]}, {"linalg", kKernelNames[3]}};
const KernelRef kLinalgTranspose[2] = {{"linalg", kKernelNames[4]}, {"linalg", kKernelNames[5]}};
const KernelRef kLinalgTrsm[2] = {{"linalg", kKernelNames[6]}, {"linalg", kKernelNames[7]}};

template <class T>
CUfunction get(const KernelRef (&refs)[2], int device) {
  return refs[std::is_same_v<T, float> ? 0 : 1].get(device);
}

// cuSOLVER's S or D entry point for T.
template <class T, class S, class D>
auto pick(S s, D d) {
  if constexpr (std::is_same_v<T, float>) {
    return s;
  } else {
    return d;
  }
}

template <class T>
T* typed(const StridedArray& a) {
  return static_cast<T*>(a.data);
}

// One block per matrix (the blocks loop over the rest).
Grid per_matrix(int64_t count) {
  Grid g;
  g.threads = 128;
  g.blocks = unsigned(std::min<int64_t>(count, int64_t(1) << 20));
  return g;
}

kernels::Offsets<1> batch_offsets(const MatrixBatch& m, const char* op) {
  return make_offsets<1>(m.batch_shape, {&m.batch_strides}, op);
}

// info[t] = 0 for every matrix: a batch of empty matrices, which no routine is called for.
void zero_info(const DeviceContext& at, const StridedArray& info, int64_t count) {
  check(at.driver->cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(info.data), 0,
                                   size_t(count) * sizeof(int32_t), at.stream),
        "cuMemsetD8Async");
}

// The batch of a packed into scratch (matrix t at t * rows * cols, ld rows; or its transpose,
// ld cols), zeros for a matrix with a non-finite element where tri says (kernels/linalg.cu).
struct Staged {
  DeviceBuffer scratch;
  DeviceBuffer flags;
  Staged(const DeviceContext& at, int64_t count, int64_t size, size_t elem)
      : scratch(at, size_t(count) * size_t(size) * elem),
        flags(at, size_t(count) * sizeof(int32_t)) {}
};

template <class T>
void stage(const DeviceContext& at, const StridedArray& a, const MatrixBatch& m, int32_t tri,
           bool transpose, const Staged& staged, const char* op) {
  const int64_t count = m.count();
  launch(at, get<T>(kLinalgGather, at.device), per_matrix(count), static_cast<const T*>(a.data),
         batch_offsets(m, op), count, m.rows, m.cols, m.ld, staged.scratch.as<T>(),
         staged.flags.as<int32_t>(), tri, int32_t(transpose ? 1 : 0));
}

// Copies the unflagged matrices back into a (when copy; zeros below the diagonal for zero_tri
// 1, above it for -1) and marks the flagged ones in info.
template <class T>
void unstage(const DeviceContext& at, const StridedArray& a, const MatrixBatch& m,
             const StridedArray& info, int32_t zero_tri, bool copy, const Staged& staged,
             const char* op) {
  const int64_t count = m.count();
  launch(at, get<T>(kLinalgScatter, at.device), per_matrix(count), typed<T>(a),
         batch_offsets(m, op), count, m.rows, m.cols, m.ld,
         static_cast<const T*>(staged.scratch.as<T>()),
         static_cast<const int32_t*>(staged.flags.as<int32_t>()), typed<int32_t>(info), zero_tri,
         int32_t(copy ? 1 : 0), int32_t(Backend::kLinalgNonFinite));
}

cublasFillMode_t fill_mode(bool upper) {
  return upper ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER;
}

// A workspace of lwork elements of T (at least one).
template <class T>
size_t workspace_bytes(int lwork) {
  return size_t(std::max(lwork, 1)) * sizeof(T);
}

template <class T>
void cholesky_typed(const StridedArray& a, const StridedArray& info, bool upper) {
  const char* op = "cholesky";
  const MatrixBatch m(a);
  const int64_t count = m.count(), n = m.rows;
  if (count == 0) return;
  const DeviceContext at = enter(a);
  if (n == 0) return zero_info(at, info, count);
  const int ni = solver_int(n, op);
  const SolverSession s(at, op);
  const Staged staged(at, count, n * n, sizeof(T));
  stage<T>(at, a, m, upper ? 1 : -1, false, staged, op);
  T* scratch = staged.scratch.as<T>();
  const cublasFillMode_t uplo = fill_mode(upper);
  int lwork = 0;
  s.check(pick<T>(s.api.cusolverDnSpotrf_bufferSize, s.api.cusolverDnDpotrf_bufferSize)(
              s.handle, uplo, ni, scratch, ni, &lwork),
          "cusolverDn potrf_bufferSize");
  const DeviceBuffer work(at, workspace_bytes<T>(lwork));
  for (int64_t t = 0; t < count; ++t)
    s.check(pick<T>(s.api.cusolverDnSpotrf, s.api.cusolverDnDpotrf)(
                s.handle, uplo, ni, scratch + t * n * n, ni, work.as<T>(), lwork,
                typed<int32_t>(info) + t),
            "cusolverDn potrf");
  // cuSOLVER, as LAPACK, leaves the other triangle as it was: zeros there.
  unstage<T>(at, a, m, info, upper ? 1 : -1, true, staged, op);
}

template <class T>
void lu_factor_typed(const StridedArray& a, const StridedArray& pivots, const StridedArray& info) {
  const char* op = "lu_factor";
  const MatrixBatch m(a);
  const int64_t count = m.count(), rows = m.rows, cols = m.cols, k = std::min(rows, cols);
  if (count == 0) return;
  const DeviceContext at = enter(a);
  if (k == 0) return zero_info(at, info, count);
  const int mi = solver_int(rows, op), ni = solver_int(cols, op);
  const SolverSession s(at, op);
  const Staged staged(at, count, rows * cols, sizeof(T));
  stage<T>(at, a, m, 0, false, staged, op);
  T* scratch = staged.scratch.as<T>();
  int lwork = 0;
  s.check(pick<T>(s.api.cusolverDnSgetrf_bufferSize, s.api.cusolverDnDgetrf_bufferSize)(
              s.handle, mi, ni, scratch, mi, &lwork),
          "cusolverDn getrf_bufferSize");
  const DeviceBuffer work(at, workspace_bytes<T>(lwork));
  for (int64_t t = 0; t < count; ++t)
    s.check(pick<T>(s.api.cusolverDnSgetrf, s.api.cusolverDnDgetrf)(
                s.handle, mi, ni, scratch + t * rows * cols, mi, work.as<T>(),
                typed<int32_t>(pivots) + t * k, typed<int32_t>(info) + t),
            "cusolverDn getrf");
  unstage<T>(at, a, m, info, 0, true, staged, op);
}

template <class T>
void triangular_solve_typed(const StridedArray& a, const StridedArray& b, bool upper,
                            bool transpose, bool unit_diagonal) {
  const char* op = "triangular_solve";
  const MatrixBatch ma(a), mb(b);
  const int64_t count = mb.count(), n = mb.rows, k = mb.cols;
  if (count == 0 || n == 0 || k == 0) return;
  OX_ASSERT(ma.batch_shape == mb.batch_shape && ma.rows == n && ma.cols == n,
            "triangular_solve launcher: A ", a.shape, " for b ", b.shape);
  const DeviceContext at = enter(b);
  const kernels::Offsets<2> batch =
      make_offsets<2>(mb.batch_shape, {&ma.batch_strides, &mb.batch_strides}, op);
  launch(at, get<T>(kLinalgTrsm, at.device), grid_for(count * k), static_cast<const T*>(a.data),
         typed<T>(b), batch, count, n, k, ma.ld, mb.ld, int32_t(upper ? 1 : 0),
         int32_t(transpose ? 1 : 0), int32_t(unit_diagonal ? 1 : 0));
}

template <class T>
void lu_solve_typed(const StridedArray& lu, const StridedArray& pivots, const StridedArray& b,
                    bool transpose) {
  const char* op = "lu_solve";
  const MatrixBatch ma(lu), mb(b), piv(pivots, 1);
  const int64_t count = mb.count(), n = mb.rows, k = mb.cols;
  if (count == 0 || n == 0 || k == 0) return;
  OX_ASSERT(ma.batch_shape == mb.batch_shape && piv.batch_shape == mb.batch_shape,
            "lu_solve launcher: LU ", lu.shape, " and pivots ", pivots.shape, " for b ", b.shape);
  const int ni = solver_int(n, op), ki = solver_int(k, op);
  const int lda = solver_int(ma.ld, op), ldb = solver_int(mb.ld, op);
  const DeviceContext at = enter(b);
  const SolverSession s(at, op);
  const DeviceBuffer status(at, sizeof(int32_t));  // getrs reports bad arguments only
  const cublasOperation_t trans = transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
  for (int64_t t = 0; t < count; ++t)
    s.check(pick<T>(s.api.cusolverDnSgetrs, s.api.cusolverDnDgetrs)(
                s.handle, trans, ni, ki, typed<T>(lu) + ma.offset(t), lda,
                typed<int32_t>(pivots) + piv.offset(t), typed<T>(b) + mb.offset(t), ldb,
                status.as<int32_t>()),
            "cusolverDn getrs");
}

template <class T>
void geqrf_typed(const StridedArray& a, const StridedArray& tau, const StridedArray& info) {
  const char* op = "geqrf";
  const MatrixBatch m(a), vt(tau, 1);
  const int64_t count = m.count(), rows = m.rows, cols = m.cols, k = std::min(rows, cols);
  if (count == 0) return;
  const DeviceContext at = enter(a);
  if (k == 0) return zero_info(at, info, count);
  const int mi = solver_int(rows, op), ni = solver_int(cols, op);
  const SolverSession s(at, op);
  const Staged staged(at, count, rows * cols, sizeof(T));
  stage<T>(at, a, m, 0, false, staged, op);
  T* scratch = staged.scratch.as<T>();
  int lwork = 0;
  s.check(pick<T>(s.api.cusolverDnSgeqrf_bufferSize, s.api.cusolverDnDgeqrf_bufferSize)(
              s.handle, mi, ni, scratch, mi, &lwork),
          "cusolverDn geqrf_bufferSize");
  const DeviceBuffer work(at, workspace_bytes<T>(lwork));
  for (int64_t t = 0; t < count; ++t)
    s.check(pick<T>(s.api.cusolverDnSgeqrf, s.api.cusolverDnDgeqrf)(
                s.handle, mi, ni, scratch + t * rows * cols, mi, typed<T>(tau) + vt.offset(t),
                work.as<T>(), lwork, typed<int32_t>(info) + t),
            "cusolverDn geqrf");
  unstage<T>(at, a, m, info, 0, true, staged, op);
}

template <class T>
void orgqr_typed(const StridedArray& q, const StridedArray& tau) {
  const char* op = "orgqr";
  const MatrixBatch m(q), vt(tau, 1);
  const int64_t count = m.count(), rows = m.rows, cols = m.cols;
  if (count == 0 || rows == 0 || cols == 0) return;
  OX_ASSERT(vt.batch_shape == m.batch_shape && vt.rows <= cols && cols <= rows,
            "orgqr launcher: q ", q.shape, " and tau ", tau.shape);
  const int mi = solver_int(rows, op), ni = solver_int(cols, op), ki = solver_int(vt.rows, op);
  const int ld = solver_int(m.ld, op);
  const DeviceContext at = enter(q);
  const SolverSession s(at, op);
  int lwork = 0;
  s.check(pick<T>(s.api.cusolverDnSorgqr_bufferSize, s.api.cusolverDnDorgqr_bufferSize)(
              s.handle, mi, ni, ki, typed<T>(q) + m.offset(0), ld, typed<T>(tau) + vt.offset(0),
              &lwork),
          "cusolverDn orgqr_bufferSize");
  const DeviceBuffer work(at, workspace_bytes<T>(lwork));
  const DeviceBuffer status(at, sizeof(int32_t));  // orgqr reports bad arguments only
  for (int64_t t = 0; t < count; ++t)
    s.check(pick<T>(s.api.cusolverDnSorgqr, s.api.cusolverDnDorgqr)(
                s.handle, mi, ni, ki, typed<T>(q) + m.offset(t), ld, typed<T>(tau) + vt.offset(t),
                work.as<T>(), lwork, status.as<int32_t>()),
            "cusolverDn orgqr");
}

template <class T>
void eigh_typed(const StridedArray& a, const StridedArray& w, const StridedArray& info,
                bool vectors, bool upper) {
  const char* op = "eigh";
  const MatrixBatch m(a), vw(w, 1);
  const int64_t count = m.count(), n = m.rows;
  if (count == 0) return;
  const DeviceContext at = enter(a);
  if (n == 0) return zero_info(at, info, count);
  const int ni = solver_int(n, op);
  const SolverSession s(at, op);
  const Staged staged(at, count, n * n, sizeof(T));
  stage<T>(at, a, m, upper ? 1 : -1, false, staged, op);
  T* scratch = staged.scratch.as<T>();
  const cusolverEigMode_t jobz = vectors ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
  const cublasFillMode_t uplo = fill_mode(upper);
  int lwork = 0;
  s.check(pick<T>(s.api.cusolverDnSsyevd_bufferSize, s.api.cusolverDnDsyevd_bufferSize)(
              s.handle, jobz, uplo, ni, scratch, ni, typed<T>(w) + vw.offset(0), &lwork),
          "cusolverDn syevd_bufferSize");
  const DeviceBuffer work(at, workspace_bytes<T>(lwork));
  for (int64_t t = 0; t < count; ++t)
    s.check(pick<T>(s.api.cusolverDnSsyevd, s.api.cusolverDnDsyevd)(
                s.handle, jobz, uplo, ni, scratch + t * n * n, ni, typed<T>(w) + vw.offset(t),
                work.as<T>(), lwork, typed<int32_t>(info) + t),
            "cusolverDn syevd");
  // Without vectors a is "destroyed": it keeps its values.
  unstage<T>(at, a, m, info, 0, vectors, staged, op);
}

template <class T>
void svd_typed(const StridedArray& a, const StridedArray& u, const StridedArray& s_out,
               const StridedArray& vh, const StridedArray& info, bool full_matrices) {
  const char* op = "svd";
  const MatrixBatch m(a), vs(s_out, 1);
  const int64_t count = m.count(), rows = m.rows, cols = m.cols, k = std::min(rows, cols);
  if (count == 0) return;
  const DeviceContext at = enter(a);
  if (k == 0) return zero_info(at, info, count);
  const bool vectors = u.data != nullptr;
  // gesvd wants m >= n: a wide matrix is factored as its transpose, Aᵀ = U' S V'ᵀ, so that
  // A = V' S U'ᵀ: u = (V'ᵀ)ᵀ and vh = U'ᵀ, transposed from scratch into u and vh.
  const bool wide = rows < cols;
  const int64_t gm = wide ? cols : rows, gn = wide ? rows : cols;  // gn == k
  const int64_t ucols = full_matrices ? gm : k;  // U' is gm x ucols, V'ᵀ is gn x gn
  const int gmi = solver_int(gm, op), gni = solver_int(gn, op);
  const SolverSession s(at, op);
  const Staged staged(at, count, rows * cols, sizeof(T));
  stage<T>(at, a, m, 0, wide, staged, op);
  T* scratch = staged.scratch.as<T>();
  const signed char job = !vectors ? 'N' : full_matrices ? 'A' : 'S';
  // Outputs of gesvd: u and vh themselves, or packed scratch for a wide matrix.
  const size_t u_bytes = vectors && wide ? size_t(count * gm * ucols) * sizeof(T) : 0;
  const size_t vt_bytes = vectors && wide ? size_t(count * gn * gn) * sizeof(T) : 0;
  const DeviceBuffer u_scratch(at, u_bytes), vt_scratch(at, vt_bytes);
  const MatrixBatch mu = vectors ? MatrixBatch(u) : m, mv = vectors ? MatrixBatch(vh) : m;
  int ldu = gmi, ldvt = gni;  // gesvd checks them even when it does not write
  if (vectors && !wide) {
    OX_ASSERT(mu.rows == rows && mu.cols == ucols && mv.rows == gn && mv.cols == cols,
              "svd launcher: u ", u.shape, " vh ", vh.shape, " for ", a.shape);
    ldu = solver_int(mu.ld, op);
    ldvt = solver_int(mv.ld, op);
  } else if (vectors) {
    OX_ASSERT(mu.rows == rows && mu.cols == rows && mv.rows == ucols && mv.cols == cols,
              "svd launcher: u ", u.shape, " vh ", vh.shape, " for ", a.shape);
  }
  int lwork = 0;
  s.check(pick<T>(s.api.cusolverDnSgesvd_bufferSize, s.api.cusolverDnDgesvd_bufferSize)(
              s.handle, gmi, gni, &lwork),
          "cusolverDn gesvd_bufferSize");
  const DeviceBuffer work(at, workspace_bytes<T>(lwork));
  const DeviceBuffer rwork(at, size_t(k) * sizeof(T));  // unconverged superdiagonal
  for (int64_t t = 0; t < count; ++t) {
    T* ut = nullptr;
    T* vtt = nullptr;
    if (vectors && wide) {
      ut = u_scratch.as<T>() + t * gm * ucols;
      vtt = vt_scratch.as<T>() + t * gn * gn;
    } else if (vectors) {
      ut = typed<T>(u) + mu.offset(t);
      vtt = typed<T>(vh) + mv.offset(t);
    }
    s.check(pick<T>(s.api.cusolverDnSgesvd, s.api.cusolverDnDgesvd)(
                s.handle, job, job, gmi, gni, scratch + t * rows * cols, gmi,
                typed<T>(s_out) + vs.offset(t), ut, ldu, vtt, ldvt, work.as<T>(), lwork,
                rwork.as<T>(), typed<int32_t>(info) + t),
            "cusolverDn gesvd");
  }
  if (vectors && wide) {
    // u (rows x rows) = (V'ᵀ)ᵀ, V'ᵀ packed gn x gn; vh (ucols x cols) = U'ᵀ, U' packed gm x ucols.
    launch(at, get<T>(kLinalgTranspose, at.device), grid_for(count * rows * rows),
           static_cast<const T*>(vt_scratch.as<T>()), gn, gn * gn, typed<T>(u),
           batch_offsets(mu, op), mu.ld, count, rows, rows);
    launch(at, get<T>(kLinalgTranspose, at.device), grid_for(count * ucols * cols),
           static_cast<const T*>(u_scratch.as<T>()), gm, gm * ucols, typed<T>(vh),
           batch_offsets(mv, op), mv.ld, count, ucols, cols);
  }
  // a is destroyed: it keeps its values; a non-finite matrix gets its info.
  unstage<T>(at, a, m, info, 0, false, staged, op);
}

template <class F>
void dispatch_solver(DType dtype, F&& f) {
  if (dtype == kF32) return f.template operator()<float>();
  OX_ASSERT(dtype == kF64, "CUDA linalg launcher given ", dtype);
  f.template operator()<double>();
}

}  // namespace

std::span<const char* const> linalg_kernel_names() { return kKernelNames; }

void CudaBackend::cholesky(const StridedArray& a, const StridedArray& info, bool upper) {
  dispatch_solver(a.dtype, [&]<class T>() { cholesky_typed<T>(a, info, upper); });
}

void CudaBackend::lu_factor(const StridedArray& a, const StridedArray& pivots,
                            const StridedArray& info) {
  dispatch_solver(a.dtype, [&]<class T>() { lu_factor_typed<T>(a, pivots, info); });
}

void CudaBackend::triangular_solve(const StridedArray& a, const StridedArray& b, bool upper,
                                   bool transpose, bool unit_diagonal) {
  dispatch_solver(a.dtype, [&]<class T>() {
    triangular_solve_typed<T>(a, b, upper, transpose, unit_diagonal);
  });
}

void CudaBackend::lu_solve(const StridedArray& lu, const StridedArray& pivots,
                           const StridedArray& b, bool transpose) {
  dispatch_solver(lu.dtype, [&]<class T>() { lu_solve_typed<T>(lu, pivots, b, transpose); });
}

void CudaBackend::geqrf(const StridedArray& a, const StridedArray& tau, const StridedArray& info) {
  dispatch_solver(a.dtype, [&]<class T>() { geqrf_typed<T>(a, tau, info); });
}

void CudaBackend::orgqr(const StridedArray& q, const StridedArray& tau) {
  dispatch_solver(q.dtype, [&]<class T>() { orgqr_typed<T>(q, tau); });
}

void CudaBackend::eigh(const StridedArray& a, const StridedArray& w, const StridedArray& info,
                       bool vectors, bool upper) {
  dispatch_solver(a.dtype, [&]<class T>() { eigh_typed<T>(a, w, info, vectors, upper); });
}

void CudaBackend::svd(const StridedArray& a, const StridedArray& u, const StridedArray& s,
                      const StridedArray& vh, const StridedArray& info, bool full_matrices) {
  dispatch_solver(a.dtype, [&]<class T>() { svd_typed<T>(a, u, s, vh, info, full_matrices); });
}

}  // namespace ox::cuda::detail
