// CUDA launchers: gather, scatter, nonzero (kernels/index.cu). Not written yet: each
// raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::gather(const StridedArray&, const StridedArray&,
                         const std::vector<IndexOperand>&) {
  OX_FAIL(Device, "gather", "the CUDA backend has no gather kernel yet");
}

void CudaBackend::scatter(const StridedArray&, const StridedArray&,
                          const std::vector<IndexOperand>&, ScatterReduce) {
  OX_FAIL(Device, "scatter", "the CUDA backend has no scatter kernel yet");
}

void CudaBackend::nonzero(const StridedArray&, const StridedArray&) {
  OX_FAIL(Device, "nonzero", "the CUDA backend has no nonzero kernel yet");
}

}  // namespace ox::cuda::detail
