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

template <class T>
GemmTile Tile() {
  const hn::ScalableTag<T> d;
  return {int64_t(kRows), int64_t(kVecs * hn::Lanes(d))};
}
GemmTile TileF32() { return Tile<float>(); }
GemmTile TileF64() { return Tile<double>(); }

// out[(i / kRows) * kRows * kc + k * kRows + i % kRows] = A(i, k), rows past m zero.
template <class T>
void PackA(const T* a, int64_t rs, int64_t cs, int64_t m, int64_t kc, T* out) {
  const int64_t mr = int64_t(kRows);
  for (int64_t i0 = 0; i0 < m; i0 += mr, out += mr * kc) {
    const int64_t rows = std::min(mr, m - i0);
    const T* panel = a + i0 * rs;
    if (rs == 1 && rows == mr) {  // A stored by columns: each k is a contiguous run
      for (int64_t k = 0; k < kc; ++k) std::copy_n(panel + k * cs, mr, out + k * mr);
      continue;
    }
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < kc; ++k) out[k * mr + i] = panel[i * rs + k * cs];
    for (int64_t i = rows; i < mr; ++i)
      for (int64_t k = 0; k < kc; ++k) out[k * mr + i] = T(0);
  }
}

// out[(j / nr) * nr * kc + k * nr + j % nr] = B(k, j), columns past n zero.
template <class T>
void PackB(const T* b, int64_t rs, int64_t cs, int64_t kc, int64_t n, T* out) {
  const hn::ScalableTag<T> d;
  const int64_t nr = int64_t(kVecs * hn::Lanes(d));
  for (int64_t j0 = 0; j0 < n; j0 += nr, out += nr * kc) {
    const int64_t cols = std::min(nr, n - j0);
    const T* panel = b + j0 * cs;
    if (cs == 1) {  // B stored by rows: each k is a contiguous run
      for (int64_t k = 0; k < kc; ++k) {
        std::copy_n(panel + k * rs, cols, out + k * nr);
        std::fill(out + k * nr + cols, out + (k + 1) * nr, T(0));
      }
      continue;
    }
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t k = 0; k < kc; ++k) out[k * nr + j] = panel[k * rs + j * cs];
    for (int64_t j = cols; j < nr; ++j)
      for (int64_t k = 0; k < kc; ++k) out[k * nr + j] = T(0);
  }
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
HWY_EXPORT(BlockF32);
HWY_EXPORT(BlockF64);

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
void gemm_block(const float* apack, const float* bpack, int64_t m, int64_t n, int64_t kc, float* c,
                int64_t rs, int64_t cs, float alpha, float beta) {
  HWY_DYNAMIC_DISPATCH(BlockF32)(apack, bpack, m, n, kc, c, rs, cs, alpha, beta);
}
void gemm_block(const double* apack, const double* bpack, int64_t m, int64_t n, int64_t kc,
                double* c, int64_t rs, int64_t cs, double alpha, double beta) {
  HWY_DYNAMIC_DISPATCH(BlockF64)(apack, bpack, m, n, kc, c, rs, cs, alpha, beta);
}

}  // namespace ox::cpu::simd
#endif
