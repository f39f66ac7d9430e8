// CUDA launchers: softmax, softmax_backward, layer_norm, layer_norm_backward, cross_entropy,
// cross_entropy_backward (kernels/norm.cu). One block per row (norm_plan.h picks its threads from
// the row length); the layer-norm weight and bias gradients are summed per column over blocks of
// 64 rows, then over the blocks in order, as the CPU backend, in scratch memory.

#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/launch.h"
#include "backend/cuda/norm_plan.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

std::array<std::string, kNormKernelCount> norm_rows() {
  std::array<std::string, kNormKernelCount> rows;
  for (int k = 0; k < kNormKernelCount; ++k) rows[size_t(k)] = kNormKernelNames[size_t(k)];
  return rows;
}

const KernelTable<kNormKernelCount>& norm_kernels() {
  static const KernelTable<kNormKernelCount> table("norm", "ox_norm_", norm_rows());
  return table;
}

CUfunction kernel_for(const DeviceContext& at, NormKernel k, DType dtype, const char* op) {
  if (!is_floating(dtype))
    OX_FAIL(Device, op, "the CUDA kernel takes floating dtypes, got ", dtype);
  return norm_kernels().get(at.device, k, dtype);
}

}  // namespace

void CudaBackend::softmax(const StridedArray& dst, const StridedArray& src, bool log) {
  int64_t n = 0;
  const int64_t rows = row_count(src, &n);
  if (rows == 0) return;
  const DeviceContext at = enter(src);
  launch(at, kernel_for(at, kSoftmax, src.dtype, "softmax"), row_grid(rows, n), dst.data,
         static_cast<const void*>(src.data), rows, n, int32_t(log));
}

void CudaBackend::softmax_backward(const StridedArray& grad_in, const StridedArray& grad_out,
                                   const StridedArray& y, bool log) {
  int64_t n = 0;
  const int64_t rows = row_count(grad_out, &n);
  if (rows == 0) return;
  const DeviceContext at = enter(grad_out);
  launch(at, kernel_for(at, kSoftmaxBackward, grad_out.dtype, "softmax_backward"),
         row_grid(rows, n), grad_in.data, static_cast<const void*>(grad_out.data),
         static_cast<const void*>(y.data), rows, n, int32_t(log));
}

void CudaBackend::layer_norm(const StridedArray& dst, const StridedArray& mean,
                             const StridedArray& rstd, const StridedArray& src,
                             const StridedArray& weight, const StridedArray& bias, double eps,
                             bool rms) {
  int64_t n = 0;
  const int64_t rows = row_count(src, &n);
  if (rows == 0) return;
  const DeviceContext at = enter(src);
  launch(at, kernel_for(at, kLayerNorm, src.dtype, "layer_norm"), row_grid(rows, n), dst.data,
         mean.data, rstd.data, static_cast<const void*>(src.data),
         static_cast<const void*>(weight.data), static_cast<const void*>(bias.data), rows, n, eps,
         int32_t(rms));
}

void CudaBackend::layer_norm_backward(const StridedArray& grad_in, const StridedArray& grad_weight,
                                      const StridedArray& grad_bias, const StridedArray& grad_out,
                                      const StridedArray& src, const StridedArray& mean,
                                      const StridedArray& rstd, const StridedArray& weight,
                                      bool rms) {
  int64_t n = 0;
  const int64_t rows = row_count(src, &n);
  const bool want_w = grad_weight.data != nullptr, want_b = grad_bias.data != nullptr;
  if (n == 0 || (rows == 0 && !want_w && !want_b)) return;
  const DeviceContext at = enter(src);
  const void* g = grad_out.data;
  const void* x = src.data;
  const void* mu = mean.data;
  const void* rs = rstd.data;
  if (grad_in.data != nullptr && rows > 0) {
    launch(at, kernel_for(at, kLayerNormBackward, src.dtype, "layer_norm_backward"),
           row_grid(rows, n), grad_in.data, g, x, mu, rs, static_cast<const void*>(weight.data),
           rows, n, int32_t(rms));
  }
  if (!want_w && !want_b) return;
  // Partial sums per (block of 64 rows, column), then each column's partials in block order:
  // the CPU backend's order, so the same bits. No rows: the sums are 0.
  const int64_t blocks = row_blocks(rows);
  const size_t bytes = size_t(blocks * n) * sizeof(double);
  DeviceBuffer partial_w(at, want_w ? bytes : 0), partial_b(at, want_b ? bytes : 0);
  if (blocks > 0) {
    launch(at, kernel_for(at, kLayerNormPartials, src.dtype, "layer_norm_backward"),
           grid_for(blocks * n), partial_w.data(), partial_b.data(), g, x, mu, rs, rows, n,
           int32_t(rms));
  }
  const CUfunction sum = kernel_for(at, kColumnSum, src.dtype, "layer_norm_backward");
  if (want_w)
    launch(at, sum, grid_for(n), grad_weight.data, static_cast<const void*>(partial_w.data()),
           blocks, n);
  if (want_b)
    launch(at, sum, grid_for(n), grad_bias.data, static_cast<const void*>(partial_b.data()), blocks,
           n);
}

void CudaBackend::cross_entropy(const StridedArray& loss, const StridedArray& row_weight,
                                const StridedArray& logits, const StridedArray& target,
                                const StridedArray& weight, int64_t ignore_index, double smoothing,
                                CheckSite site) {
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  if (rows == 0) return;
  const DeviceContext at = enter(logits);
  launch(at, kernel_for(at, kCrossEntropy, logits.dtype, "cross_entropy"), row_grid(rows, classes),
         loss.data, row_weight.data, static_cast<const void*>(logits.data),
         static_cast<const void*>(target.data), static_cast<const void*>(weight.data), rows,
         classes, ignore_index, smoothing, check_word(at.device), int32_t(site));
}

void CudaBackend::cross_entropy_backward(const StridedArray& grad_logits,
                                         const StridedArray& grad_loss, const StridedArray& logits,
                                         const StridedArray& target, const StridedArray& weight,
                                         int64_t ignore_index, double smoothing) {
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  if (rows == 0) return;
  const DeviceContext at = enter(logits);
  // The class weights' total (used with smoothing), summed in class order as the CPU; without
  // weights the kernel takes the class count.
  const bool need_total = weight.data != nullptr && smoothing > 0;
  DeviceBuffer total(at, need_total ? sizeof(double) : 0);
  if (need_total) {
    Grid one;
    one.threads = 1;
    launch(at, kernel_for(at, kWeightTotal, logits.dtype, "cross_entropy_backward"), one,
           total.data(), static_cast<const void*>(weight.data), classes);
  }
  launch(at, kernel_for(at, kCrossEntropyBackward, logits.dtype, "cross_entropy_backward"),
         row_grid(rows, classes), grad_logits.data, static_cast<const void*>(grad_loss.data),
         static_cast<const void*>(logits.data), static_cast<const void*>(target.data),
         static_cast<const void*>(weight.data), static_cast<const void*>(total.data()), rows,
         classes, ignore_index, smoothing);
}

}  // namespace ox::cuda::detail
