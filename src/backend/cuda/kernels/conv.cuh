#pragma once
// The convolution-window and pooling kernels' arithmetic (kernels/conv.cu): window geometry and
// the body each thread runs for one output element, as OX_HOST_DEVICE templates. Plain C++
// outside nvcc, so tests/backend/cuda_conv_test.cpp runs these very bodies on the CPU against
// the CPU backend (src/backend/cpu/conv.cpp, pool.cpp), whose order of accumulation they
// mirror: every result is bitwise the CPU's.
//
// Storage types are ox::Half / ox::BFloat16 for the 16-bit floats (constexpr conversions, so
// usable on the device), which accumulate in f32 and round once, as the CPU backend does.
// Products go through mul(), which the device does not fuse into an FMA (the CPU backend, built
// for baseline x86-64, does not either).

#include <cstdint>
#include <limits>
#include <type_traits>

#include "backend/cuda/kernels/rounding.cuh"
#include "core/host_device.h"
#include "oxmera/core/half.h"

#ifdef __CUDACC__
#define OX_CONV_UNROLL _Pragma("unroll")
#else
#define OX_CONV_UNROLL
#endif

namespace ox::cuda::kernels {

// The kernels of conv.cu, each instantiated per floating dtype as "ox_conv_<row>_<dtype>".
enum ConvKernel : int {
  kIm2col,
  kCol2im,
  kDepthwiseForward,
  kDepthwiseInputGrad,
  kDepthwiseWeightGrad,
  kPoolMax,
  kPoolAvg,
  kPoolAdaptiveAvg,
  kPoolAvgBackward,
  kPoolAdaptiveAvgBackward,
  kPoolMaxBackwardZero,
  kPoolMaxBackward,
  kPoolMaxBackwardFinish,
  kConvKernelCount
};
inline constexpr const char* kConvKernelRows[kConvKernelCount] = {
    "im2col",
    "col2im",
    "depthwise_forward",
    "depthwise_input_grad",
    "depthwise_weight_grad",
    "pool_max",
    "pool_avg",
    "pool_adaptive_avg",
    "pool_avg_backward",
    "pool_adaptive_avg_backward",
    "pool_max_backward_zero",
    "pool_max_backward",
    "pool_max_backward_finish",
};

// PoolOp's values (backend.h; conv.cpp checks they match).
inline constexpr int kMax = 0, kAvg = 1, kAdaptiveAvg = 2;

// The sizes of one call, and Window2d's fields. Which sizes a kernel reads is said at its body.
struct ConvGeom {
  int64_t n = 0, c = 0, h = 0, w = 0;  // input planes [N, C, H, W] (depthwise: C input channels)
  int64_t m = 1;                       // depthwise: output channels per input channel
  int64_t kh = 1, kw = 1;              // window extent (conv: from the arrays' shapes)
  int64_t ho = 0, wo = 0;              // output extent
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1;
  int64_t divisor = 0;            // Avg: PoolParams::divisor
  int64_t count_include_pad = 1;  // Avg: PoolParams::count_include_pad
};

// An array's strides in elements (the first ndim used).
struct Strides6 {
  int64_t v[6] = {};
};

template <class T>
struct Accum {
  using type = T;
};
template <>
struct Accum<ox::Half> {
  using type = float;
};
template <>
struct Accum<ox::BFloat16> {
  using type = float;
};
template <class T>
using acc_t = typename Accum<T>::type;

template <class T>
OX_HOST_DEVICE inline acc_t<T> to_acc(T v) {
  return static_cast<acc_t<T>>(v);
}
template <class T>
OX_HOST_DEVICE inline T from_acc(acc_t<T> v) {
  return T(v);
}

// a * b rounded, never fused with a following addition (rounding.cuh).
using rn::mul;

// ---- Geometry -------------------------------------------------------------------------------

struct Range {
  int64_t lo, hi;  // [lo, hi)
};

OX_HOST_DEVICE inline int64_t floor_div(int64_t a, int64_t b) {  // b > 0
  const int64_t q = a / b;
  return q - (a % b != 0 && a < 0);
}

// The steps t in [0, count) whose coordinate start + t * step (step > 0) lies in [0, n): the
// CPU backend's covered_outputs (cpu/window.h).
OX_HOST_DEVICE inline Range covered_steps(int64_t start, int64_t step, int64_t n, int64_t count) {
  const int64_t lo = start >= 0 ? 0 : ceil_div(-start, step);
  const int64_t hi = n - start <= 0 ? 0 : ceil_div(n - start, step);
  const int64_t l = lo < count ? lo : count;
  return {l, hi < l ? l : (hi > count ? count : hi)};
}

// The output position whose window tap k (of stride, pad, dilation) reads input position p,
// or -1 when none of [0, n_out) does. At most one does: o * stride = p + pad - k * dilation.
// The numerator is tested for sign before `%` (C++ truncates toward zero).
OX_HOST_DEVICE inline int64_t output_of_tap(int64_t p, int64_t k, int64_t stride, int64_t pad,
                                            int64_t dilation, int64_t n_out) {
  const int64_t num = p + pad - k * dilation;
  if (num < 0 || num % stride != 0) return -1;
  const int64_t o = num / stride;
  return o < n_out ? o : -1;
}

// The input extent of output position o of a pool (the CPU backend's Span, cpu/pool.cpp): Max
// reads window steps [lo, hi) of input start + step * dilation; Avg / AdaptiveAvg sum input
// positions [lo, hi), and `padded` counts the positions padding adds when it counts.
struct Span {
  int64_t start, lo, hi, padded;
};
OX_HOST_DEVICE inline Span pool_span(int op, int64_t o, int64_t n_out, int64_t n_in, int64_t kernel,
                                     int64_t stride, int64_t pad, int64_t dilation) {
  Span s{0, 0, 0, 0};
  if (op == kAdaptiveAvg) {
    s.lo = o * n_in / n_out;
    s.hi = ((o + 1) * n_in + n_out - 1) / n_out;
    s.padded = s.hi - s.lo;
  } else if (op == kMax) {
    s.start = o * stride - pad;
    const Range r = covered_steps(s.start, dilation, n_in, kernel);
    s.lo = r.lo;
    s.hi = r.hi;
  } else {
    const int64_t begin = o * stride - pad;
    const int64_t room = n_in + pad - begin;
    const int64_t end = begin + (kernel < room ? kernel : room);
    s.padded = end - begin;
    s.lo = begin > 0 ? begin : 0;
    const int64_t hi = end < n_in ? end : n_in;
    s.hi = hi > s.lo ? hi : s.lo;
  }
  return s;
}

// What an Avg / AdaptiveAvg output divides its sum by (in f64, as the CPU backend).
OX_HOST_DEVICE inline double pool_divisor(int op, const ConvGeom& g, const Span& r, const Span& c) {
  if (op == kAvg && g.divisor != 0) return double(g.divisor);
  if (op == kAvg && g.count_include_pad) return double(r.padded) * double(c.padded);
  return double(r.hi - r.lo) * double(c.hi - c.lo);
}

// The outputs o in [0, n_out) whose Avg / AdaptiveAvg span may hold input position p: a
// superset (a caller tests p against pool_span). Avg: the span lies in the window [o * stride -
// pad, + kernel). AdaptiveAvg: hi(o) > p iff o >= floor(p * n_out / n_in), lo(o) <= p iff o <
// ceil((p + 1) * n_out / n_in).
OX_HOST_DEVICE inline Range pool_outputs_covering(int op, int64_t p, int64_t n_in, int64_t n_out,
                                                  int64_t kernel, int64_t stride, int64_t pad) {
  int64_t lo, hi;
  if (op == kAdaptiveAvg) {
    lo = p * n_out / n_in;
    hi = ceil_div((p + 1) * n_out, n_in);
  } else {
    lo = floor_div(p + pad - kernel, stride) + 1;
    hi = floor_div(p + pad, stride) + 1;
  }
  lo = lo > 0 ? lo : 0;
  hi = hi < n_out ? hi : n_out;
  return {lo, hi > lo ? hi : lo};
}

// ---- Element bodies ---------------------------------------------------------------------------

// im2col: element i (row-major) of dst [N, C, kh, kw, Ho, Wo] (strides ds) from src [N, C, H,
// W] (strides ss), 0 in padding.
template <class T>
OX_HOST_DEVICE inline void im2col_at(T* dst, const Strides6& ds, const T* src, const Strides6& ss,
                                     const ConvGeom& g, int64_t i) {
  int64_t r = i;
  const int64_t ow = r % g.wo;
  r /= g.wo;
  const int64_t oh = r % g.ho;
  r /= g.ho;
  const int64_t j = r % g.kw;
  r /= g.kw;
  const int64_t k = r % g.kh;
  r /= g.kh;
  const int64_t c = r % g.c, n = r / g.c;
  const int64_t ih = oh * g.sh - g.ph + k * g.dh, iw = ow * g.sw - g.pw + j * g.dw;
  T v = from_acc<T>(acc_t<T>(0));
  if (ih >= 0 && ih < g.h && iw >= 0 && iw < g.w)
    v = src[n * ss.v[0] + c * ss.v[1] + ih * ss.v[2] + iw * ss.v[3]];
  dst[n * ds.v[0] + c * ds.v[1] + k * ds.v[2] + j * ds.v[3] + oh * ds.v[4] + ow * ds.v[5]] = v;
}

// col2im: element i of contiguous dst [N, C, H, W] = the sum of the src [N, C, kh, kw, Ho, Wo]
// (strides cs) elements whose window tap reads it, in the order of the taps (k, j): the CPU
// backend's order (it runs the taps outermost; each tap reaches a position once at most).
template <class T>
OX_HOST_DEVICE inline void col2im_at(T* dst, const T* src, const Strides6& cs, const ConvGeom& g,
                                     int64_t i) {
  using Acc = acc_t<T>;
  const int64_t iw = i % g.w, ih = (i / g.w) % g.h, c = (i / (g.w * g.h)) % g.c;
  const int64_t n = i / (g.w * g.h * g.c);
  const T* plane = src + n * cs.v[0] + c * cs.v[1];
  Acc acc = 0;
  for (int64_t k = 0; k < g.kh; ++k) {
    const int64_t oh = output_of_tap(ih, k, g.sh, g.ph, g.dh, g.ho);
    if (oh < 0) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t ow = output_of_tap(iw, j, g.sw, g.pw, g.dw, g.wo);
      if (ow < 0) continue;
      acc += to_acc(plane[k * cs.v[2] + j * cs.v[3] + oh * cs.v[4] + ow * cs.v[5]]);
    }
  }
  dst[i] = from_acc<T>(acc);
}

// Depthwise forward: element i of contiguous dst [N, C * M, Ho, Wo] from x [N, C, H, W] (xs),
// weight [C * M, 1, kh, kw] (ws) and bias [C * M] (null: none): bias, then the taps in order.
template <class T>
OX_HOST_DEVICE inline void depthwise_forward_at(T* dst, const T* x, const Strides6& xs, const T* wt,
                                                const Strides6& ws, const T* bias,
                                                int64_t bias_stride, const ConvGeom& g, int64_t i) {
  using Acc = acc_t<T>;
  const int64_t O = g.c * g.m;
  const int64_t ow = i % g.wo, oh = (i / g.wo) % g.ho, o = (i / (g.wo * g.ho)) % O;
  const int64_t n = i / (g.wo * g.ho * O);
  const T* in = x + n * xs.v[0] + (o / g.m) * xs.v[1];
  Acc acc = bias != nullptr ? to_acc(bias[o * bias_stride]) : Acc(0);
  for (int64_t k = 0; k < g.kh; ++k) {
    const int64_t ih = oh * g.sh - g.ph + k * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t iw = ow * g.sw - g.pw + j * g.dw;
      if (iw < 0 || iw >= g.w) continue;
      const Acc tap = to_acc(wt[o * ws.v[0] + k * ws.v[2] + j * ws.v[3]]);
      acc += mul(tap, to_acc(in[ih * xs.v[2] + iw * xs.v[3]]));
    }
  }
  dst[i] = from_acc<T>(acc);
}

// Depthwise input gradient: element i of contiguous dst [N, C, H, W] from grad_output [N, C * M,
// Ho, Wo] (gs) and weight (ws): over the channel's M outputs, then the taps, in order.
template <class T>
OX_HOST_DEVICE inline void depthwise_input_grad_at(T* dst, const T* go, const Strides6& gs,
                                                   const T* wt, const Strides6& ws,
                                                   const ConvGeom& g, int64_t i) {
  using Acc = acc_t<T>;
  const int64_t iw = i % g.w, ih = (i / g.w) % g.h, c = (i / (g.w * g.h)) % g.c;
  const int64_t n = i / (g.w * g.h * g.c);
  Acc acc = 0;
  for (int64_t o = c * g.m; o < (c + 1) * g.m; ++o) {
    const T* plane = go + n * gs.v[0] + o * gs.v[1];
    for (int64_t k = 0; k < g.kh; ++k) {
      const int64_t oh = output_of_tap(ih, k, g.sh, g.ph, g.dh, g.ho);
      if (oh < 0) continue;
      for (int64_t j = 0; j < g.kw; ++j) {
        const int64_t ow = output_of_tap(iw, j, g.sw, g.pw, g.dw, g.wo);
        if (ow < 0) continue;
        const Acc tap = to_acc(wt[o * ws.v[0] + k * ws.v[2] + j * ws.v[3]]);
        acc += mul(tap, to_acc(plane[oh * gs.v[2] + ow * gs.v[3]]));
      }
    }
  }
  dst[i] = from_acc<T>(acc);
}

// Depthwise weight gradient: element i of contiguous dst [C * M, 1, kh, kw] from grad_output
// (gs) and x (xs), summed over (n, oh, ow) by one thread exactly as the CPU backend: with unit
// width strides, 8 lanes take the elements at offset k of each full block of 8 in a row, `rest`
// the others; then rest + lane 0 + ... + lane 7.
template <class T>
OX_HOST_DEVICE inline void depthwise_weight_grad_at(T* dst, const T* go, const Strides6& gs,
                                                    const T* x, const Strides6& xs,
                                                    const ConvGeom& g, int64_t i) {
  using Acc = acc_t<T>;
  constexpr int kLanes = 8;
  const int64_t j = i % g.kw, k = (i / g.kw) % g.kh, o = i / (g.kw * g.kh);
  const int64_t iw_off = j * g.dw - g.pw;
  const Range cols = covered_steps(iw_off, g.sw, g.w, g.wo);
  const bool lanes = g.sw == 1 && gs.v[3] == 1 && xs.v[3] == 1;
  Acc lane[kLanes];
  OX_CONV_UNROLL
  for (int l = 0; l < kLanes; ++l) lane[l] = Acc(0);
  Acc rest = 0;
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oh = 0; oh < g.ho; ++oh) {
      const int64_t ih = oh * g.sh - g.ph + k * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      const T* grow = go + n * gs.v[0] + o * gs.v[1] + oh * gs.v[2];
      const T* xrow = x + n * xs.v[0] + (o / g.m) * xs.v[1] + ih * xs.v[2];
      int64_t ow = cols.lo;
      if (lanes) {
        for (; ow + kLanes <= cols.hi; ow += kLanes) {
          OX_CONV_UNROLL
          for (int l = 0; l < kLanes; ++l)
            lane[l] += mul(to_acc(grow[ow + l]), to_acc(xrow[ow + l + iw_off]));
        }
      }
      for (; ow < cols.hi; ++ow)
        rest += mul(to_acc(grow[ow * gs.v[3]]), to_acc(xrow[(ow * g.sw + iw_off) * xs.v[3]]));
    }
  }
  Acc total = rest;
  OX_CONV_UNROLL
  for (int l = 0; l < kLanes; ++l) total += lane[l];
  dst[i] = from_acc<T>(total);
}

// Pool forward (OP: kMax, kAvg, kAdaptiveAvg): element i of contiguous dst [N, C, Ho, Wo] from
// src [N, C, H, W] (ss); Max also writes indices[i]. Max: the first maximum, a NaN takes over
// from anything (the last NaN wins), -inf and -1 for a window without input elements; Avg: the
// sum in row-major order divided as pool_divisor says, 0 for an empty window.
template <class T, int OP>
OX_HOST_DEVICE inline void pool_forward_at(T* dst, int64_t* indices, const T* src,
                                           const Strides6& ss, const ConvGeom& g, int64_t i) {
  using Acc = acc_t<T>;
  const int64_t ow = i % g.wo, oh = (i / g.wo) % g.ho, plane = i / (g.wo * g.ho);
  const T* in = src + (plane / g.c) * ss.v[0] + (plane % g.c) * ss.v[1];
  const Span rs = pool_span(OP, oh, g.ho, g.h, g.kh, g.sh, g.ph, g.dh);
  const Span cs = pool_span(OP, ow, g.wo, g.w, g.kw, g.sw, g.pw, g.dw);
  const bool empty = rs.lo >= rs.hi || cs.lo >= cs.hi;
  if constexpr (OP == kMax) {
    Acc best = -std::numeric_limits<Acc>::infinity();
    int64_t best_index = empty ? -1 : (rs.start + rs.lo * g.dh) * g.w + cs.start + cs.lo * g.dw;
    for (int64_t a = rs.lo; a < rs.hi; ++a) {
      const int64_t ih = rs.start + a * g.dh;
      for (int64_t b = cs.lo; b < cs.hi; ++b) {
        const int64_t iw = cs.start + b * g.dw;
        const Acc v = to_acc(in[ih * ss.v[2] + iw * ss.v[3]]);
        if (v > best || v != v) {
          best = v;
          best_index = ih * g.w + iw;
        }
      }
    }
    dst[i] = from_acc<T>(best);
    indices[i] = best_index;
  } else {
    Acc sum = 0;
    for (int64_t ih = rs.lo; ih < rs.hi; ++ih)
      for (int64_t iw = cs.lo; iw < cs.hi; ++iw) sum += to_acc(in[ih * ss.v[2] + iw * ss.v[3]]);
    dst[i] = from_acc<T>(empty ? Acc(0) : Acc(sum / Acc(pool_divisor(OP, g, rs, cs))));
  }
}

// Avg / AdaptiveAvg backward: element i of contiguous grad_src [N, C, H, W] = the sum of
// grad_dst [N, C, Ho, Wo] (gs) / divisor over the windows holding it, in row-major order of the
// windows (the CPU backend's order).
template <class T, int OP>
OX_HOST_DEVICE inline void pool_avg_backward_at(T* grad_src, const T* gd, const Strides6& gs,
                                                const ConvGeom& g, int64_t i) {
  using Acc = acc_t<T>;
  const int64_t iw = i % g.w, ih = (i / g.w) % g.h, plane = i / (g.w * g.h);
  const T* gplane = gd + (plane / g.c) * gs.v[0] + (plane % g.c) * gs.v[1];
  const Range rows = pool_outputs_covering(OP, ih, g.h, g.ho, g.kh, g.sh, g.ph);
  const Range cols = pool_outputs_covering(OP, iw, g.w, g.wo, g.kw, g.sw, g.pw);
  Acc acc = 0;
  for (int64_t oh = rows.lo; oh < rows.hi; ++oh) {
    const Span rs = pool_span(OP, oh, g.ho, g.h, g.kh, g.sh, g.ph, g.dh);
    if (ih < rs.lo || ih >= rs.hi) continue;
    for (int64_t ow = cols.lo; ow < cols.hi; ++ow) {
      const Span cs = pool_span(OP, ow, g.wo, g.w, g.kw, g.sw, g.pw, g.dw);
      if (iw < cs.lo || iw >= cs.hi) continue;
      acc += Acc(to_acc(gplane[oh * gs.v[2] + ow * gs.v[3]]) / Acc(pool_divisor(OP, g, rs, cs)));
    }
  }
  grad_src[i] = from_acc<T>(acc);
}

// Max backward, plane p of [N, C]: adds grad_dst (gs) into acc's contiguous plane p ([H, W], the
// accumulator: zeroed before) through indices (is) in row-major order of the outputs, skipping
// -1; returns the row-major position in indices of the plane's first index outside [-1, H * W),
// or -1.
template <class T>
OX_HOST_DEVICE inline int64_t pool_max_backward_plane(acc_t<T>* acc, const T* gd,
                                                      const Strides6& gs, const int64_t* idx,
                                                      const Strides6& is, const ConvGeom& g,
                                                      int64_t p) {
  const int64_t n = p / g.c, c = p % g.c, plane_size = g.h * g.w;
  const T* gplane = gd + n * gs.v[0] + c * gs.v[1];
  const int64_t* iplane = idx + n * is.v[0] + c * is.v[1];
  acc_t<T>* out = acc + p * plane_size;
  int64_t bad = -1;
  for (int64_t oh = 0; oh < g.ho; ++oh) {
    for (int64_t ow = 0; ow < g.wo; ++ow) {
      const int64_t k = iplane[oh * is.v[2] + ow * is.v[3]];
      if (k >= 0 && k < plane_size) {
        out[k] += to_acc(gplane[oh * gs.v[2] + ow * gs.v[3]]);
      } else if (k != -1 && bad < 0) {
        bad = (p * g.ho + oh) * g.wo + ow;
      }
    }
  }
  return bad;
}

// The offset in indices [N, C, Ho, Wo] (is) of row-major position `position`.
OX_HOST_DEVICE inline int64_t pool_index_offset(int64_t position, const Strides6& is,
                                                const ConvGeom& g) {
  const int64_t ow = position % g.wo, oh = (position / g.wo) % g.ho;
  const int64_t c = (position / (g.wo * g.ho)) % g.c, n = position / (g.wo * g.ho * g.c);
  return n * is.v[0] + c * is.v[1] + oh * is.v[2] + ow * is.v[3];
}

}  // namespace ox::cuda::kernels
