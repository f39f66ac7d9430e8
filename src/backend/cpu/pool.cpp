// 2-d pooling over [N, C, H, W]: max (with indices), average, adaptive average, and their
// backward passes. Forward rows only read, so they split over threads freely; a backward pass
// sums overlapping windows, so each (n, c) plane is summed by one thread in one fixed order
// (no atomics): results do not depend on the thread count. The window bounds of every output
// row and column are computed once per call, so the element loops hold no division.

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/window.h"

namespace ox::cpu {

namespace {

// The input extent of an output row (or column): Max reads the window steps [lo, hi) starting
// at `start`; Avg / AdaptiveAvg sum input positions [lo, hi) and count `padded` positions when
// padding counts (PyTorch: padding counts, what ceil_mode adds past it does not).
struct Span {
  int64_t start, lo, hi, padded;
};

std::vector<Span> spans(PoolOp op, int64_t n_out, int64_t n_in, int64_t kernel, int64_t stride,
                        int64_t pad, int64_t dilation) {
  std::vector<Span> out(static_cast<size_t>(n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    Span& s = out[size_t(o)];
    if (op == PoolOp::AdaptiveAvg) {
      s.lo = o * n_in / n_out;
      s.hi = ((o + 1) * n_in + n_out - 1) / n_out;
      s.padded = s.hi - s.lo;
    } else if (op == PoolOp::Max) {
      s.start = o * stride - pad;
      const auto [lo, hi] = covered_outputs(s.start, dilation, n_in, kernel);
      s.lo = lo, s.hi = hi;
    } else {
      const int64_t begin = o * stride - pad, end = begin + std::min(kernel, n_in + pad - begin);
      s.padded = end - begin;
      s.lo = std::max<int64_t>(begin, 0);
      s.hi = std::max(std::min(end, n_in), s.lo);
    }
  }
  return out;
}

struct Spans {
  std::vector<Span> rows, cols;
};

Spans spans_of(PoolOp op, const PoolParams& p, int64_t H, int64_t W, int64_t Ho, int64_t Wo) {
  const Window2d& w = p.window;
  return {spans(op, Ho, H, w.kernel_h, w.stride_h, w.pad_h, w.dilation_h),
          spans(op, Wo, W, w.kernel_w, w.stride_w, w.pad_w, w.dilation_w)};
}

// take ? a : b through bit masks: GCC turns a plain ?: on floats back into a branch, and a
// max over random data mispredicts every other compare.
template <class V>
inline V select(bool take, V a, V b) {
  using U = std::conditional_t<sizeof(V) == 4, uint32_t, uint64_t>;
  const U mask = U(0) - U(take);
  return std::bit_cast<V>(U((std::bit_cast<U>(a) & mask) | (std::bit_cast<U>(b) & ~mask)));
}

// What an Avg / AdaptiveAvg output divides its sum by.
inline double divisor(PoolOp op, const PoolParams& p, const Span& r, const Span& c) {
  if (op == PoolOp::Avg && p.divisor != 0) return double(p.divisor);
  if (op == PoolOp::Avg && p.count_include_pad) return double(r.padded) * double(c.padded);
  return double(r.hi - r.lo) * double(c.hi - c.lo);
}

// One output row of a 2x2, stride-2 max pool from input rows `top` and `top + row_stride`, by
// the general loop's rule (first maximum, a NaN takes over) unrolled: no spans, no -inf start
// (the first element decides the same way).
template <class T, class Acc>
inline void max_pairs(const T* top, int64_t row_stride, int64_t top_index, int64_t W, int64_t Wo,
                      T* out, int64_t* out_index) {
  const T* bottom = top + row_stride;
  for (int64_t ow = 0; ow < Wo; ++ow) {
    const int64_t c = 2 * ow;
    Acc best = Acc(top[c]);
    int64_t index = top_index + c;
    const auto consider = [&](Acc v, int64_t at) {
      const bool take = (v > best) | (v != v);
      best = select(take, v, best);
      index = select(take, at, index);
    };
    consider(Acc(top[c + 1]), top_index + c + 1);
    consider(Acc(bottom[c]), top_index + W + c);
    consider(Acc(bottom[c + 1]), top_index + W + c + 1);
    out[ow] = convert<T>(best);
    out_index[ow] = index;
  }
}

template <class T, PoolOp OP>
void pool_forward(const StridedArray& dst, const StridedArray& indices, const StridedArray& src,
                  const PoolParams& p) {
  using Acc = compute_t<T>;
  const int64_t C = src.shape[1], H = src.shape[2], W = src.shape[3];
  const int64_t Ho = dst.shape[2], Wo = dst.shape[3];
  const Strides& ss = src.strides;
  const T* s = static_cast<const T*>(src.data);
  T* d = static_cast<T*>(dst.data);
  const Window2d& w = p.window;
  const Spans sp = spans_of(OP, p, H, W, Ho, Wo);
  const int64_t rows = src.shape[0] * C * Ho;
  const int64_t window =
      OP == PoolOp::AdaptiveAvg
          ? (H / std::max<int64_t>(Ho, 1) + 1) * (W / std::max<int64_t>(Wo, 1) + 1)
          : std::min(w.kernel_h, H) * std::min(w.kernel_w, W);
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, Wo * window));
  // MaxPool2d(2), the usual layer: 2x2 windows that tile the input.
  const bool pairs = OP == PoolOp::Max && w.kernel_h == 2 && w.kernel_w == 2 && w.stride_h == 2 &&
                     w.stride_w == 2 && w.pad_h == 0 && w.pad_w == 0 && w.dilation_h == 1 &&
                     w.dilation_w == 1 && ss[3] == 1 && 2 * Ho <= H && 2 * Wo <= W;
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t oh = r % Ho, plane = r / Ho;
      const T* in = s + (plane / C) * ss[0] + (plane % C) * ss[1];
      T* orow = d + r * Wo;
      const Span& rs = sp.rows[size_t(oh)];
      if constexpr (OP == PoolOp::Max) {
        int64_t* irow = static_cast<int64_t*>(indices.data) + r * Wo;
        const int64_t dh = w.dilation_h, dw = w.dilation_w, sw = ss[3];
        if (pairs) {
          max_pairs<T, Acc>(in + 2 * oh * ss[2], ss[2], 2 * oh * W, W, Wo, orow, irow);
          continue;
        }
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const Span& cs = sp.cols[size_t(ow)];
          // PyTorch's CPU rule: the first maximum; a NaN takes over from anything (so the last
          // NaN wins); an all -inf window points at its first element. Bitwise `|` and selects
          // rather than branches: random data mispredicts every other compare.
          Acc best = -std::numeric_limits<Acc>::infinity();
          const bool empty = rs.lo >= rs.hi || cs.lo >= cs.hi;
          int64_t best_index = empty ? -1 : (rs.start + rs.lo * dh) * W + cs.start + cs.lo * dw;
          for (int64_t i = rs.lo; i < rs.hi; ++i) {
            const int64_t ih = rs.start + i * dh;
            const T* in_row = in + ih * ss[2];
            for (int64_t j = cs.lo; j < cs.hi; ++j) {
              const int64_t iw = cs.start + j * dw;
              const Acc v = Acc(in_row[iw * sw]);
              const bool take = (v > best) | (v != v);
              best = select(take, v, best);
              best_index = select(take, ih * W + iw, best_index);
            }
          }
          orow[ow] = convert<T>(best);
          irow[ow] = best_index;
        }
      } else {
        for (int64_t ow = 0; ow < Wo; ++ow) {
          const Span& cs = sp.cols[size_t(ow)];
          Acc sum = 0;
          for (int64_t ih = rs.lo; ih < rs.hi; ++ih) {
            const T* in_row = in + ih * ss[2];
            for (int64_t iw = cs.lo; iw < cs.hi; ++iw) sum += Acc(in_row[iw * ss[3]]);
          }
          const bool empty = rs.lo >= rs.hi || cs.lo >= cs.hi;
          orow[ow] = convert<T>(empty ? Acc(0) : Acc(sum / Acc(divisor(OP, p, rs, cs))));
        }
      }
    }
  });
}

template <class T, PoolOp OP>
int64_t pool_backward(const StridedArray& grad_src, const StridedArray& grad_dst,
                      const StridedArray& indices, const PoolParams& p) {
  using Acc = compute_t<T>;  // 16-bit floats sum in f32, then round once
  const int64_t C = grad_src.shape[1], H = grad_src.shape[2], W = grad_src.shape[3];
  const int64_t Ho = grad_dst.shape[2], Wo = grad_dst.shape[3];
  const int64_t plane_size = H * W;
  const Strides& gs = grad_dst.strides;
  const T* g = static_cast<const T*>(grad_dst.data);
  T* d = static_cast<T*>(grad_src.data);
  const Spans sp = OP == PoolOp::Max ? Spans{} : spans_of(OP, p, H, W, Ho, Wo);
  const int64_t planes = grad_src.shape[0] * C;
  const int64_t window =
      OP == PoolOp::Max ? 1 : std::min(p.window.kernel_h, H) * std::min(p.window.kernel_w, W);
  const int64_t grain =
      std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, Ho * Wo * window + plane_size));
  std::atomic<int64_t> first_bad{-1};
  parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> scratch(std::is_same_v<Acc, T> ? 0 : size_t(plane_size));
    int64_t bad = -1;
    for (int64_t pl = begin; pl < end; ++pl) {
      const int64_t n = pl / C, c = pl % C;
      Acc* acc =
          std::is_same_v<Acc, T> ? reinterpret_cast<Acc*>(d + pl * plane_size) : scratch.data();
      std::fill(acc, acc + plane_size, Acc(0));
      const T* gplane = g + n * gs[0] + c * gs[1];
      if constexpr (OP == PoolOp::Max) {
        const Strides& is = indices.strides;
        const int64_t* iplane = static_cast<const int64_t*>(indices.data) + n * is[0] + c * is[1];
        for (int64_t oh = 0; oh < Ho; ++oh) {
          const T* grow = gplane + oh * gs[2];
          const int64_t* irow = iplane + oh * is[2];
          for (int64_t ow = 0; ow < Wo; ++ow) {
            const int64_t k = irow[ow * is[3]];
            if (k >= 0 && k < plane_size) [[likely]] {
              acc[k] += Acc(grow[ow * gs[3]]);
            } else if (k != -1 && bad < 0) {
              bad = (pl * Ho + oh) * Wo + ow;
            }
          }
        }
      } else {
        for (int64_t oh = 0; oh < Ho; ++oh) {
          const Span& rs = sp.rows[size_t(oh)];
          for (int64_t ow = 0; ow < Wo; ++ow) {
            const Span& cs = sp.cols[size_t(ow)];
            const Acc share =
                Acc(Acc(gplane[oh * gs[2] + ow * gs[3]]) / Acc(divisor(OP, p, rs, cs)));
            for (int64_t ih = rs.lo; ih < rs.hi; ++ih)
              for (int64_t iw = cs.lo; iw < cs.hi; ++iw) acc[ih * W + iw] += share;
          }
        }
      }
      if constexpr (!std::is_same_v<Acc, T>) {
        T* out = d + pl * plane_size;
        for (int64_t k = 0; k < plane_size; ++k) out[k] = convert<T>(acc[k]);
      }
    }
    // The smallest bad position wins whatever the split: a min, not a race on the order.
    int64_t seen = first_bad.load();
    while (bad >= 0 && (seen < 0 || bad < seen) && !first_bad.compare_exchange_weak(seen, bad)) {
    }
  });
  return first_bad.load();
}

// Calls f.template operator()<T, OP>() for the dtype and the op.
template <class F>
decltype(auto) dispatch_pool(DType dt, PoolOp op, F&& f) {
  return dispatch_floating(dt, [&]<class T>() {
    switch (op) {
      case PoolOp::Max:
        return f.template operator()<T, PoolOp::Max>();
      case PoolOp::Avg:
        return f.template operator()<T, PoolOp::Avg>();
      case PoolOp::AdaptiveAvg:
        break;
    }
    return f.template operator()<T, PoolOp::AdaptiveAvg>();
  });
}

}  // namespace

void pool2d(PoolOp op, const StridedArray& dst, const StridedArray& indices,
            const StridedArray& src, const PoolParams& p) {
  if (dst.numel() == 0) return;
  dispatch_pool(dst.dtype, op,
                [&]<class T, PoolOp OP>() { pool_forward<T, OP>(dst, indices, src, p); });
}

void pool2d_backward(PoolOp op, const StridedArray& grad_src, const StridedArray& grad_dst,
                     const StridedArray& indices, const PoolParams& p, CheckSite site) {
  if (grad_src.numel() == 0) return;
  const int64_t bad = dispatch_pool(grad_src.dtype, op, [&]<class T, PoolOp OP>() {
    return pool_backward<T, OP>(grad_src, grad_dst, indices, p);
  });
  if (bad < 0) return;
  // The value at row-major position `bad` of indices [N, C, Ho, Wo].
  const Shape& s = indices.shape;
  int64_t rest = bad, offset = 0;
  for (size_t d = s.size(); d-- > 0;) {
    offset += rest % s[d] * indices.strides[d];
    rest /= s[d];
  }
  raise_check_failure({site, static_cast<const int64_t*>(indices.data)[offset], bad,
                       grad_src.shape[2] * grad_src.shape[3]});
}

}  // namespace ox::cpu
