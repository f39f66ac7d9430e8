// CUDA launchers: matmul (kernels/matmul.cu). Not written yet: each
// raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::matmul(const StridedArray&, const StridedArray&, const StridedArray&,
                         const Scalar&, const Scalar&) {
  OX_FAIL(Device, "matmul", "the CUDA backend has no matmul kernel yet");
}

}  // namespace ox::cuda::detail
