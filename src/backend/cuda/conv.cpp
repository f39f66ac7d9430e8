// CUDA launchers: im2col, col2im, depthwise_conv2d, pool2d, pool2d_backward (kernels/conv.cu). Not
// written yet: each raises a Device error naming the primitive.

#include "backend/cuda/cuda_backend.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

void CudaBackend::im2col(const StridedArray&, const StridedArray&, const Window2d&) {
  OX_FAIL(Device, "im2col", "the CUDA backend has no im2col kernel yet");
}

void CudaBackend::col2im(const StridedArray&, const StridedArray&, const Window2d&) {
  OX_FAIL(Device, "col2im", "the CUDA backend has no col2im kernel yet");
}

void CudaBackend::depthwise_conv2d(DepthwiseOp, const StridedArray&, const StridedArray&,
                                   const StridedArray&, const StridedArray&, const Window2d&) {
  OX_FAIL(Device, "depthwise_conv2d", "the CUDA backend has no depthwise_conv2d kernel yet");
}

void CudaBackend::pool2d(PoolOp, const StridedArray&, const StridedArray&, const StridedArray&,
                         const PoolParams&) {
  OX_FAIL(Device, "pool2d", "the CUDA backend has no pool2d kernel yet");
}

void CudaBackend::pool2d_backward(PoolOp, const StridedArray&, const StridedArray&,
                                  const StridedArray&, const PoolParams&, CheckSite) {
  OX_FAIL(Device, "pool2d_backward", "the CUDA backend has no pool2d_backward kernel yet");
}

}  // namespace ox::cuda::detail
