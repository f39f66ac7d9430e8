// CUDA launchers: softmax, softmax_backward, layer_norm, layer_norm_backward, cross_entropy,
// cross_entropy_backward (kernels/norm.cu). Not written yet: each raises a Device error naming the
// primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::softmax(const StridedArray&, const StridedArray&, bool) {
  OX_FAIL(Device, "softmax", "the CUDA backend has no softmax kernel yet");
}

void CudaBackend::softmax_backward(const StridedArray&, const StridedArray&, const StridedArray&,
                                   bool) {
  OX_FAIL(Device, "softmax_backward", "the CUDA backend has no softmax_backward kernel yet");
}

void CudaBackend::layer_norm(const StridedArray&, const StridedArray&, const StridedArray&,
                             const StridedArray&, const StridedArray&, const StridedArray&, double,
                             bool) {
  OX_FAIL(Device, "layer_norm", "the CUDA backend has no layer_norm kernel yet");
}

void CudaBackend::layer_norm_backward(const StridedArray&, const StridedArray&, const StridedArray&,
                                      const StridedArray&, const StridedArray&, const StridedArray&,
                                      const StridedArray&, const StridedArray&, bool) {
  OX_FAIL(Device, "layer_norm_backward", "the CUDA backend has no layer_norm_backward kernel yet");
}

void CudaBackend::cross_entropy(const StridedArray&, const StridedArray&, const StridedArray&,
                                const StridedArray&, const StridedArray&, int64_t, double,
                                CheckSite) {
  OX_FAIL(Device, "cross_entropy", "the CUDA backend has no cross_entropy kernel yet");
}

void CudaBackend::cross_entropy_backward(const StridedArray&, const StridedArray&,
                                         const StridedArray&, const StridedArray&,
                                         const StridedArray&, int64_t, double) {
  OX_FAIL(Device, "cross_entropy_backward",
          "the CUDA backend has no cross_entropy_backward kernel yet");
}

}  // namespace ox::cuda::detail
