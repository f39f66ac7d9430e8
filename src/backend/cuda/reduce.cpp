// CUDA launchers: reduce, scan (kernels/reduce.cu). Not written yet: each
// raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::reduce(ReduceOp, const StridedArray&, const StridedArray&, const ReduceParams&) {
  OX_FAIL(Device, "reduce", "the CUDA backend has no reduce kernel yet");
}

void CudaBackend::scan(ScanOp, const StridedArray&, const StridedArray&, const StridedArray*) {
  OX_FAIL(Device, "scan", "the CUDA backend has no scan kernel yet");
}

}  // namespace ox::cuda::detail
