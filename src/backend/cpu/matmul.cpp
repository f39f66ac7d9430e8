// Batched matrix multiplication. f32/f64 go to OpenBLAS; f16/bf16 go through f32; integers
// (and matrices too large for BLAS's 32-bit sizes) take a blocked loop.
//
// Thread-count independence: OpenBLAS's own threading is not bitwise reproducible across
// thread counts (its threaded driver splits K differently from the serial one, and dgemm's
// column-tail kernel lands where the thread split falls; docs/LIMITATIONS.md). So every BLAS
// call here is single-threaded, and the parallelism is ours: each matrix is cut into tiles
// whose size depends on the shapes only, and (batch, tile) items are spread over the threads.
// The tiles cannot follow the thread count either: a serial call's per-element result depends
// on the call's own shape (its small-matrix and direct sgemm paths, its row/column tail kernels),
// so cutting C differently changes bits (measured with 32-aligned tiles: f32 and f64, every
// transpose, e.g. 1029x917x917 in 256x256 tiles vs one call).

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <climits>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_allocator.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"

namespace ox::cpu {

namespace {

// Tiles are multiples of this many rows/columns (every OpenBLAS sgemm/dgemm unroll divides it),
// hold at least kMinTileWork multiply-adds before they are split again, and a matrix is cut
// into at most kMaxTiles of them: enough items to keep 16 threads busy. Every call packs its
// own A and B panels, so fewer, larger tiles run faster (2 threads, sgemm 1024: 64 tiles of
// 128^2 reach 72% of the FMA peak, 16 of 256^2 78%, 4 of 512^2 83%).
constexpr int64_t kTileAlign = 32;
constexpr int64_t kMinTileWork = int64_t{1} << 21;
constexpr int64_t kMaxTiles = 16;
// The loop kernel's blocks: rows x columns of accumulators (64 KiB of i64), and a depth that
// keeps the B block (kDepthBlock x kColBlock) within L2.
constexpr int64_t kRowBlock = 32;
constexpr int64_t kColBlock = 256;
constexpr int64_t kDepthBlock = 128;

// A matrix of a batch: element (i, j) of batch item t at data + off[t] + i * rs + j * cs
// (in elements).
struct Mat {
  char* data;
  int64_t rows, cols, rs, cs;
  Mat t() const { return {data, cols, rows, cs, rs}; }
};

// Scratch memory from the CPU allocator (64-byte aligned, cached).
class Scratch {
 public:
  explicit Scratch(size_t nbytes) : n_(nbytes), p_(cpu_allocator().allocate(nbytes)) {}
  ~Scratch() { cpu_allocator().deallocate(p_, n_); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  void* get() const { return p_; }

 private:
  size_t n_;
  void* p_;
};

// A contiguous copy of `src` in `dtype`. Batch dims (all but the last two) that `src`
// broadcasts (stride 0) keep stride 0, so a broadcast operand is copied once per distinct
// matrix. With copy_values false the memory is left uninitialised (an output written later).
struct Packed {
  std::unique_ptr<Scratch> memory;
  StridedArray array;
};
Packed pack(const StridedArray& src, DType dtype, bool copy_values = true) {
  const size_t nd = src.shape.size();
  Shape compact = src.shape;
  for (size_t d = 0; d + 2 < nd; ++d)
    if (src.strides[d] == 0) compact[d] = 1;
  const Strides dense = contiguous_strides(compact);
  int64_t numel = 1;
  for (int64_t s : compact) numel *= s;
  Packed out;
  out.memory = std::make_unique<Scratch>(size_t(std::max<int64_t>(numel, 1)) * dtype_size(dtype));
  if (copy_values)
    cpu::copy({out.memory->get(), compact, dense, dtype, src.device},
              {src.data, compact, src.strides, src.dtype, src.device});
  Strides strides = dense;
  for (size_t d = 0; d + 2 < nd; ++d)
    if (compact[d] != src.shape[d]) strides[d] = 0;
  out.array = {out.memory->get(), src.shape, strides, dtype, src.device};
  return out;
}

Mat mat_of(const StridedArray& x) {
  const size_t nd = x.shape.size();
  return {static_cast<char*>(x.data), x.shape[nd - 2], x.shape[nd - 1], x.strides[nd - 2],
          x.strides[nd - 1]};
}

// Element offsets of each operand's matrix for every batch index, row-major over the batch.
struct Batches {
  int64_t count = 1;
  std::vector<int64_t> dst, a, b;
};
Batches batch_offsets(const StridedArray& dst, const StridedArray& a, const StridedArray& b) {
  const size_t nb = dst.shape.size() - 2;
  Batches out;
  for (size_t d = 0; d < nb; ++d) out.count *= dst.shape[d];
  out.dst.resize(size_t(out.count));
  out.a.resize(size_t(out.count));
  out.b.resize(size_t(out.count));
  Dims index(nb, 0);
  int64_t od = 0, oa = 0, ob = 0;
  for (int64_t t = 0; t < out.count; ++t) {
    out.dst[size_t(t)] = od;
    out.a[size_t(t)] = oa;
    out.b[size_t(t)] = ob;
    for (size_t d = nb; d-- > 0;) {  // odometer step
      od += dst.strides[d], oa += a.strides[d], ob += b.strides[d];
      if (++index[d] < dst.shape[d]) break;
      od -= dst.strides[d] * dst.shape[d], oa -= a.strides[d] * dst.shape[d];
      ob -= b.strides[d] * dst.shape[d];
      index[d] = 0;
    }
  }
  return out;
}

// When b is the same matrix for every batch index and the batch dims of a and dst continue
// their row dim (a [B, M, K] contiguous times a weight [K, N]), the batch is one [B*M, K]
// matrix: one large product instead of B small ones. Returns the folded row stride.
bool fold_rows(const StridedArray& x, int64_t& row_stride) {
  const size_t nd = x.shape.size();
  int64_t expected = 0;
  bool seen = false;
  for (size_t d = nd - 1; d-- > 0;) {  // the row dim and the batch dims, innermost first
    if (x.shape[d] == 1) continue;
    if (!seen) {
      row_stride = x.strides[d];
      seen = true;
    } else if (x.strides[d] != expected) {
      return false;
    }
    expected = x.strides[d] * x.shape[d];
  }
  if (!seen) row_stride = x.shape[nd - 1];
  return true;
}

void try_fold_batch(StridedArray& dst, StridedArray& a, StridedArray& b) {
  const size_t nd = dst.shape.size();
  if (nd == 2) return;
  for (size_t d = 0; d + 2 < nd; ++d)
    if (dst.shape[d] != 1 && b.strides[d] != 0) return;
  int64_t rs_dst = 0, rs_a = 0;
  if (!fold_rows(dst, rs_dst) || !fold_rows(a, rs_a)) return;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < nd; ++d) rows *= dst.shape[d];
  dst = {dst.data, {rows, dst.shape[nd - 1]}, {rs_dst, dst.strides[nd - 1]}, dst.dtype, dst.device};
  a = {a.data, {rows, a.shape[nd - 1]}, {rs_a, a.strides[nd - 1]}, a.dtype, a.device};
  b = {b.data,
       {b.shape[nd - 2], b.shape[nd - 1]},
       {b.strides[nd - 2], b.strides[nd - 1]},
       b.dtype,
       b.device};
}

// How BLAS can read a matrix in place: row-major (unit column stride, row stride >= cols) or
// column-major (read as the transpose), with a leading dimension that fits BLAS's int.
struct BlasView {
  bool ok = false;
  bool trans = false;
  int ld = 0;
};
BlasView blas_view(const Mat& m) {
  auto fits = [](int64_t v) { return v >= 1 && v <= INT_MAX; };
  if ((m.cols <= 1 || m.cs == 1) && (m.rows <= 1 || m.rs >= std::max<int64_t>(1, m.cols))) {
    const int64_t ld = m.rows <= 1 ? std::max<int64_t>(1, m.cols) : m.rs;
    if (fits(ld)) return {true, false, int(ld)};
  }
  if ((m.rows <= 1 || m.rs == 1) && (m.cols <= 1 || m.cs >= std::max<int64_t>(1, m.rows))) {
    const int64_t ld = m.cols <= 1 ? std::max<int64_t>(1, m.rows) : m.cs;
    if (fits(ld)) return {true, true, int(ld)};
  }
  return {};
}

// Tiles of one M x N x K product, from the shapes alone.
struct Tiling {
  int64_t mb, nb, mt, nt;
};
Tiling tiling(int64_t M, int64_t N, int64_t K, int64_t batches) {
  const double work = double(M) * double(N) * double(K);  // multiply-adds of one matrix
  const int64_t most = std::max<int64_t>(kMaxTiles / batches, 1);
  const int64_t target = work >= double(most * kMinTileWork)
                             ? most
                             : std::max<int64_t>(int64_t(work / kMinTileWork), 1);
  int64_t mt = 1, nt = 1;
  while (mt * nt < target) {
    const int64_t mb = (M + mt - 1) / mt, nb = (N + nt - 1) / nt;
    if (mb >= nb && mb >= 2 * kTileAlign)
      mt *= 2;
    else if (nb >= 2 * kTileAlign)
      nt *= 2;
    else
      break;
  }
  auto block = [](int64_t n, int64_t parts) {
    const int64_t b = (n + parts - 1) / parts;
    return parts == 1 ? std::max<int64_t>(n, 1) : (b + kTileAlign - 1) / kTileAlign * kTileAlign;
  };
  Tiling t{block(M, mt), block(N, nt), 0, 0};
  t.mt = (M + t.mb - 1) / t.mb;
  t.nt = (N + t.nb - 1) / t.nb;
  return t;
}

// Keeps OpenBLAS serial for calls made outside a parallel region (inside one it is serial
// already): with OpenMP builds it would otherwise use omp_get_max_threads() threads.
class SerialBlas {
 public:
  SerialBlas() : saved_(omp_in_parallel() ? 0 : omp_get_max_threads()) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SerialBlas() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;

 private:
  int saved_;
};

template <class T>
void blas_gemm(bool ta, bool tb, int m, int n, int k, T alpha, const T* a, int lda, const T* b,
               int ldb, T beta, T* c, int ldc) {
  const auto TA = ta ? CblasTrans : CblasNoTrans, TB = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, TA, TB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  else
    cblas_dgemm(CblasRowMajor, TA, TB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

// C = beta * C + alpha * A @ B over all batches, C row-major; A and B readable by BLAS.
template <class T>
void gemm_tiles(const Batches& bt, Mat A, Mat B, Mat C, T alpha, T beta) {
  const BlasView va = blas_view(A), vb = blas_view(B), vc = blas_view(C);
  OX_ASSERT(va.ok && vb.ok && vc.ok && !vc.trans, "gemm operands BLAS cannot take");
  const int64_t M = C.rows, N = C.cols, K = A.cols;
  const Tiling tl = tiling(M, N, K, bt.count);
  const int64_t per_matrix = tl.mt * tl.nt, es = int64_t(sizeof(T));
  parallel_for(0, bt.count * per_matrix, 1, [&](int64_t begin, int64_t end) {
    SerialBlas serial;
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / per_matrix, tile = item % per_matrix;
      const int64_t i0 = tile / tl.nt * tl.mb, j0 = tile % tl.nt * tl.nb;
      const int64_t m = std::min(tl.mb, M - i0), n = std::min(tl.nb, N - j0);
      const auto* a = reinterpret_cast<const T*>(A.data + (bt.a[size_t(t)] + i0 * A.rs) * es);
      const auto* b = reinterpret_cast<const T*>(B.data + (bt.b[size_t(t)] + j0 * B.cs) * es);
      auto* c = reinterpret_cast<T*>(C.data + (bt.dst[size_t(t)] + i0 * C.rs + j0) * es);
      blas_gemm<T>(va.trans, vb.trans, int(m), int(n), int(K), alpha, a, va.ld, b, vb.ld, beta, c,
                   vc.ld);
    }
  });
}

// Wrapping integer arithmetic; plain arithmetic for floats.
template <class T>
inline T madd(T acc, T x, T y) {
  if constexpr (std::is_integral_v<T>)
    return wrap_add(acc, wrap_mul(x, y));
  else
    return acc + x * y;
}

// The blocked i-k-j loop for dtypes BLAS does not take. B must have unit column stride (or a
// single column). Items are (batch, row block, column block): each output element is summed by
// one thread over k in order, whatever the thread count.
template <class T>
void gemm_loop(const Batches& bt, Mat A, Mat B, Mat C, T alpha, T beta) {
  const int64_t M = C.rows, N = C.cols, K = A.cols;
  const int64_t rblocks = (M + kRowBlock - 1) / kRowBlock,
                cblocks = (N + kColBlock - 1) / kColBlock;
  const int64_t per_matrix = rblocks * cblocks, es = int64_t(sizeof(T));
  const double item_work = double(std::min(M, kRowBlock)) * double(std::min(N, kColBlock)) *
                           double(std::max<int64_t>(K, 1));
  const int64_t grain = item_work >= 32768 ? 1 : int64_t(32768 / item_work);
  parallel_for(0, bt.count * per_matrix, grain, [&](int64_t begin, int64_t end) {
    std::vector<T> acc(size_t(kRowBlock * kColBlock));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t t = item / per_matrix, blk = item % per_matrix;
      const int64_t i0 = blk / cblocks * kRowBlock, j0 = blk % cblocks * kColBlock;
      const int64_t m = std::min(kRowBlock, M - i0), n = std::min(kColBlock, N - j0);
      const T* a = reinterpret_cast<const T*>(A.data + bt.a[size_t(t)] * es);
      const T* b = reinterpret_cast<const T*>(B.data + bt.b[size_t(t)] * es);
      T* c = reinterpret_cast<T*>(C.data + bt.dst[size_t(t)] * es);
      for (int64_t i = 0; i < m; ++i) std::fill_n(acc.data() + i * kColBlock, n, T(0));
      for (int64_t k0 = 0; k0 < K; k0 += kDepthBlock) {
        const int64_t k1 = std::min(K, k0 + kDepthBlock);
        for (int64_t i = 0; i < m; ++i) {
          T* __restrict row = acc.data() + i * kColBlock;
          for (int64_t k = k0; k < k1; ++k) {
            const T x = a[(i0 + i) * A.rs + k * A.cs];
            const T* __restrict brow = b + k * B.rs + j0;
            for (int64_t j = 0; j < n; ++j) row[j] = madd(row[j], x, brow[j]);
          }
        }
      }
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          T& out = c[(i0 + i) * C.rs + (j0 + j) * C.cs];
          const T v = acc[size_t(i * kColBlock + j)];
          const T scaled = alpha == T(1) ? v : madd(T(0), alpha, v);
          out = beta == T(0) ? scaled : madd(scaled, beta, out);
        }
    }
  });
}

template <class T>
T scalar_to(const Scalar& s) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(s.to_int());  // modulo 2^bits, as integer arithmetic wraps
  else
    return static_cast<T>(s.to_double());
}

bool blas_sizes_fit(const StridedArray& dst, const StridedArray& a) {
  const size_t nd = dst.shape.size();
  return dst.shape[nd - 2] <= INT_MAX && dst.shape[nd - 1] <= INT_MAX && a.shape[nd - 1] <= INT_MAX;
}

// dst = beta * dst + alpha * a @ b for dtypes of one C++ type T (no 16-bit floats).
template <class T>
void matmul_typed(StridedArray dst, StridedArray a, StridedArray b, const Scalar& alpha_s,
                  const Scalar& beta_s) {
  const T alpha = scalar_to<T>(alpha_s), beta = scalar_to<T>(beta_s);
  constexpr bool kBlas = std::is_same_v<T, float> || std::is_same_v<T, double>;
  const bool use_blas = kBlas && blas_sizes_fit(dst, a);
  // Operands in a layout the kernel cannot read are copied (the only copies made here).
  Packed pa, pb, pd;
  if (use_blas) {
    if (!blas_view(mat_of(a)).ok) a = (pa = pack(a, a.dtype)).array;
    if (!blas_view(mat_of(b)).ok) b = (pb = pack(b, b.dtype)).array;
  } else {
    const Mat mb = mat_of(b);
    if (mb.cols > 1 && mb.cs != 1) b = (pb = pack(b, b.dtype)).array;
  }
  // dst for BLAS: row-major as it is; column-major computes dst^T = b^T @ a^T; otherwise a
  // scratch copy that is written back. The loop writes any strides.
  const StridedArray dst_orig = dst;
  const bool dst_direct = !use_blas || blas_view(mat_of(dst)).ok;
  if (!dst_direct) dst = (pd = pack(dst, dst.dtype, beta != T(0))).array;
  try_fold_batch(dst, a, b);
  const Batches bt = batch_offsets(dst, a, b);
  Mat A = mat_of(a), B = mat_of(b), C = mat_of(dst);
  if constexpr (kBlas) {
    if (use_blas) {
      if (blas_view(C).trans)
        gemm_tiles<T>(Batches{bt.count, bt.dst, bt.b, bt.a}, B.t(), A.t(), C.t(), alpha, beta);
      else
        gemm_tiles<T>(bt, A, B, C, alpha, beta);
    } else {
      gemm_loop<T>(bt, A, B, C, alpha, beta);
    }
  } else {
    gemm_loop<T>(bt, A, B, C, alpha, beta);
  }
  if (!dst_direct) cpu::copy(dst_orig, pd.array);
}

// K == 0: dst = beta * dst (BLAS semantics; alpha does not matter).
void scale(const StridedArray& dst, const Scalar& beta) {
  if (beta.to_double() == 0) return cpu::fill(dst, 0);
  dispatch_dtype(dst.dtype, [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      using C = compute_t<T>;
      const C bv = scalar_to<C>(beta);
      parallel_runs<1>({&dst}, [bv](const std::array<char*, 1>& p,
                                    const std::array<int64_t, 1>& step, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          char* q = p[0] + i * step[0];
          store<T>(q, madd(C(0), bv, load<T>(q)));
        }
      });
    }
  });
}

}  // namespace

void matmul(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
            const Scalar& alpha, const Scalar& beta) {
  if (dst.numel() == 0) return;
  if (a.shape[a.shape.size() - 1] == 0) return scale(dst, beta);
  dispatch_dtype(dst.dtype, [&]<class T>() {
    if constexpr (is_half_v<T>) {
      // PyTorch's CPU rule: products and sums in f32, one rounding at the end.
      Packed pa = pack(a, kF32), pb = pack(b, kF32);
      Packed pd = pack(dst, kF32, beta.to_double() != 0);
      matmul_typed<float>(pd.array, pa.array, pb.array, alpha, beta);
      cpu::copy(dst, pd.array);
    } else if constexpr (std::is_same_v<T, bool>) {
      OX_ASSERT(false, "matmul kernel given bool");
    } else {
      matmul_typed<T>(dst, a, b, alpha, beta);
    }
  });
}

void set_blas_threads(int n) { openblas_set_num_threads(n); }

std::string blas_config() {
  return std::string(openblas_get_config()) + ", " + openblas_get_corename() + " kernels";
}

}  // namespace ox::cpu
