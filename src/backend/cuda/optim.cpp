// CUDA launchers: optim_step (kernels/optim.cu). Not written yet: each
// raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::optim_step(OptimStepKind, const StridedArray&, const StridedArray&,
                             const StridedArray&, const StridedArray&, const StridedArray&,
                             const OptimStepParams&) {
  OX_FAIL(Device, "optim_step", "the CUDA backend has no optim_step kernel yet");
}

}  // namespace ox::cuda::detail
