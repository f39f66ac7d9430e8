// im2col and col2im: the data movement around convolution's GEMM (the op layer multiplies).
// im2col only copies, so any split of its rows over threads gives the same bytes. col2im sums
// overlapping windows; each (n, c) plane is summed by one thread in one fixed order, so its
// result does not depend on the thread count either.

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd/simd.h"
#include "backend/cpu/window.h"

namespace ox::cpu {

namespace {

template <class T>
void im2col_typed(const StridedArray& dst, const StridedArray& src, const Window2d& w) {
  const int64_t C = src.shape[1], H = src.shape[2], W = src.shape[3];
  const int64_t KH = dst.shape[2], KW = dst.shape[3], Ho = dst.shape[4], Wo = dst.shape[5];
  const Strides& ss = src.strides;
  const Strides& ds = dst.strides;
  const T* s = static_cast<const T*>(src.data);
  T* d = static_cast<T*>(dst.data);
  const T zero = convert<T>(0.0f);
  const int64_t rows = src.shape[0] * C * KH * KW;
  // A row is Ho * Wo copies; keep a task at a few elementwise grains' worth of them.
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, Ho * Wo));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t j = r % KW, i = (r / KW) % KH, c = (r / (KW * KH)) % C, n = r / (KW * KH * C);
      const T* plane = s + n * ss[0] + c * ss[1];
      T* out = d + n * ds[0] + c * ds[1] + i * ds[2] + j * ds[3];
      const int64_t iw_off = j * w.dilation_w - w.pad_w;  // input column of output column 0
      const auto [lo, hi] = covered_outputs(iw_off, w.stride_w, W, Wo);
      const bool dense = ds[5] == 1 && ss[3] == 1 && w.stride_w == 1;
      for (int64_t oh = 0; oh < Ho; ++oh) {
        T* orow = out + oh * ds[4];
        const int64_t ih = oh * w.stride_h - w.pad_h + i * w.dilation_h;
        if (ih < 0 || ih >= H) {
          for (int64_t ow = 0; ow < Wo; ++ow) orow[ow * ds[5]] = zero;
          continue;
        }
        const T* irow = plane + ih * ss[2];
        for (int64_t ow = 0; ow < lo; ++ow) orow[ow * ds[5]] = zero;
        if (dense) {
          std::copy(irow + lo + iw_off, irow + hi + iw_off, orow + lo);
        } else {
          for (int64_t ow = lo; ow < hi; ++ow)
            orow[ow * ds[5]] = irow[(ow * w.stride_w + iw_off) * ss[3]];
        }
        for (int64_t ow = hi; ow < Wo; ++ow) orow[ow * ds[5]] = zero;
      }
    }
  });
}

template <class T>
void col2im_typed(const StridedArray& dst, const StridedArray& src, const Window2d& w) {
  using Acc = compute_t<T>;  // 16-bit floats sum in f32, then round once
  const int64_t C = dst.shape[1], H = dst.shape[2], W = dst.shape[3];
  const int64_t KH = src.shape[2], KW = src.shape[3], Ho = src.shape[4], Wo = src.shape[5];
  const Strides& cs = src.strides;
  const T* col = static_cast<const T*>(src.data);
  T* d = static_cast<T*>(dst.data);
  const int64_t planes = dst.shape[0] * C, plane_size = H * W;
  const int64_t work = std::max<int64_t>(1, KH * KW * Ho * Wo + plane_size);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / work);
  parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> scratch(std::is_same_v<Acc, T> ? 0 : size_t(plane_size));
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / C, c = p % C;
      Acc* acc =
          std::is_same_v<Acc, T> ? reinterpret_cast<Acc*>(d + p * plane_size) : scratch.data();
      std::fill(acc, acc + plane_size, Acc(0));
      for (int64_t i = 0; i < KH; ++i) {
        for (int64_t j = 0; j < KW; ++j) {
          const T* crow = col + n * cs[0] + c * cs[1] + i * cs[2] + j * cs[3];
          const int64_t iw_off = j * w.dilation_w - w.pad_w;
          const auto [lo, hi] = covered_outputs(iw_off, w.stride_w, W, Wo);
          for (int64_t oh = 0; oh < Ho; ++oh) {
            const int64_t ih = oh * w.stride_h - w.pad_h + i * w.dilation_h;
            if (ih < 0 || ih >= H) continue;
            Acc* arow = acc + ih * W;
            const T* c_oh = crow + oh * cs[4];
            if (w.stride_w == 1 && cs[5] == 1) {
              for (int64_t ow = lo; ow < hi; ++ow) arow[ow + iw_off] += Acc(c_oh[ow]);
            } else {
              for (int64_t ow = lo; ow < hi; ++ow)
                arow[ow * w.stride_w + iw_off] += Acc(c_oh[ow * cs[5]]);
            }
          }
        }
      }
      if constexpr (!std::is_same_v<Acc, T>) {
        T* out = d + p * plane_size;
        for (int64_t k = 0; k < plane_size; ++k) out[k] = convert<T>(acc[k]);
      }
    }
  });
}

// Depthwise kernels. Each output plane (forward), input plane (input gradient) or weight
// element (weight gradient) is computed by one thread; the kernel taps are the outer loops, so
// the inner loops run along a row and vectorize when the width stride is 1.

// Stride 1, no padding, no dilation: the windows the vector kernels take (simd/conv.cpp).
bool plain_window(const Window2d& w) {
  return w.stride_h == 1 && w.stride_w == 1 && w.pad_h == 0 && w.pad_w == 0 && w.dilation_h == 1 &&
         w.dilation_w == 1;
}

template <class T>
void depthwise_forward(const StridedArray& dst, const StridedArray& x, const StridedArray& wt,
                       const StridedArray& bias, const Window2d& w) {
  using Acc = compute_t<T>;
  const int64_t O = dst.shape[1], Ho = dst.shape[2], Wo = dst.shape[3];
  const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], M = O / C;
  const int64_t KH = wt.shape[2], KW = wt.shape[3], plane_size = Ho * Wo;
  const Strides &xs = x.strides, &ws = wt.strides;
  const T* xd = static_cast<const T*>(x.data);
  const T* wd = static_cast<const T*>(wt.data);
  const T* bd = static_cast<const T*>(bias.data);
  T* d = static_cast<T*>(dst.data);
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, KH * KW * plane_size));
  if constexpr (std::is_same_v<Acc, T>) {
    if (plain_window(w) && xs[3] == 1 && xs[2] == W) {  // the vector kernel, plane by plane
      parallel_for(0, dst.shape[0] * O, grain, [&](int64_t begin, int64_t end) {
        std::vector<T> taps(static_cast<size_t>(KH * KW));
        for (int64_t p = begin; p < end; ++p) {
          const int64_t n = p / O, o = p % O;
          for (int64_t t = 0; t < KH * KW; ++t)
            taps[size_t(t)] = wd[o * ws[0] + (t / KW) * ws[2] + (t % KW) * ws[3]];
          simd::conv_plane(xd + n * xs[0] + (o / M) * xs[1], W, taps.data(), KH, KW,
                           bd ? bd[o * bias.strides[0]] : T(0), d + p * plane_size, Ho, Wo);
        }
      });
      return;
    }
  }
  parallel_for(0, dst.shape[0] * O, grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> scratch(std::is_same_v<Acc, T> ? 0 : size_t(plane_size));
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / O, o = p % O;
      const T* in = xd + n * xs[0] + (o / M) * xs[1];
      Acc* acc =
          std::is_same_v<Acc, T> ? reinterpret_cast<Acc*>(d + p * plane_size) : scratch.data();
      std::fill(acc, acc + plane_size, bd ? Acc(bd[o * bias.strides[0]]) : Acc(0));
      for (int64_t i = 0; i < KH; ++i) {
        for (int64_t j = 0; j < KW; ++j) {
          const Acc tap = Acc(wd[o * ws[0] + i * ws[2] + j * ws[3]]);
          const int64_t iw_off = j * w.dilation_w - w.pad_w;
          const auto [lo, hi] = covered_outputs(iw_off, w.stride_w, W, Wo);
          for (int64_t oh = 0; oh < Ho; ++oh) {
            const int64_t ih = oh * w.stride_h - w.pad_h + i * w.dilation_h;
            if (ih < 0 || ih >= H) continue;
            const T* row = in + ih * xs[2];
            Acc* arow = acc + oh * Wo;
            if (w.stride_w == 1 && xs[3] == 1) {
              for (int64_t ow = lo; ow < hi; ++ow) arow[ow] += tap * Acc(row[ow + iw_off]);
            } else {
              for (int64_t ow = lo; ow < hi; ++ow)
                arow[ow] += tap * Acc(row[(ow * w.stride_w + iw_off) * xs[3]]);
            }
          }
        }
      }
      if constexpr (!std::is_same_v<Acc, T>) {
        T* out = d + p * plane_size;
        for (int64_t k = 0; k < plane_size; ++k) out[k] = convert<T>(acc[k]);
      }
    }
  });
}

template <class T>
void depthwise_input_grad(const StridedArray& dst, const StridedArray& go, const StridedArray& wt,
                          const Window2d& w) {
  using Acc = compute_t<T>;
  const int64_t C = dst.shape[1], H = dst.shape[2], W = dst.shape[3], plane_size = H * W;
  const int64_t O = go.shape[1], Ho = go.shape[2], Wo = go.shape[3], M = O / C;
  const int64_t KH = wt.shape[2], KW = wt.shape[3];
  const Strides &gs = go.strides, &ws = wt.strides;
  const T* gd = static_cast<const T*>(go.data);
  const T* wd = static_cast<const T*>(wt.data);
  T* d = static_cast<T*>(dst.data);
  const int64_t grain = std::max<int64_t>(
      1, kElementwiseGrain / std::max<int64_t>(1, M * KH * KW * Ho * Wo + plane_size));
  parallel_for(0, dst.shape[0] * C, grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> scratch(std::is_same_v<Acc, T> ? 0 : size_t(plane_size));
    for (int64_t p = begin; p < end; ++p) {
      const int64_t n = p / C, c = p % C;
      Acc* acc =
          std::is_same_v<Acc, T> ? reinterpret_cast<Acc*>(d + p * plane_size) : scratch.data();
      std::fill(acc, acc + plane_size, Acc(0));
      for (int64_t o = c * M; o < (c + 1) * M; ++o) {
        const T* gplane = gd + n * gs[0] + o * gs[1];
        for (int64_t i = 0; i < KH; ++i) {
          for (int64_t j = 0; j < KW; ++j) {
            const Acc tap = Acc(wd[o * ws[0] + i * ws[2] + j * ws[3]]);
            const int64_t iw_off = j * w.dilation_w - w.pad_w;
            const auto [lo, hi] = covered_outputs(iw_off, w.stride_w, W, Wo);
            for (int64_t oh = 0; oh < Ho; ++oh) {
              const int64_t ih = oh * w.stride_h - w.pad_h + i * w.dilation_h;
              if (ih < 0 || ih >= H) continue;
              const T* grow = gplane + oh * gs[2];
              Acc* arow = acc + ih * W;
              if (w.stride_w == 1 && gs[3] == 1) {
                for (int64_t ow = lo; ow < hi; ++ow) arow[ow + iw_off] += tap * Acc(grow[ow]);
              } else {
                for (int64_t ow = lo; ow < hi; ++ow)
                  arow[ow * w.stride_w + iw_off] += tap * Acc(grow[ow * gs[3]]);
              }
            }
          }
        }
      }
      if constexpr (!std::is_same_v<Acc, T>) {
        T* out = d + p * plane_size;
        for (int64_t k = 0; k < plane_size; ++k) out[k] = convert<T>(acc[k]);
      }
    }
  });
}

template <class T>
void depthwise_weight_grad(const StridedArray& dst, const StridedArray& go, const StridedArray& x,
                           const Window2d& w) {
  using Acc = compute_t<T>;
  constexpr int64_t kLanes = 8;  // partial sums, combined in one fixed order
  const int64_t O = dst.shape[0], KH = dst.shape[2], KW = dst.shape[3];
  const int64_t N = go.shape[0], Ho = go.shape[2], Wo = go.shape[3];
  const int64_t C = x.shape[1], H = x.shape[2], W = x.shape[3], M = O / C;
  const Strides &gs = go.strides, &xs = x.strides;
  const T* gd = static_cast<const T*>(go.data);
  const T* xd = static_cast<const T*>(x.data);
  T* d = static_cast<T*>(dst.data);
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, KH * KW * N * Ho * Wo));
  if constexpr (std::is_same_v<Acc, T>) {
    if (plain_window(w) && xs[3] == 1 && xs[2] == W && gs[3] == 1 && gs[2] == Wo) {
      parallel_for(0, O, grain, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o)
          simd::conv_plane_weight_grad(gd + o * gs[1], gs[0], xd + (o / M) * xs[1], xs[0], N, W, Ho,
                                       Wo, KH, KW, d + o * KH * KW);
      });
      return;
    }
  }
  parallel_for(0, O, grain, [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      for (int64_t i = 0; i < KH; ++i) {
        for (int64_t j = 0; j < KW; ++j) {
          const int64_t iw_off = j * w.dilation_w - w.pad_w;
          const auto [lo, hi] = covered_outputs(iw_off, w.stride_w, W, Wo);
          // Lane k takes the elements at offset k of each full block of kLanes in a row, `rest`
          // the others (a variable lane index would keep the lanes out of registers).
          Acc lane[kLanes] = {};
          Acc rest = 0;
          for (int64_t n = 0; n < N; ++n) {
            for (int64_t oh = 0; oh < Ho; ++oh) {
              const int64_t ih = oh * w.stride_h - w.pad_h + i * w.dilation_h;
              if (ih < 0 || ih >= H) continue;
              const T* grow = gd + n * gs[0] + o * gs[1] + oh * gs[2];
              const T* xrow = xd + n * xs[0] + (o / M) * xs[1] + ih * xs[2];
              int64_t ow = lo;
              if (w.stride_w == 1 && gs[3] == 1 && xs[3] == 1) {
                for (; ow + kLanes <= hi; ow += kLanes)
                  for (int64_t k = 0; k < kLanes; ++k)
                    lane[k] += Acc(grow[ow + k]) * Acc(xrow[ow + k + iw_off]);
              }
              for (; ow < hi; ++ow)
                rest += Acc(grow[ow * gs[3]]) * Acc(xrow[(ow * w.stride_w + iw_off) * xs[3]]);
            }
          }
          Acc total = rest;
          for (int64_t k = 0; k < kLanes; ++k) total += lane[k];
          d[(o * KH + i) * KW + j] = convert<T>(total);
        }
      }
    }
  });
}

}  // namespace

void depthwise_conv2d(DepthwiseOp op, const StridedArray& dst, const StridedArray& a,
                      const StridedArray& b, const StridedArray& bias, const Window2d& w) {
  if (dst.numel() == 0) return;
  dispatch_floating(dst.dtype, [&]<class T>() {
    switch (op) {
      case DepthwiseOp::Forward:
        return depthwise_forward<T>(dst, a, b, bias, w);
      case DepthwiseOp::InputGrad:
        return depthwise_input_grad<T>(dst, a, b, w);
      case DepthwiseOp::WeightGrad:
        return depthwise_weight_grad<T>(dst, a, b, w);
    }
  });
}

void im2col(const StridedArray& dst, const StridedArray& src, const Window2d& w) {
  if (dst.numel() == 0) return;
  dispatch_floating(dst.dtype, [&]<class T>() { im2col_typed<T>(dst, src, w); });
}

void col2im(const StridedArray& dst, const StridedArray& src, const Window2d& w) {
  if (dst.numel() == 0) return;
  if (src.numel() == 0) {  // nothing lands anywhere: zeros
    cpu::fill(dst, Scalar(0.0));
    return;
  }
  dispatch_floating(dst.dtype, [&]<class T>() { col2im_typed<T>(dst, src, w); });
}

}  // namespace ox::cpu
