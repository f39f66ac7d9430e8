// The GEMM micro-kernel and its packing, compiled once per Highway target. The blocking and the
// threads are in backend/cpu/matmul.cpp.
//
// A register tile is kRows rows x two vectors of columns of C. Every element of C is one
// accumulator that starts at zero and takes one fused multiply-add per k, in k order, whatever
// the tile size, the target's vector width or where the element sits (edge tiles run on
// zero-padded panels): so the result depends only on the depth block (fixed by the caller),
// never on how the caller splits M and N among threads.

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backend/cpu/simd/gemm.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format off: foreach_target.h must come first
#include "hwy/highway.h"
// clang-format on
#include "hwy/cache_control.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "backend/cpu/simd/simd.h"

HWY_BEFORE_NAMESPACE();
namespace ox::cpu::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The register tile, kRows x kVecs vectors: the accumulators, kVecs B vectors and a broadcast A
// value fill the register file (32 vector registers with AVX-512, 16 otherwise).
// On Zen 4, 12 x 2 and 8 x 3 run alike; 24 x 1 is 25% slower.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
constexpr size_t kRows = 12, kVecs = 2;
#else
constexpr size_t kRows = 6, kVecs = 2;
#endif

// Panel widths are compile-time constants (MaxLanes), which needs fixed-width vectors.
static_assert(!HWY_HAVE_SCALABLE, "the GEMM packing assumes fixed-width vectors");

template <class T>
GemmTile Tile() {
  const hn::ScalableTag<T> d;
  return {int64_t(kRows), int64_t(kVecs * hn::Lanes(d))};
}
GemmTile TileF32() { return Tile<float>(); }
GemmTile TileF64() { return Tile<double>(); }

// Copies V x V blocks (V = 16 bytes of lanes) of a panel stored with unit k stride into the
// packed layout, transposing each in registers; returns how many k it covered (whole blocks).
template <size_t W, class T>
int64_t TransposeBlocks(const T* panel, int64_t sw, int64_t kc, T* out) {
#if HWY_TARGET == HWY_SCALAR
  (void)panel, (void)sw, (void)kc, (void)out;
  return 0;
#else
  const hn::Full128<T> d;
  constexpr size_t V = 16 / sizeof(T);
  if constexpr (W % V != 0 || (V != 2 && V != 4)) {
    (void)panel, (void)sw, (void)kc, (void)out, (void)d;
    return 0;
  } else {
    const int64_t covered = kc / int64_t(V) * int64_t(V);
    for (int64_t k = 0; k < covered; k += int64_t(V))
      for (size_t w = 0; w < W; w += V) {
        const T* s = panel + int64_t(w) * sw + k;
        T* o = out + k * int64_t(W) + int64_t(w);
        const auto r0 = hn::LoadU(d, s), r1 = hn::LoadU(d, s + sw);
        if constexpr (V == 2) {
          hn::StoreU(hn::InterleaveLower(d, r0, r1), d, o);
          hn::StoreU(hn::InterleaveUpper(d, r0, r1), d, o + W);
        } else {
          const auto r2 = hn::LoadU(d, s + 2 * sw), r3 = hn::LoadU(d, s + 3 * sw);
          const auto t0 = hn::InterleaveLower(d, r0, r1), t1 = hn::InterleaveLower(d, r2, r3);
          const auto t2 = hn::InterleaveUpper(d, r0, r1), t3 = hn::InterleaveUpper(d, r2, r3);
          hn::StoreU(hn::ConcatLowerLower(d, t1, t0), d, o);
          hn::StoreU(hn::ConcatUpperUpper(d, t1, t0), d, o + W);
          hn::StoreU(hn::ConcatLowerLower(d, t3, t2), d, o + 2 * W);
          hn::StoreU(hn::ConcatUpperUpper(d, t3, t2), d, o + 3 * W);
        }
      }
    return covered;
  }
#endif
}

// out[0, W) = src[0, W) in 16-byte vectors (a call to memmove per run costs more than the copy).
template <size_t W, class T>
HWY_INLINE void CopyRun(const T* src, T* out) {
#if HWY_TARGET == HWY_SCALAR
  std::copy_n(src, W, out);
#else
  const hn::Full128<T> d;
  constexpr size_t V = 16 / sizeof(T);
  size_t w = 0;
  for (; w + V <= W; w += V) hn::StoreU(hn::LoadU(d, src + w), d, out + w);
  for (; w < W; ++w) out[w] = src[w];
#endif
}

// Packs `count` rows (A) or columns (B) of depth kc into panels W wide: element w of the panel
// run at depth k is src[w * sw + k * sk], stored at out[(w / W) * W * kc + k * W + w % W], with
// zeros past count.
template <size_t W, class T>
void PackPanels(const T* src, int64_t sw, int64_t sk, int64_t count, int64_t kc, T* out) {
  const int64_t width_max = int64_t(W);
  for (int64_t w0 = 0; w0 < count; w0 += width_max, out += width_max * kc) {
    const int64_t width = std::min(width_max, count - w0);
    const T* panel = src + w0 * sw;
    if (sw == 1) {  // each k is a contiguous run
      for (int64_t k = 0; k < kc; ++k) {
        if (width == width_max) {
          CopyRun<W>(panel + k * sk, out + k * width_max);
        } else {
          std::copy_n(panel + k * sk, width, out + k * width_max);
          std::fill(out + k * width_max + width, out + (k + 1) * width_max, T(0));
        }
      }
      continue;
    }
    const int64_t k0 = sk == 1 && width == width_max ? TransposeBlocks<W>(panel, sw, kc, out) : 0;
    for (int64_t w = 0; w < width; ++w)
      for (int64_t k = k0; k < kc; ++k) out[k * width_max + w] = panel[w * sw + k * sk];
    for (int64_t w = width; w < width_max; ++w)
      for (int64_t k = 0; k < kc; ++k) out[k * width_max + w] = T(0);
  }
}

// A's rows by panels of kRows; B's columns by panels of kVecs vectors.
template <class T>
void PackA(const T* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, T* out) {
  PackPanels<kRows>(a, rs, cs, m, kc, out);
}
template <class T>
void PackB(const T* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, T* out) {
  const hn::ScalableTag<T> d;
  PackPanels<kVecs * hn::MaxLanes(d)>(b, cs, rs, n, kc, out);
}

// 16-bit A and B are widened to f32 as their panels are packed, so the packed blocks, the
// micro-kernel and so every product are bitwise those of the f32 GEMM on widened copies, with no
// whole-operand copy. The widening is convert.cpp's, bitwise the scalar conversions of
// oxmera/core/half.h: bf16 by a 16-bit shift on every target, f16 by F16C where the target has it
// (Highway's portable f16 promotion reads infinities and NaNs as numbers) and by the scalar
// conversion elsewhere. A run's tail goes through the same vector code on a padded copy, so a
// value widens alike wherever it sits.
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
constexpr bool kVectorHalf = true;
#else
constexpr bool kVectorHalf = false;
#endif

template <class D>
HWY_INLINE hn::Vec<D> WidenVec(D d, const BFloat16* p) {
  const hn::RebindToUnsigned<D> du;
  const hn::Rebind<uint16_t, D> d16;
  const auto bits = hn::PromoteTo(du, hn::LoadU(d16, reinterpret_cast<const uint16_t*>(p)));
  return hn::BitCast(d, hn::ShiftLeft<16>(bits));
}
template <class D>
HWY_INLINE hn::Vec<D> WidenVec(D d, const Half* p) {
  const hn::Rebind<hwy::float16_t, D> d16;
  return hn::PromoteTo(d, hn::LoadU(d16, reinterpret_cast<const hwy::float16_t*>(p)));
}

// out[0, n) = src[0, n) widened.
template <class H>
HWY_INLINE void WidenRun(const H* src, int64_t n, float* out) {
  if constexpr (std::is_same_v<H, Half> && !kVectorHalf) {
    for (int64_t i = 0; i < n; ++i) out[i] = float(src[i]);
  } else {
    const hn::ScalableTag<float> d;
    const int64_t lanes = int64_t(hn::Lanes(d));
    int64_t i = 0;
    for (; i + lanes <= n; i += lanes) hn::StoreU(WidenVec(d, src + i), d, out + i);
    if (i == n) return;
    HWY_ALIGN H in[hn::MaxLanes(d)] = {};
    HWY_ALIGN float widened[hn::MaxLanes(d)];
    std::copy(src + i, src + n, in);
    hn::Store(WidenVec(d, in), d, widened);
    std::copy(widened, widened + (n - i), out + i);
  }
}

// PackPanels for 16-bit sources, writing f32 panels of the same layout. Runs contiguous along
// the panel (sw == 1) are widened straight into place; otherwise the panel's rows are widened a
// slab of depth at a time into a buffer with unit depth stride, which the f32 packing then
// transposes (in registers, where it can).
template <size_t W, class H>
void PackPanelsWidened(const H* src, int64_t sw, int64_t sk, int64_t count, int64_t kc,
                       float* out) {
  constexpr int64_t kSlab = 64;
  const int64_t width_max = int64_t(W);
  for (int64_t w0 = 0; w0 < count; w0 += width_max, out += width_max * kc) {
    const int64_t width = std::min(width_max, count - w0);
    const H* panel = src + w0 * sw;
    if (sw == 1) {
      for (int64_t k = 0; k < kc; ++k) {
        WidenRun(panel + k * sk, width, out + k * width_max);
        std::fill(out + k * width_max + width, out + (k + 1) * width_max, 0.0f);
      }
      continue;
    }
    HWY_ALIGN float slab[W * kSlab];
    H gathered[kSlab];
    for (int64_t k0 = 0; k0 < kc; k0 += kSlab) {
      const int64_t depth = std::min(kSlab, kc - k0);
      for (int64_t w = 0; w < width; ++w) {
        const H* row = panel + w * sw + k0 * sk;
        if (sk != 1) {
          for (int64_t k = 0; k < depth; ++k) gathered[k] = row[k * sk];
          row = gathered;
        }
        WidenRun(row, depth, slab + w * kSlab);
      }
      PackPanels<W>(slab, kSlab, 1, width, depth, out + k0 * width_max);
    }
  }
}

template <class H>
void PackAWidened(const H* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out) {
  PackPanelsWidened<kRows>(a, rs, cs, m, kc, out);
}
template <class H>
void PackBWidened(const H* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out) {
  const hn::ScalableTag<float> d;
  PackPanelsWidened<kVecs * hn::MaxLanes(d)>(b, cs, rs, n, kc, out);
}

// C = alpha * acc + beta * C, C not read when beta is 0. The same operations for direct and
// buffered tiles, so an element's result does not depend on which path its tile takes.
template <class D, class V = hn::Vec<D>>
HWY_INLINE V Update(D d, V acc, const hn::TFromD<D>* c, V alpha, V beta, bool read_c) {
  if (!read_c) return hn::Mul(alpha, acc);
  return hn::MulAdd(alpha, acc, hn::Mul(beta, hn::LoadU(d, c)));
}

// One register tile: C[m x n] (m <= kRows, n <= 2 lanes) from an A panel (kc x kRows) and a B
// panel (kc x 2 lanes). Rows is m for tiles at the bottom edge, which saves the padding rows'
// work (a product with one row, x @ W, would otherwise cost kRows times too much).
template <size_t Rows, class T>
HWY_INLINE void Tile(const T* HWY_RESTRICT a, const T* HWY_RESTRICT b, int64_t kc, T* c, int64_t rs,
                     int64_t cs, int64_t n, T alpha, T beta) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  V acc[Rows][kVecs];
#pragma GCC unroll 16
  for (size_t i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (size_t v = 0; v < kVecs; ++v) acc[i][v] = hn::Zero(d);
    // C's tile is read (or written) after the k loop: its lines arrive meanwhile.
    hwy::Prefetch(c + int64_t(i) * rs);
    hwy::Prefetch(c + int64_t(i) * rs + (n - 1) * cs);
  }
  // Four k a trip: the loop's own increments and branch were a fifth of its instructions, and
  // sgemm 1024/2048 run 10-15 % faster unrolled (the same operations in the same order).
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k, a += kRows, b += kVecs * lanes) {
    V bv[kVecs];
#pragma GCC unroll 4
    for (size_t v = 0; v < kVecs; ++v) bv[v] = hn::Load(d, b + v * lanes);
#pragma GCC unroll 16
    for (size_t i = 0; i < Rows; ++i) {
      const V ai = hn::Set(d, a[i]);
#pragma GCC unroll 4
      for (size_t v = 0; v < kVecs; ++v) acc[i][v] = hn::MulAdd(ai, bv[v], acc[i][v]);
    }
  }
  const V alpha_v = hn::Set(d, alpha), beta_v = hn::Set(d, beta);
  const bool read_c = beta != T(0);
  if (n == int64_t(kVecs * lanes) && cs == 1) {
#pragma GCC unroll 16
    for (size_t i = 0; i < Rows; ++i) {
      T* row = c + int64_t(i) * rs;
#pragma GCC unroll 4
      for (size_t v = 0; v < kVecs; ++v)
        hn::StoreU(Update(d, acc[i][v], row + v * lanes, alpha_v, beta_v, read_c), d,
                   row + v * lanes);
    }
    return;
  }
  // A right-edge tile, or C with strided columns: through a buffer of the tile's valid part.
  HWY_ALIGN T buf[kVecs * hn::MaxLanes(d)] = {};
  for (size_t i = 0; i < Rows; ++i) {
    T* row = c + int64_t(i) * rs;
    if (read_c)
      for (int64_t j = 0; j < n; ++j) buf[j] = row[j * cs];
    for (size_t v = 0; v < kVecs; ++v)
      hn::Store(Update(d, acc[i][v], buf + v * lanes, alpha_v, beta_v, read_c), d, buf + v * lanes);
    for (int64_t j = 0; j < n; ++j) row[j * cs] = buf[j];
  }
}

// Tile<m> for an edge tile's m rows (1 <= m < kRows).
template <class T, size_t... Rows>
HWY_INLINE void EdgeTile(std::index_sequence<Rows...>, int64_t m, const T* a, const T* b,
                         int64_t kc, T* c, int64_t rs, int64_t cs, int64_t n, T alpha, T beta) {
  ((m == int64_t(Rows) + 1 ? Tile<Rows + 1>(a, b, kc, c, rs, cs, n, alpha, beta) : void()), ...);
}

// C[m x n] = alpha * A @ B + beta * C over packed blocks, B panel by B panel (each stays in L1
// while the A block streams from L2).
template <class T>
void Block(const T* apack, const T* bpack, int64_t m, int64_t n, int64_t kc, T* c, int64_t rs,
           int64_t cs, T alpha, T beta) {
  const hn::ScalableTag<T> d;
  const int64_t mr = int64_t(kRows), nr = int64_t(kVecs * hn::Lanes(d));
  for (int64_t j0 = 0; j0 < n; j0 += nr) {
    const T* b = bpack + j0 * kc;
    const int64_t cols = std::min(nr, n - j0);
    int64_t i0 = 0;
    for (; i0 + mr <= m; i0 += mr)
      Tile<kRows>(apack + i0 * kc, b, kc, c + i0 * rs + j0 * cs, rs, cs, cols, alpha, beta);
    if (i0 < m)
      EdgeTile(std::make_index_sequence<kRows - 1>(), m - i0, apack + i0 * kc, b, kc,
               c + i0 * rs + j0 * cs, rs, cs, cols, alpha, beta);
  }
}

// C[m x n] = alpha * A @ B + beta * C for a few rows (m <= kSmallRows) straight from B, whose
// rows are contiguous: no panels are packed, and each element of B is read once for all m rows
// (a product with one row, x @ W, is one pass over W, row by row). Every element of C sums its
// products in k order with a fused multiply-add a step from zero and is updated as Tile does:
// the packed kernel's bits. acc holds m x n accumulators (the caller's scratch); tails run on
// one-lane vectors, the same operations.
template <class T>
void SmallRows(const T* a, int64_t ars, int64_t acs, const T* b, int64_t brs, int64_t m, int64_t n,
               int64_t kc, T* c, int64_t crs, T alpha, T beta, T* acc) {
  const hn::ScalableTag<T> d;
  const hn::CappedTag<T, 1> d1;
  const int64_t lanes = int64_t(hn::Lanes(d)), nv = n / lanes * lanes;
  const bool read_c = beta != T(0);
  std::fill(acc, acc + m * n, T(0));
  // Four rows of B a pass over the accumulators (each still takes its products in k order):
  // a quarter of the accumulator traffic, and four streams of B for the prefetchers.
  int64_t k = 0;
  for (; k + 4 <= kc; k += 4) {
    const T* b0 = b + k * brs;
    const T *b1 = b0 + brs, *b2 = b1 + brs, *b3 = b2 + brs;
    for (int64_t i = 0; i < m; ++i) {
      const T* ar = a + i * ars + k * acs;
      const auto a0 = hn::Set(d, ar[0]), a1 = hn::Set(d, ar[acs]), a2 = hn::Set(d, ar[2 * acs]),
                 a3 = hn::Set(d, ar[3 * acs]);
      T* ai = acc + i * n;
      for (int64_t j = 0; j < nv; j += lanes) {
        auto v = hn::MulAdd(a0, hn::LoadU(d, b0 + j), hn::LoadU(d, ai + j));
        v = hn::MulAdd(a1, hn::LoadU(d, b1 + j), v);
        v = hn::MulAdd(a2, hn::LoadU(d, b2 + j), v);
        hn::StoreU(hn::MulAdd(a3, hn::LoadU(d, b3 + j), v), d, ai + j);
      }
      const auto s0 = hn::Set(d1, ar[0]), s1 = hn::Set(d1, ar[acs]), s2 = hn::Set(d1, ar[2 * acs]),
                 s3 = hn::Set(d1, ar[3 * acs]);
      for (int64_t j = nv; j < n; ++j) {
        auto v = hn::MulAdd(s0, hn::LoadU(d1, b0 + j), hn::LoadU(d1, ai + j));
        v = hn::MulAdd(s1, hn::LoadU(d1, b1 + j), v);
        v = hn::MulAdd(s2, hn::LoadU(d1, b2 + j), v);
        hn::StoreU(hn::MulAdd(s3, hn::LoadU(d1, b3 + j), v), d1, ai + j);
      }
    }
  }
  for (; k < kc; ++k) {
    const T* brow = b + k * brs;
    for (int64_t i = 0; i < m; ++i) {
      const T ak = a[i * ars + k * acs];
      T* ai = acc + i * n;
      const auto av = hn::Set(d, ak);
      for (int64_t j = 0; j < nv; j += lanes)
        hn::StoreU(hn::MulAdd(av, hn::LoadU(d, brow + j), hn::LoadU(d, ai + j)), d, ai + j);
      const auto av1 = hn::Set(d1, ak);
      for (int64_t j = nv; j < n; ++j)
        hn::StoreU(hn::MulAdd(av1, hn::LoadU(d1, brow + j), hn::LoadU(d1, ai + j)), d1, ai + j);
    }
  }
  for (int64_t i = 0; i < m; ++i) {
    T* row = c + i * crs;
    const T* ai = acc + i * n;
    for (int64_t j = 0; j < nv; j += lanes)
      hn::StoreU(
          Update(d, hn::LoadU(d, ai + j), row + j, hn::Set(d, alpha), hn::Set(d, beta), read_c), d,
          row + j);
    for (int64_t j = nv; j < n; ++j)
      hn::StoreU(
          Update(d1, hn::LoadU(d1, ai + j), row + j, hn::Set(d1, alpha), hn::Set(d1, beta), read_c),
          d1, row + j);
  }
}

// One 128-bit run of a row of B (its next depths), f16 widened to f32.
template <class D>
HWY_INLINE hn::Vec<D> LoadRun(D d, const hn::TFromD<D>* p) {
  return hn::LoadU(d, p);
}
template <class D>  // bf16 stays raw here (ColumnsAtDepths widens it without shuffles)
HWY_INLINE hn::Vec<D> LoadRun(D d, const BFloat16* p) {
  return hn::LoadU(d, reinterpret_cast<const uint16_t*>(p));
}
template <class D>
HWY_INLINE hn::Vec<D> LoadRun(D d, const Half* p) {
  if constexpr (kVectorHalf) {
    return WidenVec(d, p);
  } else {
    HWY_ALIGN float run[hn::MaxLanes(d)];
    for (size_t i = 0; i < hn::MaxLanes(d); ++i) run[i] = float(p[i]);
    return hn::Load(d, run);
  }
}

#if HWY_TARGET != HWY_SCALAR  // one lane: no runs to transpose
// A vector whose 128-bit block b is the run at depth k of row rows[b * BlockRows].
template <size_t BlockRows, class D, class In>
HWY_INLINE hn::Vec<D> RowRuns(D d, const In* const* rows, int64_t k) {
  constexpr size_t kBlocks = hn::MaxLanes(d) * sizeof(hn::TFromD<D>) / 16;
  if constexpr (kBlocks <= 1) {
    return LoadRun(d, rows[0] + k);
  } else {
    const hn::Half<D> dh;
    return hn::Combine(d, RowRuns<BlockRows>(dh, rows + kBlocks / 2 * BlockRows, k),
                       RowRuns<BlockRows>(dh, rows, k));
  }
}

// Transposes each 128-bit block of r (r[q]'s block b: row b * kRun + q, depths k .. k + kRun)
// into t (t[p]'s block b: rows b * kRun .. + kRun at depth k + p): lane l of t[p] is row l.
template <class D, class V = hn::Vec<D>>
HWY_INLINE void TransposeRuns(D d, const V* r, V* t) {
  if constexpr (sizeof(hn::TFromD<D>) == 8) {
    t[0] = hn::InterleaveLower(d, r[0], r[1]);
    t[1] = hn::InterleaveUpper(d, r[0], r[1]);
  } else {
    const hn::Repartition<uint64_t, D> d64;
    const auto lo01 = hn::BitCast(d64, hn::InterleaveLower(d, r[0], r[1]));
    const auto lo23 = hn::BitCast(d64, hn::InterleaveLower(d, r[2], r[3]));
    const auto hi01 = hn::BitCast(d64, hn::InterleaveUpper(d, r[0], r[1]));
    const auto hi23 = hn::BitCast(d64, hn::InterleaveUpper(d, r[2], r[3]));
    t[0] = hn::BitCast(d, hn::InterleaveLower(d64, lo01, lo23));
    t[1] = hn::BitCast(d, hn::InterleaveUpper(d64, lo01, lo23));
    t[2] = hn::BitCast(d, hn::InterleaveLower(d64, hi01, hi23));
    t[3] = hn::BitCast(d, hn::InterleaveUpper(d64, hi01, hi23));
  }
}

// The depths one step of ColumnsAtDepths covers: a 128-bit run of B's rows (of T; of bf16 B).
template <class T, class In>
constexpr size_t kDepthStep = std::is_same_v<In, BFloat16> ? 8 : 16 / sizeof(T);

// t[p] = the columns rows[0 .. lanes) of B at depth k + p, p < kDepthStep (lane l: row l).
template <class D, class In, class V = hn::Vec<D>>
HWY_INLINE void ColumnsAtDepths(D d, const In* const* rows, int64_t k, V* t) {
  constexpr size_t kRun = 16 / sizeof(hn::TFromD<D>);
  if constexpr (std::is_same_v<In, BFloat16>) {
    // Eight bf16 widen exactly without a shuffle: 32-bit lane j holds depth 2j in its low half
    // and 2j + 1 in its high half, so a shift and a mask make their f32 (the bf16 -> f32
    // conversion). Even and odd depths are then transposed apart.
    const hn::Repartition<uint16_t, D> d16;
    const hn::RebindToUnsigned<D> du;
    const auto high = hn::Set(du, 0xFFFF0000u);
    V even[kRun], odd[kRun], te[kRun], to[kRun];
    for (size_t q = 0; q < kRun; ++q) {
      const auto v = hn::BitCast(du, RowRuns<kRun>(d16, rows + q, k));
      even[q] = hn::BitCast(d, hn::ShiftLeft<16>(v));
      odd[q] = hn::BitCast(d, hn::And(v, high));
    }
    TransposeRuns(d, even, te);
    TransposeRuns(d, odd, to);
    for (size_t p = 0; p < kRun; ++p) t[2 * p] = te[p], t[2 * p + 1] = to[p];
  } else {
    V r[kRun];
    for (size_t q = 0; q < kRun; ++q) r[q] = RowRuns<kRun>(d, rows + q, k);
    TransposeRuns(d, r, t);
  }
}

#endif

// C[Rows x n] = alpha * A @ B + beta * C for a few rows against a B with contiguous columns
// (x @ W^T: W's rows, element (k, j) at b[k + j * bcs]), straight from B: one vector of columns
// at a time, whose rows' 128-bit runs are transposed in registers into vectors of columns (the
// packing, without its copy of W). Every element of C sums its products in k order with a fused
// multiply-add a step from zero and is updated as Tile does: the packed kernel's bits. Lanes
// past the right edge repeat its last column and are not stored.
template <size_t Rows, class T, class In>
HWY_INLINE void SmallRowsTransposed(const T* a, int64_t ars, int64_t acs, const In* b, int64_t bcs,
                                    int64_t n, int64_t kc, T* c, int64_t crs, int64_t ccs, T alpha,
                                    T beta) {
  const hn::ScalableTag<T> d;
  using V = hn::Vec<decltype(d)>;
  constexpr size_t kLanes = hn::MaxLanes(d);
  const int64_t lanes = int64_t(kLanes);
  const V alpha_v = hn::Set(d, alpha), beta_v = hn::Set(d, beta);
  const bool read_c = beta != T(0);
  for (int64_t j0 = 0; j0 < n; j0 += lanes) {
    const int64_t cols = std::min(lanes, n - j0);
    const In* rows[kLanes];
    for (int64_t l = 0; l < lanes; ++l) rows[l] = b + std::min(j0 + l, n - 1) * bcs;
    V acc[Rows];
    for (size_t i = 0; i < Rows; ++i) acc[i] = hn::Zero(d);
    int64_t k = 0;
#if HWY_TARGET != HWY_SCALAR
    constexpr int64_t kStep = int64_t(kDepthStep<T, In>);
    const In* next[kLanes];  // the next vector of columns' rows
    for (int64_t l = 0; l < lanes; ++l) next[l] = b + std::min(j0 + lanes + l, n - 1) * bcs;
    for (; k + kStep <= kc; k += kStep) {
      // Once a line of each row: the next columns' line at this depth, into L2 (the hardware
      // prefetchers lose track of so many interleaved short streams; 25% faster).
      if (k % int64_t(64 / sizeof(In)) == 0)
        for (int64_t l = 0; l < lanes; ++l) __builtin_prefetch(next[l] + k, 0, 2);
      V t[kStep];
      ColumnsAtDepths(d, rows, k, t);
      for (int64_t p = 0; p < kStep; ++p)
        for (size_t i = 0; i < Rows; ++i)
          acc[i] = hn::MulAdd(hn::Set(d, a[int64_t(i) * ars + (k + p) * acs]), t[p], acc[i]);
    }
#endif
    for (; k < kc; ++k) {  // the last depths, under one run
      HWY_ALIGN T column[kLanes];
      for (int64_t l = 0; l < lanes; ++l) column[l] = T(rows[l][k]);
      const V t = hn::Load(d, column);
      for (size_t i = 0; i < Rows; ++i)
        acc[i] = hn::MulAdd(hn::Set(d, a[int64_t(i) * ars + k * acs]), t, acc[i]);
    }
    for (size_t i = 0; i < Rows; ++i) {
      T* row = c + int64_t(i) * crs + j0 * ccs;
      if (cols == lanes && ccs == 1) {
        hn::StoreU(Update(d, acc[i], row, alpha_v, beta_v, read_c), d, row);
        continue;
      }
      HWY_ALIGN T buf[kLanes] = {};
      if (read_c)
        for (int64_t j = 0; j < cols; ++j) buf[j] = row[j * ccs];
      hn::Store(Update(d, acc[i], buf, alpha_v, beta_v, read_c), d, buf);
      for (int64_t j = 0; j < cols; ++j) row[j * ccs] = buf[j];
    }
  }
}

template <class T, class In, size_t... Rows>
HWY_INLINE void SmallRowsTransposedM(std::index_sequence<Rows...>, const T* a, int64_t ars,
                                     int64_t acs, const In* b, int64_t bcs, int64_t m, int64_t n,
                                     int64_t kc, T* c, int64_t crs, int64_t ccs, T alpha, T beta) {
  ((m == int64_t(Rows) + 1
        ? SmallRowsTransposed<Rows + 1>(a, ars, acs, b, bcs, n, kc, c, crs, ccs, alpha, beta)
        : void()),
   ...);
}

#define OX_SMALL_ROWS_TRANSPOSED(Name, T, In)                                                     \
  void Name(const T* a, int64_t ars, int64_t acs, const In* b, int64_t bcs, int64_t m, int64_t n, \
            int64_t kc, T* c, int64_t crs, int64_t ccs, T alpha, T beta) {                        \
    SmallRowsTransposedM(std::make_index_sequence<size_t(kSmallRows)>(), a, ars, acs, b, bcs, m,  \
                         n, kc, c, crs, ccs, alpha, beta);                                        \
  }
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedF32, float, float)
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedF64, double, double)
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedHalf, float, Half)
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedBFloat16, float, BFloat16)
#undef OX_SMALL_ROWS_TRANSPOSED

void SmallRowsF32(const float* a, int64_t ars, int64_t acs, const float* b, int64_t brs, int64_t m,
                  int64_t n, int64_t kc, float* c, int64_t crs, float alpha, float beta,
                  float* acc) {
  SmallRows(a, ars, acs, b, brs, m, n, kc, c, crs, alpha, beta, acc);
}
void SmallRowsF64(const double* a, int64_t ars, int64_t acs, const double* b, int64_t brs,
                  int64_t m, int64_t n, int64_t kc, double* c, int64_t crs, double alpha,
                  double beta, double* acc) {
  SmallRows(a, ars, acs, b, brs, m, n, kc, c, crs, alpha, beta, acc);
}

void PackAF32(const float* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out) {
  PackA(a, rs, cs, m, kc, out);
}
void PackAF64(const double* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, double* out) {
  PackA(a, rs, cs, m, kc, out);
}
void PackBF32(const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out) {
  PackB(b, rs, cs, kc, n, out);
}
void PackBF64(const double* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, double* out) {
  PackB(b, rs, cs, kc, n, out);
}
void PackAHalf(const Half* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out) {
  PackAWidened(a, rs, cs, m, kc, out);
}
void PackABFloat16(const BFloat16* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out) {
  PackAWidened(a, rs, cs, m, kc, out);
}
void PackBHalf(const Half* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out) {
  PackBWidened(b, rs, cs, kc, n, out);
}
void PackBBFloat16(const BFloat16* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out) {
  PackBWidened(b, rs, cs, kc, n, out);
}
void BlockF32(const float* apack, const float* bpack, int64_t m, int64_t n, int64_t kc, float* c,
              int64_t rs, int64_t cs, float alpha, float beta) {
  Block(apack, bpack, m, n, kc, c, rs, cs, alpha, beta);
}
void BlockF64(const double* apack, const double* bpack, int64_t m, int64_t n, int64_t kc, double* c,
              int64_t rs, int64_t cs, double alpha, double beta) {
  Block(apack, bpack, m, n, kc, c, rs, cs, alpha, beta);
}

}  // namespace HWY_NAMESPACE
}  // namespace ox::cpu::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace ox::cpu::simd {

HWY_EXPORT(TileF32);
HWY_EXPORT(TileF64);
HWY_EXPORT(PackAF32);
HWY_EXPORT(PackAF64);
HWY_EXPORT(PackBF32);
HWY_EXPORT(PackBF64);
HWY_EXPORT(PackAHalf);
HWY_EXPORT(PackABFloat16);
HWY_EXPORT(PackBHalf);
HWY_EXPORT(PackBBFloat16);
HWY_EXPORT(BlockF32);
HWY_EXPORT(BlockF64);
HWY_EXPORT(SmallRowsF32);
HWY_EXPORT(SmallRowsF64);
HWY_EXPORT(SmallRowsTransposedF32);
HWY_EXPORT(SmallRowsTransposedF64);
HWY_EXPORT(SmallRowsTransposedHalf);
HWY_EXPORT(SmallRowsTransposedBFloat16);

GemmTile gemm_tile(const float*) { return HWY_DYNAMIC_DISPATCH(TileF32)(); }
GemmTile gemm_tile(const double*) { return HWY_DYNAMIC_DISPATCH(TileF64)(); }
void gemm_pack_a(const float* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out) {
  HWY_DYNAMIC_DISPATCH(PackAF32)(a, rs, cs, m, kc, out);
}
void gemm_pack_a(const double* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, double* out) {
  HWY_DYNAMIC_DISPATCH(PackAF64)(a, rs, cs, m, kc, out);
}
void gemm_pack_b(const float* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(PackBF32)(b, rs, cs, kc, n, out);
}
void gemm_pack_b(const double* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, double* out) {
  HWY_DYNAMIC_DISPATCH(PackBF64)(b, rs, cs, kc, n, out);
}
void gemm_pack_a(const Half* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out) {
  HWY_DYNAMIC_DISPATCH(PackAHalf)(a, rs, cs, m, kc, out);
}
void gemm_pack_a(const BFloat16* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, float* out) {
  HWY_DYNAMIC_DISPATCH(PackABFloat16)(a, rs, cs, m, kc, out);
}
void gemm_pack_b(const Half* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(PackBHalf)(b, rs, cs, kc, n, out);
}
void gemm_pack_b(const BFloat16* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(PackBBFloat16)(b, rs, cs, kc, n, out);
}
void gemm_block(const float* apack, const float* bpack, int64_t m, int64_t n, int64_t kc, float* c,
                int64_t rs, int64_t cs, float alpha, float beta) {
  HWY_DYNAMIC_DISPATCH(BlockF32)(apack, bpack, m, n, kc, c, rs, cs, alpha, beta);
}
void gemm_block(const double* apack, const double* bpack, int64_t m, int64_t n, int64_t kc,
                double* c, int64_t rs, int64_t cs, double alpha, double beta) {
  HWY_DYNAMIC_DISPATCH(BlockF64)(apack, bpack, m, n, kc, c, rs, cs, alpha, beta);
}

void gemm_small_rows(const float* a, int64_t ars, int64_t acs, const float* b, int64_t brs,
                     int64_t m, int64_t n, int64_t kc, float* c, int64_t crs, float alpha,
                     float beta, float* acc) {
  HWY_DYNAMIC_DISPATCH(SmallRowsF32)(a, ars, acs, b, brs, m, n, kc, c, crs, alpha, beta, acc);
}
void gemm_small_rows(const double* a, int64_t ars, int64_t acs, const double* b, int64_t brs,
                     int64_t m, int64_t n, int64_t kc, double* c, int64_t crs, double alpha,
                     double beta, double* acc) {
  HWY_DYNAMIC_DISPATCH(SmallRowsF64)(a, ars, acs, b, brs, m, n, kc, c, crs, alpha, beta, acc);
}

#define OX_SMALL_ROWS_TRANSPOSED(Name, T, In)                                                     \
  void gemm_small_rows_transposed(const T* a, int64_t ars, int64_t acs, const In* b, int64_t bcs, \
                                  int64_t m, int64_t n, int64_t kc, T* c, int64_t crs,            \
                                  int64_t ccs, T alpha, T beta) {                                 \
    HWY_DYNAMIC_DISPATCH(Name)(a, ars, acs, b, bcs, m, n, kc, c, crs, ccs, alpha, beta);          \
  }
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedF32, float, float)
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedF64, double, double)
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedHalf, float, Half)
OX_SMALL_ROWS_TRANSPOSED(SmallRowsTransposedBFloat16, float, BFloat16)
#undef OX_SMALL_ROWS_TRANSPOSED

}  // namespace ox::cpu::simd
#endif
