// CUDA launchers: copy, fill, arange, linspace, unary, binary, where (kernels/elementwise.cu). Not
// written yet: each raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::copy(const StridedArray&, const StridedArray&) {
  OX_FAIL(Device, "copy", "the CUDA backend has no copy kernel yet");
}

void CudaBackend::fill(const StridedArray&, const Scalar&) {
  OX_FAIL(Device, "fill", "the CUDA backend has no fill kernel yet");
}

void CudaBackend::arange(const StridedArray&, const Scalar&, const Scalar&) {
  OX_FAIL(Device, "arange", "the CUDA backend has no arange kernel yet");
}

void CudaBackend::linspace(const StridedArray&, double, double) {
  OX_FAIL(Device, "linspace", "the CUDA backend has no linspace kernel yet");
}

void CudaBackend::unary(UnaryOp, const StridedArray&, const StridedArray&, const UnaryParams&) {
  OX_FAIL(Device, "unary", "the CUDA backend has no unary kernel yet");
}

void CudaBackend::binary(BinaryOp, const StridedArray&, const StridedArray&, const StridedArray&,
                         double) {
  OX_FAIL(Device, "binary", "the CUDA backend has no binary kernel yet");
}

void CudaBackend::where(const StridedArray&, const StridedArray&, const StridedArray&,
                        const StridedArray&) {
  OX_FAIL(Device, "where", "the CUDA backend has no where kernel yet");
}

}  // namespace ox::cuda::detail
