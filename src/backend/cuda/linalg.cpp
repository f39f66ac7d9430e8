// CUDA launchers: cholesky, lu_factor, triangular_solve, lu_solve, geqrf, orgqr, eigh, svd
// (kernels/linalg.cu). Not written yet: each raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::cholesky(const StridedArray&, const StridedArray&, bool) {
  OX_FAIL(Device, "cholesky", "the CUDA backend has no cholesky kernel yet");
}

void CudaBackend::lu_factor(const StridedArray&, const StridedArray&, const StridedArray&) {
  OX_FAIL(Device, "lu_factor", "the CUDA backend has no lu_factor kernel yet");
}

void CudaBackend::triangular_solve(const StridedArray&, const StridedArray&, bool, bool, bool) {
  OX_FAIL(Device, "triangular_solve", "the CUDA backend has no triangular_solve kernel yet");
}

void CudaBackend::lu_solve(const StridedArray&, const StridedArray&, const StridedArray&, bool) {
  OX_FAIL(Device, "lu_solve", "the CUDA backend has no lu_solve kernel yet");
}

void CudaBackend::geqrf(const StridedArray&, const StridedArray&, const StridedArray&) {
  OX_FAIL(Device, "geqrf", "the CUDA backend has no geqrf kernel yet");
}

void CudaBackend::orgqr(const StridedArray&, const StridedArray&) {
  OX_FAIL(Device, "orgqr", "the CUDA backend has no orgqr kernel yet");
}

void CudaBackend::eigh(const StridedArray&, const StridedArray&, const StridedArray&, bool, bool) {
  OX_FAIL(Device, "eigh", "the CUDA backend has no eigh kernel yet");
}

void CudaBackend::svd(const StridedArray&, const StridedArray&, const StridedArray&,
                      const StridedArray&, const StridedArray&, bool) {
  OX_FAIL(Device, "svd", "the CUDA backend has no svd kernel yet");
}

}  // namespace ox::cuda::detail
