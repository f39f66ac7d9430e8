// Direct convolution of one input plane (the depthwise kernels' and a single input channel's
// path, backend/cpu/conv.cpp) at stride 1 without padding or dilation: vectors run along an
// output row, each tap a multiply-add of a shifted row of the input, so the output is written
// once, in place. Compiled once per Highway target.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/simd/conv.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format off: foreach_target.h must come first
#include "hwy/highway.h"
// clang-format on

#include <algorithm>

#include "backend/cpu/simd/simd.h"

HWY_BEFORE_NAMESPACE();
namespace ox::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Taps whose accumulators (weight gradient) or weights (forward) a pass keeps in registers.
constexpr int64_t kTapBlock = 9;

// Output vectors a block computes at once: two rows by four positions along them, eight
// independent chains of multiply-adds (one chain alone waits on each add's latency).
constexpr int kBlockRows = 2, kBlockCols = 4;

// out[oh][ow] = bias + sum over taps of w[i][j] x[oh + i][ow + j], taps in row-major order. A
// row is covered by vectors at 0, N, 2N, ... and a last one ending at the row's end, overlapping
// the one before: the overlapped outputs are computed twice, identically. Blocks short of rows
// or positions repeat their last one, to the same effect.
template <class D, class T>
void ConvPlaneBlocks(D d, const T* x, int64_t W, const T* w, int64_t taps, int64_t KW, T bias,
                     T* out, int64_t Ho, int64_t Wo) {
  const int64_t N = int64_t(hn::Lanes(d)), positions = (Wo + N - 1) / N;
  const auto start = [&](int64_t q) { return std::min(q * N, Wo - N); };
  for (int64_t oh0 = 0; oh0 < Ho; oh0 += kBlockRows) {
    int64_t rows[kBlockRows];
    for (int r = 0; r < kBlockRows; ++r) rows[r] = std::min(oh0 + r, Ho - 1);
    for (int64_t q0 = 0; q0 < positions; q0 += kBlockCols) {
      int64_t cols[kBlockCols];
      for (int q = 0; q < kBlockCols; ++q) cols[q] = start(std::min(q0 + q, positions - 1));
      hn::Vec<D> acc[kBlockRows][kBlockCols];
      for (int r = 0; r < kBlockRows; ++r)
        for (int q = 0; q < kBlockCols; ++q) acc[r][q] = hn::Set(d, bias);
      for (int64_t t = 0; t < taps; ++t) {
        const auto wt = hn::Set(d, w[t]);
        const int64_t shift = (t / KW) * W + t % KW;
        for (int r = 0; r < kBlockRows; ++r)
          for (int q = 0; q < kBlockCols; ++q)
            acc[r][q] = hn::MulAdd(wt, hn::LoadU(d, x + rows[r] * W + shift + cols[q]), acc[r][q]);
      }
      for (int r = 0; r < kBlockRows; ++r)
        for (int q = 0; q < kBlockCols; ++q) hn::StoreU(acc[r][q], d, out + rows[r] * Wo + cols[q]);
    }
  }
}

template <class T>
void ConvPlane(const T* x, int64_t W, const T* w, int64_t KH, int64_t KW, T bias, T* out,
               int64_t Ho, int64_t Wo) {
  const hn::ScalableTag<T> d;
  if (Wo >= int64_t(hn::Lanes(d)))
    return ConvPlaneBlocks(d, x, W, w, KH * KW, KW, bias, out, Ho, Wo);
  ConvPlaneBlocks(hn::CappedTag<T, 1>(), x, W, w, KH * KW, KW, bias, out, Ho, Wo);
}
void ConvPlaneF32(const float* x, int64_t W, const float* w, int64_t KH, int64_t KW, float bias,
                  float* out, int64_t Ho, int64_t Wo) {
  ConvPlane(x, W, w, KH, KW, bias, out, Ho, Wo);
}
void ConvPlaneF64(const double* x, int64_t W, const double* w, int64_t KH, int64_t KW, double bias,
                  double* out, int64_t Ho, int64_t Wo) {
  ConvPlane(x, W, w, KH, KW, bias, out, Ho, Wo);
}

// grad[t] = sum over images n, rows oh and columns ow of go[n][oh][ow] x[n][oh + i][ow + j]:
// per tap a vector of lanes along the row and a one-lane accumulator for the row's elements past
// its last full vector, each summed in (n, oh, ow) order, then reduced in one fixed order. Taps
// go in blocks of kTapBlock (a short block repeats its last tap and drops the copies), so that
// the block's accumulators stay in registers as independent chains of multiply-adds.
template <class T>
void ConvPlaneWeightGrad(const T* go, int64_t go_image, const T* x, int64_t x_image, int64_t images,
                         int64_t W, int64_t Ho, int64_t Wo, int64_t KH, int64_t KW, T* grad) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t taps = KH * KW, full = Wo / N * N;
  for (int64_t t0 = 0; t0 < taps; t0 += kTapBlock) {
    const int64_t nt = std::min(kTapBlock, taps - t0);
    hn::Vec<decltype(d)> acc[kTapBlock];
    hn::Vec<decltype(d1)> rest[kTapBlock];
    int64_t offset[kTapBlock];
    for (int64_t k = 0; k < kTapBlock; ++k) {
      acc[k] = hn::Zero(d);
      rest[k] = hn::Zero(d1);
      const int64_t t = t0 + std::min(k, nt - 1);
      offset[k] = (t / KW) * W + t % KW;
    }
    for (int64_t n = 0; n < images; ++n) {
      for (int64_t oh = 0; oh < Ho; ++oh) {
        const T* grow = go + n * go_image + oh * Wo;
        const T* xrow = x + n * x_image + oh * W;
        for (int64_t ow = 0; ow < full; ow += N) {
          const auto g = hn::LoadU(d, grow + ow);
          for (int64_t k = 0; k < kTapBlock; ++k)
            acc[k] = hn::MulAdd(g, hn::LoadU(d, xrow + offset[k] + ow), acc[k]);
        }
        for (int64_t ow = full; ow < Wo; ++ow) {
          const auto g = hn::LoadU(d1, grow + ow);
          for (int64_t k = 0; k < kTapBlock; ++k)
            rest[k] = hn::MulAdd(g, hn::LoadU(d1, xrow + offset[k] + ow), rest[k]);
        }
      }
    }
    for (int64_t k = 0; k < nt; ++k)
      grad[t0 + k] = hn::GetLane(hn::SumOfLanes(d, acc[k])) + hn::GetLane(rest[k]);
  }
}
void ConvPlaneWeightGradF32(const float* go, int64_t go_image, const float* x, int64_t x_image,
                            int64_t images, int64_t W, int64_t Ho, int64_t Wo, int64_t KH,
                            int64_t KW, float* grad) {
  ConvPlaneWeightGrad(go, go_image, x, x_image, images, W, Ho, Wo, KH, KW, grad);
}
void ConvPlaneWeightGradF64(const double* go, int64_t go_image, const double* x, int64_t x_image,
                            int64_t images, int64_t W, int64_t Ho, int64_t Wo, int64_t KH,
                            int64_t KW, double* grad) {
  ConvPlaneWeightGrad(go, go_image, x, x_image, images, W, Ho, Wo, KH, KW, grad);
}

}  // namespace HWY_NAMESPACE
}  // namespace ox::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ox::cpu::simd {

HWY_EXPORT(ConvPlaneF32);
HWY_EXPORT(ConvPlaneF64);
HWY_EXPORT(ConvPlaneWeightGradF32);
HWY_EXPORT(ConvPlaneWeightGradF64);

void conv_plane(const float* x, int64_t W, const float* w, int64_t KH, int64_t KW, float bias,
                float* out, int64_t Ho, int64_t Wo) {
  HWY_DYNAMIC_DISPATCH(ConvPlaneF32)(x, W, w, KH, KW, bias, out, Ho, Wo);
}
void conv_plane(const double* x, int64_t W, const double* w, int64_t KH, int64_t KW, double bias,
                double* out, int64_t Ho, int64_t Wo) {
  HWY_DYNAMIC_DISPATCH(ConvPlaneF64)(x, W, w, KH, KW, bias, out, Ho, Wo);
}
void conv_plane_weight_grad(const float* go, int64_t go_image, const float* x, int64_t x_image,
                            int64_t images, int64_t W, int64_t Ho, int64_t Wo, int64_t KH,
                            int64_t KW, float* grad) {
  HWY_DYNAMIC_DISPATCH(ConvPlaneWeightGradF32)
  (go, go_image, x, x_image, images, W, Ho, Wo, KH, KW, grad);
}
void conv_plane_weight_grad(const double* go, int64_t go_image, const double* x, int64_t x_image,
                            int64_t images, int64_t W, int64_t Ho, int64_t Wo, int64_t KH,
                            int64_t KW, double* grad) {
  HWY_DYNAMIC_DISPATCH(ConvPlaneWeightGradF64)
  (go, go_image, x, x_image, images, W, Ho, Wo, KH, KW, grad);
}

}  // namespace ox::cpu::simd
#endif  // HWY_ONCE
