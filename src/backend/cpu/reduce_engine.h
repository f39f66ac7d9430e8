// Reductions. Every result is a fixed function of the values, whatever the strides or the
// thread count: the reduced index range [0, n) is cut into chunks of kChunk elements; inside a
// chunk element i goes to lane i % kLanes, each lane accumulates its elements in index order,
// and the lanes are combined by a fixed tree; chunk partials are combined by a fixed pairwise
// tree. Threads only decide who computes which chunk, never what a chunk is.
//
// Two loops compute that same order. The inner loop reads a reduced row that is contiguous
// (or gathered into a buffer, for strided rows) with kLanes accumulators the compiler keeps in
// vector registers. The outer loop serves reductions over a non-innermost dim (x.sum(0)): it
// walks whole contiguous rows of outputs, keeping kLanes accumulator rows per tile of outputs,
// so it reads memory in order instead of one column at a time.
//
// This header is that engine (Geometry, run, the lane kernels and the op functors) for the
// reduction families, each compiled in a file of its own: reduce_sum.cpp (sum, prod, mean,
// count_nonzero), reduce_extreme.cpp (max, min, argmax, argmin), reduce_stats.cpp (var, std,
// logsumexp, norm) and reduce.cpp (the entry point, all/any). One file took minutes to compile.

#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>
#include <vector>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/scratch.h"
#include "backend/cpu/simd/simd.h"

namespace ox::cpu::reduce_engine {

constexpr int64_t kChunk = 1024;  // elements of one reduced row per task (fixed)
constexpr int kLanes = 16;        // accumulators per row: 4 SSE / 2 AVX registers of f32
// Outer loop: the accumulator rows of a tile (in L2). Wide tiles read long stretches of each row,
// which the prefetchers follow; 1 KiB stretches ran at half the speed.
constexpr int64_t kTileBytes = 262144;
constexpr int64_t kGrain = 32768;  // elements per parallel task, at least
constexpr int64_t kNotFound = std::numeric_limits<int64_t>::max();

struct NoParam {};

// Ops that keep NaN apart from the running value in the inner loop (see ExtremeOp).
template <class Op>
concept SplitNan = requires {
  requires Op::kSplitNan;
};

template <class Acc, class Op>
Acc lane_tree(Acc* a, const Op& op) {
  for (int s = 1; s < kLanes; s *= 2)
    for (int l = 0; l < kLanes; l += 2 * s) a[l] = op.combine(a[l], a[l + s]);
  return a[0];
}

template <class Acc, class Op>
Acc partial_tree(Acc* p, int64_t m, const Op& op) {
  for (int64_t s = 1; s < m; s *= 2)
    for (int64_t k = 0; k + s < m; k += 2 * s) p[k] = op.combine(p[k], p[k + s]);
  return p[0];
}

// dst (and values) of the merged output shape; src as output dims then reduced dims.
struct Geometry {
  Shape out_shape;
  Strides out_dst, out_src, out_val;  // elements
  int64_t n_out = 0;
  Shape red_shape;
  Strides red_src;
  int64_t n_red = 0;
  bool red_contiguous = false;  // one reduced row is n_red consecutive elements

  Geometry(const StridedArray& dst, const StridedArray& src, const StridedArray* values) {
    const size_t k = dst.shape.size();
    OX_ASSERT(src.shape.size() >= k, "reduce: src has fewer dims than dst");
    Shape oshape(src.shape.begin(), src.shape.begin() + k);
    Strides osrc(src.strides.begin(), src.strides.begin() + k);
    OX_ASSERT(oshape == dst.shape, "reduce: dst shape ", dst.shape, " vs src ", src.shape);
    n_out = dst.numel();
    Shape rshape(src.shape.begin() + k, src.shape.end());
    Strides rsrc(src.strides.begin() + k, src.strides.end());
    if (n_out == 0) return;
    // A zero first: the partial products of [2^62, 2^62, 0] overflow.
    n_red = std::find(rshape.begin(), rshape.end(), 0) != rshape.end() ? 0 : 1;
    for (int64_t s : rshape) n_red *= n_red ? s : 0;
    const Strides& vstr = values ? values->strides : dst.strides;
    MergedDims<3> om = merge_dims<3>(oshape, {&dst.strides, &osrc, &vstr});
    out_shape = std::move(om.shape);
    out_dst = std::move(om.strides[0]);
    out_src = std::move(om.strides[1]);
    out_val = std::move(om.strides[2]);
    MergedDims<1> rm = merge_dims<1>(rshape, {&rsrc});
    red_shape = std::move(rm.shape);
    red_src = std::move(rm.strides[0]);
    red_contiguous = n_red == 1 || (red_shape.size() == 1 && red_src[0] == 1);
  }

  // Whether the outer loop applies: the innermost output dim is contiguous in src.
  bool outer() const {
    return !red_contiguous && n_red > 0 && out_shape.back() > 1 && out_src.back() == 1;
  }

  struct Offsets {
    int64_t dst = 0, src = 0, val = 0;
  };
  Offsets out_offsets(int64_t o) const {
    Offsets r;
    for (size_t d = out_shape.size(); d-- > 0;) {
      const int64_t i = o % out_shape[d];
      o /= out_shape[d];
      r.dst += i * out_dst[d];
      r.src += i * out_src[d];
      r.val += i * out_val[d];
    }
    return r;
  }

  int64_t red_offset(int64_t i) const {
    int64_t off = 0;
    for (size_t d = red_shape.size(); d-- > 0;) {
      off += (i % red_shape[d]) * red_src[d];
      i /= red_shape[d];
    }
    return off;
  }

  // Element offsets of reduced indices [i0, i0 + n).
  void red_offsets(int64_t i0, int64_t n, int64_t* off) const {
    const size_t nd = red_shape.size();
    if (nd == 1) {
      const int64_t s = red_src[0];
      for (int64_t k = 0; k < n; ++k) off[k] = (i0 + k) * s;
      return;
    }
    Dims idx(nd, 0);
    int64_t rest = i0, cur = 0;
    for (size_t d = nd; d-- > 0;) {
      idx[d] = rest % red_shape[d];
      rest /= red_shape[d];
      cur += idx[d] * red_src[d];
    }
    // A run along the innermost reduced dim at a time (a loop that vectorizes), then the carry
    // into the outer dims.
    const size_t last = nd - 1;
    const int64_t inner = red_shape[last], step = red_src[last];
    for (int64_t k = 0; k < n;) {
      const int64_t run = std::min(n - k, inner - idx[last]);
      for (int64_t j = 0; j < run; ++j) off[k + j] = cur + j * step;
      k += run;
      cur += run * step;
      idx[last] += run;
      if (idx[last] < inner) break;  // n ended inside the run
      cur -= inner * step;
      idx[last] = 0;
      for (size_t d = last; d-- > 0;) {
        if (++idx[d] < red_shape[d]) {
          cur += red_src[d];
          break;
        }
        cur -= (red_shape[d] - 1) * red_src[d];
        idx[d] = 0;
      }
    }
  }
};

template <class Param>
inline Param param_at(const Param* p, int64_t i) {
  if constexpr (std::is_same_v<Param, NoParam>) {
    return {};
  } else {
    return p[i];
  }
}

// Runs kernel K over every (output, chunk) and calls emit(o, acc) once per output, from any
// thread. K: In, Acc, Param; chunk(x, n, i0, param) over n contiguous elements (reduced
// indices i0...); tile(base, off, rows, i0, width, params, out, scratch) over rows base + off[r]
// of `width` neighbouring outputs, with kLanesUsed * width accumulators of scratch; kTile, the
// widest tile; combine(a, b) for the tree over chunks.
template <class K, class Emit>
void run(const Geometry& g, const void* src_data, const K& k, const typename K::Param* params,
         Emit&& emit) {
  using In = typename K::In;
  using Acc = typename K::Acc;
  const In* src = static_cast<const In*>(src_data);
  const int64_t n_red = g.n_red, n_out = g.n_out;
  const int64_t nchunks = std::max<int64_t>(1, (n_red + kChunk - 1) / kChunk);
  if (n_red == 0) {  // the identity of each output
    parallel_for(0, n_out, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) emit(o, k.chunk(nullptr, 0, 0, param_at(params, o)));
    });
    return;
  }
  // One partial per (output, chunk): for a broadcast input of 2^62 elements that is more than
  // any machine holds, an OutOfMemory error (the overflow check covers n_out * nchunks too).
  int64_t n_partial = 0;
  OX_CHECK(nchunks == 1 || !__builtin_mul_overflow(n_out, nchunks, &n_partial), OutOfMemory,
           "reduce", "partial results for ", n_out, " outputs of ", n_red,
           " elements each need more memory than this machine can address");
  const std::unique_ptr<Acc[]> partial = scratch_array<Acc>(n_partial, "reduce");

  if (g.outer()) {
    const int64_t width_all = g.out_shape.back(), n_hi = n_out / width_all;
    // Narrower tiles when there would be few tasks. Tiles only group outputs, so their width
    // never changes a result.
    int64_t tile_w = std::min(width_all, K::kTile);
    while (tile_w > 256 && n_hi * nchunks * ((width_all + tile_w - 1) / tile_w) < 4)
      tile_w = (tile_w + 1) / 2;
    const int64_t ntiles = (width_all + tile_w - 1) / tile_w;
    const int64_t per_task = std::min(n_red, kChunk) * tile_w;
    parallel_for(0, n_hi * ntiles * nchunks, std::max<int64_t>(1, kGrain / per_task),
                 [&](int64_t b, int64_t e) {
                   // On the heap: a tile's accumulators would strain a worker's stack.
                   const std::unique_ptr<Acc[]> scratch(new Acc[K::kLanesUsed * tile_w + tile_w]);
                   const std::unique_ptr<int64_t[]> offsets(new int64_t[kChunk]);
                   Acc* res = scratch.get() + K::kLanesUsed * tile_w;
                   int64_t* off = offsets.get();
                   for (int64_t t = b; t < e; ++t) {
                     const int64_t c = t % nchunks, tile = (t / nchunks) % ntiles;
                     const int64_t o0 = (t / nchunks / ntiles) * width_all + tile * tile_w;
                     const int64_t width = std::min(tile_w, width_all - tile * tile_w);
                     const int64_t i0 = c * kChunk, n = std::min(kChunk, n_red - i0);
                     g.red_offsets(i0, n, off);
                     k.tile(src + g.out_offsets(o0).src, off, n, i0, width,
                            params ? params + o0 : nullptr, res, scratch.get());
                     for (int64_t j = 0; j < width; ++j) {
                       if (nchunks == 1) {
                         emit(o0 + j, res[j]);
                       } else {
                         partial[static_cast<size_t>((o0 + j) * nchunks + c)] = res[j];
                       }
                     }
                   }
                 });
  } else {
    auto task = [&](int64_t o, int64_t c, In* buf, int64_t* off) {
      const In* row = src + g.out_offsets(o).src;
      const int64_t i0 = c * kChunk, n = std::min(kChunk, n_red - i0);
      const In* x = row + i0;
      if (!g.red_contiguous) {
        g.red_offsets(i0, n, off);
        for (int64_t i = 0; i < n; ++i) buf[i] = row[off[i]];
        x = buf;
      }
      return k.chunk(x, n, i0, param_at(params, o));
    };
    const int64_t per_task = std::max<int64_t>(1, std::min(n_red, kChunk));
    parallel_for(
        0, n_out * nchunks, std::max<int64_t>(1, kGrain / per_task), [&](int64_t b, int64_t e) {
          In buf[kChunk];
          int64_t off[kChunk];
          for (int64_t t = b; t < e; ++t) {
            if constexpr (requires { requires K::kSumChunks; }) {  // whole chunks, one call
              const int64_t c = t % nchunks;
              const int64_t count = std::min(n_red / kChunk - c, e - t);
              if (nchunks > 1 && g.red_contiguous && count > 0) {
                simd::sum_chunks(src + g.out_offsets(t / nchunks).src + c * kChunk, kChunk, count,
                                 partial.get() + t);
                t += count - 1;
                continue;
              }
            }
            if (nchunks == 1) {
              emit(t, task(t, 0, buf, off));
            } else {
              partial[static_cast<size_t>(t)] = task(t / nchunks, t % nchunks, buf, off);
            }
          }
        });
  }
  if (nchunks > 1)
    parallel_for(0, n_out, std::max<int64_t>(1, kGrain / nchunks), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o)
        emit(o, partial_tree(partial.get() + o * nchunks, nchunks, k));
    });
}

template <class Acc>
struct SumOp;
// Float sums of one dtype go to the SIMD kernel, which keeps the same lanes in the same order.
template <class In, class Acc, class Op>
constexpr bool kSimdSum =
    std::is_same_v<In, Acc>&& std::is_floating_point_v<Acc>&& std::is_same_v<Op, SumOp<Acc>>;
static_assert(simd::kSumLanes == kLanes);

// An accumulating reduction: lanes of op.map(x, param) folded with op.combine.
template <class In_, class Acc_, class Param_, class Op>
struct Lanes {
  using In = In_;
  using Acc = Acc_;
  using Param = Param_;
  static constexpr int64_t kTile =
      std::max<int64_t>(8, kTileBytes / (kLanes * static_cast<int64_t>(sizeof(Acc))));
  // Runs of whole contiguous chunks may go to simd::sum_chunks, which computes chunk()'s bits.
  static constexpr bool kSumChunks = kSimdSum<In, Acc, Op>;
  Op op;

  Acc combine(Acc a, Acc b) const { return op.combine(a, b); }

  Acc chunk(const In* __restrict x, int64_t n, int64_t i0, const Param& p) const {
    if constexpr (SplitNan<Op>) {
      return op.finish(chunk_split_nan(x, n, i0, p));
    }
    Acc acc[kLanes];
    for (int l = 0; l < kLanes; ++l) acc[l] = op.init();
    int64_t i = 0;
    if constexpr (kSimdSum<In, Acc, Op>) {
      i = n / kLanes * kLanes;
      simd::add_lanes(x, i, acc);
    }
    for (; i + kLanes <= n; i += kLanes) {
      // Left rolled, the lane loop goes to the loop vectorizer, which if-converts the NaN-aware
      // max/min into vector compares and blends; fully unrolled, it stays scalar and branchy.
#pragma GCC unroll 1
      for (int l = 0; l < kLanes; ++l)
        acc[l] = op.combine(acc[l], op.map(static_cast<compute_t<In>>(x[i + l]), p));
    }
    for (int l = 0; i + l < n; ++l)
      acc[l] = op.combine(acc[l], op.map(static_cast<compute_t<In>>(x[i + l]), p));
    return lane_tree(acc, op);
  }

  // The same lanes with NaN tracked apart: each lane's NaN flag replaces its value at the end.
  Acc chunk_split_nan(const In* __restrict x, int64_t n, int64_t, const Param& p) const {
    using Mask = std::conditional_t<sizeof(Acc) == 4, int32_t, int64_t>;
    Acc acc[kLanes];
    Mask nan[kLanes];
    for (int l = 0; l < kLanes; ++l) {
      acc[l] = op.init();
      nan[l] = 0;
    }
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 1
      for (int l = 0; l < kLanes; ++l) {
        const Acc v = op.map(static_cast<compute_t<In>>(x[i + l]), p);
        acc[l] = op.plain(acc[l], v);
        nan[l] |= static_cast<Mask>(v != v);
      }
    }
    for (int l = 0; i + l < n; ++l) {
      const Acc v = op.map(static_cast<compute_t<In>>(x[i + l]), p);
      acc[l] = op.plain(acc[l], v);
      nan[l] |= static_cast<Mask>(v != v);
    }
    for (int l = 0; l < kLanes; ++l)
      if (nan[l]) acc[l] = std::numeric_limits<Acc>::quiet_NaN();
    return lane_tree(acc, op);
  }

  static constexpr int64_t kLanesUsed = kLanes;  // accumulator rows of `width` in scratch

  void tile(const In* base, const int64_t* off, int64_t rows, int64_t, int64_t width,
            const Param* params, Acc* out, Acc* scratch) const {
    const auto acc = [&](int64_t l) { return scratch + l * width; };
    for (int l = 0; l < kLanes; ++l)
      for (int64_t j = 0; j < width; ++j) acc(l)[j] = op.init();
    for (int64_t r = 0; r < rows; ++r) {
      const In* __restrict row = base + off[r];
      Acc* __restrict a = acc(r % kLanes);
      for (int64_t j = 0; j < width; ++j)
        a[j] = op.combine(a[j], op.map(static_cast<compute_t<In>>(row[j]), param_at(params, j)));
    }
    for (int64_t j = 0; j < width; ++j) {
      Acc lanes[kLanes];
      for (int l = 0; l < kLanes; ++l) lanes[l] = acc(l)[j];
      out[j] = lane_tree(lanes, op);
      if constexpr (SplitNan<Op>) out[j] = op.finish(out[j]);
    }
  }
};

template <class C>
inline bool is_nan(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return x != x;
  } else {
    return false;
  }
}

// ---- Accumulating ops: init, map(x, param), combine --------------------------------------

template <class Acc>
struct AddOp {
  static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>) {
      return wrap_add(a, b);
    } else {
      return a + b;
    }
  }
  static Acc init() { return Acc(0); }
};

template <class Acc>
struct SumOp : AddOp<Acc> {
  template <class C>
  static Acc map(C x, NoParam) {
    return static_cast<Acc>(x);
  }
};

template <class Acc>
struct ProdOp {
  static Acc init() { return Acc(1); }
  template <class C>
  static Acc map(C x, NoParam) {
    return static_cast<Acc>(x);
  }
  static Acc combine(Acc a, Acc b) {
    if constexpr (std::is_integral_v<Acc>) {
      return wrap_mul(a, b);
    } else {
      return a * b;
    }
  }
};

// NaN-propagating max/min; `Abs` maps |x| first (norms).
template <class Acc, bool IsMax, bool Abs = false>
struct ExtremeOp {
  static Acc init() {
    if constexpr (std::is_floating_point_v<Acc>) {
      return IsMax ? (Abs ? Acc(0) : -std::numeric_limits<Acc>::infinity())
                   : std::numeric_limits<Acc>::infinity();
    } else {
      return IsMax ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
    }
  }
  template <class C>
  static Acc map(C x, NoParam) {
    if constexpr (Abs) {
      return std::fabs(static_cast<Acc>(x));
    } else {
      return static_cast<Acc>(x);
    }
  }
  static Acc combine(Acc a, Acc b) {
    // `|`, not `||`: no branch, so the lanes become vector compares and blends.
    const bool take = (IsMax ? (b > a) : (b < a)) | is_nan(b);
    return take ? b : a;
  }
  // The inner loop's faster split: the extreme ignoring NaN (one vector max), and apart from it
  // whether a NaN was seen. Equal to combine() up to the NaN's payload, which finish() fixes.
  static constexpr bool kSplitNan = std::is_floating_point_v<Acc>;
  static Acc plain(Acc a, Acc b) { return (IsMax ? (b > a) : (b < a)) ? b : a; }
  static Acc finish(Acc r) { return is_nan(r) ? std::numeric_limits<Acc>::quiet_NaN() : r; }
};

// Sum of f(x) in f64: squared deviations from a per-row mean, |x|, x^2, |x|^p, x != 0.
struct SqDevOp : AddOp<double> {
  template <class C>
  static double map(C x, double mean) {
    const double d = static_cast<double>(x) - mean;
    return d * d;
  }
};
struct AbsOp : AddOp<double> {
  template <class C>
  static double map(C x, NoParam) {
    return std::fabs(static_cast<double>(x));
  }
};
struct SquareOp : AddOp<double> {
  template <class C>
  static double map(C x, NoParam) {
    const double d = static_cast<double>(x);
    return d * d;
  }
};
struct PowOp : AddOp<double> {
  double p;
  template <class C>
  double map(C x, NoParam) const {
    return std::pow(std::fabs(static_cast<double>(x)), p);
  }
};
template <class Acc>
struct NonzeroOp : AddOp<Acc> {
  template <class C>
  static Acc map(C x, NoParam) {
    return x != C(0) ? Acc(1) : Acc(0);
  }
};

// Sum of exp(x - m) for a per-row max m (logsumexp's second pass).
template <class Acc>
struct ExpOp : AddOp<Acc> {
  static Acc map(Acc x, Acc m) { return std::exp(x - m); }
};

template <bool IsAll>
struct LogicalOp {
  static uint8_t init() { return IsAll ? 1 : 0; }
  template <class C>
  static uint8_t map(C x, NoParam) {
    return x != C(0);
  }
  static uint8_t combine(uint8_t a, uint8_t b) { return IsAll ? (a & b) : (a | b); }
};

// The first index whose element equals the row's extreme (is NaN when that is NaN).
template <class In_>
struct FindFirst {
  using In = In_;
  using C = compute_t<In>;
  using Acc = int64_t;
  using Param = C;
  static constexpr int64_t kTile = 4096;

  static bool match(C x, C m) {
    if constexpr (std::is_floating_point_v<C>) {
      return m != m ? x != x : x == m;
    } else {
      return x == m;
    }
  }
  static int64_t combine(int64_t a, int64_t b) { return std::min(a, b); }
  int64_t chunk(const In* x, int64_t n, int64_t i0, C m) const {
    int64_t i = 0;
    if constexpr (std::is_arithmetic_v<In>) {  // blocks tested branch-free (vector compares)
      constexpr int64_t kBlock = 64;
      for (; i + kBlock <= n; i += kBlock) {
        unsigned hit = 0;
        if (m != m) {
          for (int64_t l = 0; l < kBlock; ++l) hit |= x[i + l] != x[i + l];
        } else {
          for (int64_t l = 0; l < kBlock; ++l) hit |= x[i + l] == m;
        }
        if (hit) break;
      }
    }
    for (; i < n; ++i)
      if (match(static_cast<C>(x[i]), m)) return i0 + i;
    return kNotFound;
  }
  static constexpr int64_t kLanesUsed = 0;
  void tile(const In* base, const int64_t* off, int64_t rows, int64_t i0, int64_t width, const C* m,
            int64_t* out, int64_t*) const {
    for (int64_t j = 0; j < width; ++j) out[j] = kNotFound;
    int64_t left = width;
    for (int64_t r = 0; r < rows && left > 0; ++r) {
      const In* row = base + off[r];
      if constexpr (std::is_arithmetic_v<In>) {  // most rows match nowhere: test branch-free
        unsigned hit = 0;
        for (int64_t j = 0; j < width; ++j)
          hit |= (row[j] == m[j]) | (is_nan(m[j]) & is_nan(row[j]));
        if (!hit) continue;
      }
      for (int64_t j = 0; j < width; ++j)
        if (out[j] == kNotFound && match(static_cast<C>(row[j]), m[j])) {
          out[j] = i0 + r;
          --left;
        }
    }
  }
};

// ---- Shared by the drivers -------------------------------------------------------------------

template <class T>
inline T& at(const StridedArray& a, int64_t offset) {
  return static_cast<T*>(a.data)[offset];
}

// Sum, Prod, Mean, Max, Min: one pass, dst = finish(acc).
template <class T, class Acc, class Op, class Out, class Finish>
void one_pass(const Geometry& g, const StridedArray& dst, const StridedArray& src, Op op,
              Finish finish) {
  run(g, src.data, Lanes<T, Acc, NoParam, Op>{op}, nullptr,
      [&](int64_t o, Acc acc) { at<Out>(dst, g.out_offsets(o).dst) = convert<Out>(finish(acc)); });
}

// The max (min) per row, as compute-type values, into `m`.
template <class T, bool IsMax>
std::unique_ptr<compute_t<T>[]> extremes(const Geometry& g, const StridedArray& src) {
  using C = compute_t<T>;
  std::unique_ptr<C[]> m = scratch_array<C>(g.n_out, "reduce");
  run(g, src.data, Lanes<T, C, NoParam, ExtremeOp<C, IsMax>>{}, nullptr,
      [&](int64_t o, C acc) { m[static_cast<size_t>(o)] = acc; });
  return m;
}

// The families, one file each.
void sum_family(ReduceOp op, const Geometry& g, const StridedArray& dst, const StridedArray& src);
void extreme_family(ReduceOp op, const Geometry& g, const StridedArray& dst,
                    const StridedArray& src, const StridedArray* values);
void stats_family(ReduceOp op, const Geometry& g, const StridedArray& dst, const StridedArray& src,
                  const ReduceParams& p);

}  // namespace ox::cpu::reduce_engine
