// CUDA launchers: random, bernoulli, randperm (kernels/random.cu). Not written yet: each
// raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::random(const StridedArray&, const RandomSpec&) {
  OX_FAIL(Device, "random", "the CUDA backend has no random kernel yet");
}

void CudaBackend::bernoulli(const StridedArray&, const StridedArray&, uint64_t, uint64_t,
                            CheckSite) {
  OX_FAIL(Device, "bernoulli", "the CUDA backend has no bernoulli kernel yet");
}

void CudaBackend::randperm(const StridedArray&, uint64_t, uint64_t) {
  OX_FAIL(Device, "randperm", "the CUDA backend has no randperm kernel yet");
}

}  // namespace ox::cuda::detail
