// CUDA launchers: im2col, col2im, depthwise_conv2d, pool2d, pool2d_backward (kernels/conv.cu,
// whose per-element arithmetic is kernels/conv.cuh). Every sum is a gather in the CPU backend's
// order, or one thread per plane / weight element, so results are bitwise the CPU backend's and
// do not depend on the launch configuration.

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/kernels/conv.cuh"
#include "backend/cuda/launch.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

using kernels::ConvGeom;
using kernels::Strides6;

static_assert(int(PoolOp::Max) == kernels::kMax && int(PoolOp::Avg) == kernels::kAvg &&
              int(PoolOp::AdaptiveAvg) == kernels::kAdaptiveAvg);

const KernelTable<kernels::kConvKernelCount>& conv_kernels() {
  static const KernelTable<kernels::kConvKernelCount> table = [] {
    std::array<std::string, kernels::kConvKernelCount> rows;
    for (int k = 0; k < kernels::kConvKernelCount; ++k)
      rows[size_t(k)] = kernels::kConvKernelRows[k];
    return KernelTable<kernels::kConvKernelCount>("conv", "ox_conv_", rows);
  }();
  return table;
}

CUfunction kernel_for(const DeviceContext& at, kernels::ConvKernel k, DType dtype, const char* op) {
  if (!is_floating(dtype))
    OX_FAIL(DType, op, "the CUDA kernels take floating dtypes, not ", dtype_name(dtype));
  return conv_kernels().get(at.device, k, dtype);
}

Strides6 strides6(const StridedArray& a, const char* op) {
  OX_ASSERT(a.strides.size() <= 6, op, ": an array of more than 6 dims");
  Strides6 s;
  for (size_t d = 0; d < a.strides.size(); ++d) s.v[d] = a.strides[d];
  return s;
}

// The geometry of a window over input planes `in` ([N, C, H, W]) to outputs of extent (ho, wo).
ConvGeom geometry(const Shape& in, int64_t kh, int64_t kw, int64_t ho, int64_t wo,
                  const Window2d& w) {
  ConvGeom g;
  g.n = in[0], g.c = in[1], g.h = in[2], g.w = in[3];
  g.kh = kh, g.kw = kw, g.ho = ho, g.wo = wo;
  g.sh = w.stride_h, g.sw = w.stride_w, g.ph = w.pad_h, g.pw = w.pad_w;
  g.dh = w.dilation_h, g.dw = w.dilation_w;
  return g;
}

void check_dims(const StridedArray& a, size_t ndim, const char* op) {
  OX_ASSERT(a.shape.size() == ndim && a.strides.size() == ndim, op, ": expected ", ndim, " dims");
}

// Threads per block for kernels with one thread per plane or weight element: few threads, each
// with a long loop, spread over as many SMs as possible.
constexpr unsigned kSequentialThreads = 32;

}  // namespace

void CudaBackend::im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  check_dims(dst, 6, "im2col");
  check_dims(src, 4, "im2col");
  const DeviceContext at = enter(dst);
  const ConvGeom g = geometry(src.shape, dst.shape[2], dst.shape[3], dst.shape[4], dst.shape[5], w);
  launch(at, kernel_for(at, kernels::kIm2col, dst.dtype, "im2col"), grid_for(n), dst.data,
         strides6(dst, "im2col"), static_cast<const void*>(src.data), strides6(src, "im2col"), g,
         n);
}

void CudaBackend::col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  check_dims(dst, 4, "col2im");
  check_dims(src, 6, "col2im");
  OX_ASSERT(dst.is_contiguous(), "col2im: dst must be contiguous");
  const DeviceContext at = enter(dst);
  // An empty src (kh, kw, Ho or Wo of 0) leaves every sum empty: zeros, never reading src.
  const ConvGeom g = geometry(dst.shape, src.shape[2], src.shape[3], src.shape[4], src.shape[5], w);
  launch(at, kernel_for(at, kernels::kCol2im, dst.dtype, "col2im"), grid_for(n), dst.data,
         static_cast<const void*>(src.data), strides6(src, "col2im"), g, n);
}

void CudaBackend::depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                                   const StridedArray& b, const StridedArray& bias,
                                   const Window2d& w) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  check_dims(dst, 4, "depthwise_conv2d");
  check_dims(a, 4, "depthwise_conv2d");
  check_dims(b, 4, "depthwise_conv2d");
  OX_ASSERT(dst.is_contiguous(), "depthwise_conv2d: dst must be contiguous");
  const DeviceContext at = enter(dst);
  ConvGeom g;
  kernels::ConvKernel k = kernels::kDepthwiseForward;
  Grid grid = grid_for(n);
  int64_t bias_stride = 0;
  switch (op) {
    case DepthwiseOp::Forward:  // a = input [N, C, H, W], b = weight [C * M, 1, kh, kw]
      g = geometry(a.shape, b.shape[2], b.shape[3], dst.shape[2], dst.shape[3], w);
      g.m = dst.shape[1] / a.shape[1];
      if (bias.data != nullptr) bias_stride = bias.strides[0];
      break;
    case DepthwiseOp::InputGrad:  // dst [N, C, H, W], a = grad_output, b = weight
      k = kernels::kDepthwiseInputGrad;
      g = geometry(dst.shape, b.shape[2], b.shape[3], a.shape[2], a.shape[3], w);
      g.m = a.shape[1] / dst.shape[1];
      break;
    case DepthwiseOp::WeightGrad:  // dst [C * M, 1, kh, kw], a = grad_output, b = input
      k = kernels::kDepthwiseWeightGrad;
      g = geometry(b.shape, dst.shape[2], dst.shape[3], a.shape[2], a.shape[3], w);
      g.m = dst.shape[0] / b.shape[1];
      grid = grid_for(n, kSequentialThreads);
      break;
  }
  const void* bias_data = op == DepthwiseOp::Forward ? bias.data : nullptr;
  launch(at, kernel_for(at, k, dst.dtype, "depthwise_conv2d"), grid, dst.data,
         static_cast<const void*>(a.data), strides6(a, "depthwise_conv2d"),
         static_cast<const void*>(b.data), strides6(b, "depthwise_conv2d"), bias_data, bias_stride,
         g, n);
}

void CudaBackend::pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
                         const StridedArray& src, const PoolParams& p) {
  const int64_t n = dst.numel();
  if (n == 0) return;
  check_dims(dst, 4, "pool2d");
  check_dims(src, 4, "pool2d");
  OX_ASSERT(dst.is_contiguous(), "pool2d: dst must be contiguous");
  const DeviceContext at = enter(dst);
  const Window2d& w = p.window;
  ConvGeom g = geometry(src.shape, w.kernel_h, w.kernel_w, dst.shape[2], dst.shape[3], w);
  g.divisor = p.divisor;
  g.count_include_pad = p.count_include_pad ? 1 : 0;
  void* index_data = nullptr;
  kernels::ConvKernel k = kernels::kPoolAdaptiveAvg;
  if (op == PoolOp::Max) {
    OX_ASSERT(indices.dtype == kI64 && indices.is_contiguous() && indices.numel() == n,
              "pool2d: Max takes contiguous i64 indices of dst's shape");
    k = kernels::kPoolMax;
    index_data = indices.data;
  } else if (op == PoolOp::Avg) {
    k = kernels::kPoolAvg;
  }
  launch(at, kernel_for(at, k, dst.dtype, "pool2d"), grid_for(n), dst.data, index_data,
         static_cast<const void*>(src.data), strides6(src, "pool2d"), g, n);
}

void CudaBackend::pool2d_backward(PoolOp op, const StridedArray& grad_src,
                                  const StridedArray& grad_dst, const StridedArray& indices,
                                  const PoolParams& p, CheckSite site) {
  const int64_t n = grad_src.numel();
  if (n == 0) return;
  check_dims(grad_src, 4, "pool2d_backward");
  check_dims(grad_dst, 4, "pool2d_backward");
  OX_ASSERT(grad_src.is_contiguous(), "pool2d_backward: grad_src must be contiguous");
  const DeviceContext at = enter(grad_src);
  const Window2d& w = p.window;
  ConvGeom g =
      geometry(grad_src.shape, w.kernel_h, w.kernel_w, grad_dst.shape[2], grad_dst.shape[3], w);
  g.divisor = p.divisor;
  g.count_include_pad = p.count_include_pad ? 1 : 0;
  const DType dt = grad_src.dtype;
  if (op != PoolOp::Max) {
    const auto k =
        op == PoolOp::Avg ? kernels::kPoolAvgBackward : kernels::kPoolAdaptiveAvgBackward;
    launch(at, kernel_for(at, k, dt, "pool2d_backward"), grid_for(n), grad_src.data,
           static_cast<const void*>(grad_dst.data), strides6(grad_dst, "pool2d_backward"), g, n);
    return;
  }
  check_dims(indices, 4, "pool2d_backward");
  OX_ASSERT(indices.dtype == kI64, "pool2d_backward: i64 indices");
  // The accumulator: grad_src itself, or f32 scratch that the last kernel rounds into it.
  const bool half = dt == kF16 || dt == kBF16;
  DeviceBuffer scratch(at, half ? size_t(n) * sizeof(float) : 0);
  DeviceBuffer first_bad(at, sizeof(long long));
  void* acc = half ? scratch.data() : grad_src.data;
  const int64_t planes = g.n * g.c;
  const Strides6 gs = strides6(grad_dst, "pool2d_backward");
  const Strides6 is = strides6(indices, "pool2d_backward");
  long long* bad = first_bad.as<long long>();
  launch(at, kernel_for(at, kernels::kPoolMaxBackwardZero, dt, "pool2d_backward"), grid_for(n), acc,
         n, bad);
  launch(at, kernel_for(at, kernels::kPoolMaxBackward, dt, "pool2d_backward"),
         grid_for(planes, kSequentialThreads), acc, static_cast<const void*>(grad_dst.data), gs,
         static_cast<const void*>(indices.data), is, g, bad, planes);
  const int64_t n_convert = half ? n : 0;
  launch(at, kernel_for(at, kernels::kPoolMaxBackwardFinish, dt, "pool2d_backward"),
         grid_for(std::max<int64_t>(n_convert, 1)), grad_src.data, static_cast<const void*>(acc),
         n_convert, static_cast<const long long*>(bad), static_cast<const void*>(indices.data), is,
         g, check_word(at.device), int32_t(site));
}

}  // namespace ox::cuda::detail
