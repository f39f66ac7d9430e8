// Inclusive scans along the last dim. A running sum depends on its order, so each row is one
// sequential pass in index order and only whole rows are spread over threads: results never
// depend on the thread count. A scan over a non-innermost dim (x.cumsum(0)) walks a tile of
// contiguous columns side by side, reading memory in order rather than one column at a time.

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

constexpr int64_t kTile = 256;     // columns scanned side by side
constexpr int64_t kGrain = 32768;  // elements per parallel task, at least

struct ScanGeometry {
  Shape outer;
  Strides o_dst, o_src, o_idx;  // elements
  int64_t n_outer = 1;
  int64_t n = 1;  // scan length
  int64_t s_dst = 0, s_src = 0, s_idx = 0;

  ScanGeometry(const StridedArray& dst, const StridedArray& src, const StridedArray* idx) {
    const size_t nd = src.shape.size();
    const size_t k = nd ? nd - 1 : 0;
    if (nd) {
      n = src.shape[k];
      s_dst = dst.strides[k];
      s_src = src.strides[k];
      s_idx = idx ? idx->strides[k] : 0;
    }
    const Shape oshape(src.shape.begin(), src.shape.begin() + k);
    const Strides od(dst.strides.begin(), dst.strides.begin() + k);
    const Strides os(src.strides.begin(), src.strides.begin() + k);
    const Strides oi = idx ? Strides(idx->strides.begin(), idx->strides.begin() + k) : od;
    MergedDims<3> m = merge_dims<3>(oshape, {&od, &os, &oi});
    outer = std::move(m.shape);
    o_dst = std::move(m.strides[0]);
    o_src = std::move(m.strides[1]);
    o_idx = std::move(m.strides[2]);
    for (int64_t s : outer) n_outer *= s;
  }

  struct Offsets {
    int64_t dst = 0, src = 0, idx = 0;
  };
  Offsets offsets(int64_t o) const {
    Offsets r;
    for (size_t d = outer.size(); d-- > 0;) {
      const int64_t i = o % outer[d];
      o /= outer[d];
      r.dst += i * o_dst[d];
      r.src += i * o_src[d];
      r.idx += i * o_idx[d];
    }
    return r;
  }
  // Whether to scan columns side by side: the innermost other dim is contiguous in src.
  bool columns() const { return s_src != 1 && outer.back() > 1 && o_src.back() == 1; }

  // Calls fn(o0, width, offsets of o0) for tiles of kTile neighbouring columns, in parallel.
  template <class Fn>
  void for_each_tile(Fn&& fn) const {
    const int64_t w = outer.back(), ntiles = (w + kTile - 1) / kTile;
    parallel_for(0, n_outer / w * ntiles, std::max<int64_t>(1, kGrain / (n * std::min(w, kTile))),
                 [&](int64_t b, int64_t e) {
                   for (int64_t t = b; t < e; ++t) {
                     const int64_t o0 = t / ntiles * w + t % ntiles * kTile;
                     fn(o0, std::min(kTile, w - t % ntiles * kTile), offsets(o0));
                   }
                 });
  }
  // Calls fn(offsets) for each row, in parallel.
  template <class Fn>
  void for_each_row(Fn&& fn) const {
    parallel_for(0, n_outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o) fn(offsets(o));
                 });
  }
};

// Sum and Prod: the running value is kept in Acc (f64 for floats, i64 for integers and bool).
template <class T, class Out, class Acc, class Step>
void scan_accumulate(const ScanGeometry& g, const StridedArray& dst, const StridedArray& src,
                     Acc init, Step step) {
  const T* s = static_cast<const T*>(src.data);
  Out* d = static_cast<Out*>(dst.data);
  const auto value = [](T x) { return static_cast<Acc>(static_cast<compute_t<T>>(x)); };
  if (g.columns()) {
    const int64_t dj = g.o_dst.back();
    g.for_each_tile([&](int64_t, int64_t width, const ScanGeometry::Offsets& off) {
      Acc acc[kTile];
      std::fill(acc, acc + width, init);
      for (int64_t i = 0; i < g.n; ++i) {
        const T* row = s + off.src + i * g.s_src;
        Out* out = d + off.dst + i * g.s_dst;
        for (int64_t j = 0; j < width; ++j) {
          acc[j] = step(acc[j], value(row[j]));
          out[j * dj] = convert<Out>(acc[j]);
        }
      }
    });
    return;
  }
  g.for_each_row([&](const ScanGeometry::Offsets& off) {
    Acc a = init;
    for (int64_t i = 0; i < g.n; ++i) {
      a = step(a, value(s[off.src + i * g.s_src]));
      d[off.dst + i * g.s_dst] = convert<Out>(a);
    }
  });
}

// Running max (min) with its index, as PyTorch: a NaN is always taken (so a later NaN moves
// the index), a tie moves the index to the later element.
template <class T, bool IsMax>
void scan_extreme(const ScanGeometry& g, const StridedArray& dst, const StridedArray& src,
                  const StridedArray& idx) {
  using C = compute_t<T>;
  const T* s = static_cast<const T*>(src.data);
  T* d = static_cast<T*>(dst.data);
  int64_t* ix = static_cast<int64_t*>(idx.data);
  const auto takes = [](C x, C v) {
    if constexpr (std::is_floating_point_v<C>) {
      if (x != x) return true;
      if (v != v) return false;
    }
    return IsMax ? x >= v : x <= v;
  };
  if (g.columns()) {
    const int64_t dj = g.o_dst.back(), ij = g.o_idx.back();
    g.for_each_tile([&](int64_t, int64_t width, const ScanGeometry::Offsets& off) {
      C v[kTile];
      int64_t at[kTile];
      for (int64_t i = 0; i < g.n; ++i) {
        const T* row = s + off.src + i * g.s_src;
        T* out = d + off.dst + i * g.s_dst;
        int64_t* out_i = ix + off.idx + i * g.s_idx;
        for (int64_t j = 0; j < width; ++j) {
          const C x = static_cast<C>(row[j]);
          if (i == 0 || takes(x, v[j])) {
            v[j] = x;
            at[j] = i;
          }
          out[j * dj] = convert<T>(v[j]);
          out_i[j * ij] = at[j];
        }
      }
    });
    return;
  }
  g.for_each_row([&](const ScanGeometry::Offsets& off) {
    C v = C(0);
    int64_t at = 0;
    for (int64_t i = 0; i < g.n; ++i) {
      const C x = static_cast<C>(s[off.src + i * g.s_src]);
      if (i == 0 || takes(x, v)) {
        v = x;
        at = i;
      }
      d[off.dst + i * g.s_dst] = convert<T>(v);
      ix[off.idx + i * g.s_idx] = at;
    }
  });
}

template <class T>
void scan_sum_prod(ScanOp op, const ScanGeometry& g, const StridedArray& dst,
                   const StridedArray& src) {
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    if (op == ScanOp::Sum)
      return scan_accumulate<T, T, double>(g, dst, src, 0.0,
                                           [](double a, double x) { return a + x; });
    return scan_accumulate<T, T, double>(g, dst, src, 1.0,
                                         [](double a, double x) { return a * x; });
  } else {
    OX_ASSERT(dst.dtype == kI64, "integer cumsum/cumprod writes i64");
    if (op == ScanOp::Sum)
      return scan_accumulate<T, int64_t, int64_t>(g, dst, src, int64_t(0), wrap_add<int64_t>);
    return scan_accumulate<T, int64_t, int64_t>(g, dst, src, int64_t(1), wrap_mul<int64_t>);
  }
}

}  // namespace

void scan(ScanOp op, const StridedArray& dst, const StridedArray& src,
          const StridedArray* indices) {
  if (src.numel() == 0) return;
  const bool extreme = op == ScanOp::Max || op == ScanOp::Min;
  OX_ASSERT(!extreme || (indices && indices->dtype == kI64 && dst.dtype == src.dtype),
            "cummax/cummin need i64 indices");
  const ScanGeometry g(dst, src, extreme ? indices : nullptr);
  dispatch_dtype(src.dtype, [&]<class T>() {
    if (op == ScanOp::Max) {
      scan_extreme<T, true>(g, dst, src, *indices);
    } else if (op == ScanOp::Min) {
      scan_extreme<T, false>(g, dst, src, *indices);
    } else {
      scan_sum_prod<T>(op, g, dst, src);
    }
  });
}

}  // namespace ox::cpu
