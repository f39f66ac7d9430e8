// CUDA launchers: sort (kernels/sort.cu). Not written yet: each
// raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::sort(const StridedArray&, const StridedArray&, const StridedArray&,
                       const SortParams&) {
  OX_FAIL(Device, "sort", "the CUDA backend has no sort kernel yet");
}

}  // namespace ox::cuda::detail
