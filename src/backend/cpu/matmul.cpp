// Batched matrix multiplication. f32/f64 run on our packed GEMM (the micro-kernel and packing
// are in simd/gemm.cpp); f16/bf16 run on it too, their panels widened to f32 as they are packed
// and C narrowed from f32 once; integers take a blocked loop.
//
// Thread-count independence: an element of C sums its products in k order within fixed depth
// blocks of kGemmDepth, and the blocks in order, on whichever thread computes its tile; the
// threads split M and N only, so the bits are the same at any thread count (and the split may
// follow the thread count). OpenBLAS's threaded GEMM cannot promise that (its split changes
// which kernels, and so which summation orders, an element gets; docs/LIMITATIONS.md), and serial
// OpenBLAS calls on shape-fixed tiles re-pack B per tile, which capped sgemm1024 at 78% of the
// FMA peak on 2 threads.

#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "backend/cpu/cpu_allocator.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/scratch.h"
#include "backend/cpu/simd/simd.h"
#include "core/host_device.h"

namespace ox::cpu {

namespace {

// The packed GEMM's blocks, in elements. Results depend on the depth block only, so it is one
// constant for every target and dtype. An A block (kGemmRows x depth) stays in L2, a B block
// (depth x kGemmCols) in L3; kGemmRows is a multiple of every target's tile rows (6, 12).
// Measured on Zen 4 (sgemm 1024 and 2048, 1 and 2 threads): depth 1024 beats 256 by ~10%, as C
// is then read and written once per 1024 products and the L2 streams the panels fast enough.
constexpr int64_t kGemmDepth = 1024;
constexpr int64_t kGemmRows = 192;
constexpr int64_t kGemmCols = 2048;
// Columns of C that a 16-bit product computes into an f32 buffer at a time before narrowing
// them into C (a multiple of every target's tile columns, 2 to 32).
constexpr int64_t kNarrowCols = 64;
// Fewer multiply-adds than this in a product are not worth waking a second thread for.
constexpr double kGemmParallelWork = 1 << 17;
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
  // A broadcast operand's matrix dims are copied out in full, so the count can exceed memory
  // (or 64 bits): checked, and refused as OutOfMemory before the allocator sees a wrapped size.
  uint64_t nbytes = dtype_size(dtype);
  for (int64_t s : compact)
    OX_CHECK(!__builtin_mul_overflow(nbytes, static_cast<uint64_t>(s), &nbytes), OutOfMemory,
             "matmul", "a packed copy of an operand of shape ", src.shape,
             " needs more bytes than 64 bits count");
  Packed out;
  out.memory = std::make_unique<Scratch>(std::max<size_t>(nbytes, 1));
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
// Shared, so that the transposed form (gemm_packed) swaps a and b without copying; allocated
// as kernel scratch, since a batch of many small matrices can need more than the output.
struct Batches {
  int64_t count = 1;
  std::shared_ptr<int64_t[]> dst, a, b;
};
Batches batch_offsets(const StridedArray& dst, const StridedArray& a, const StridedArray& b) {
  const size_t nb = dst.shape.size() - 2;
  Batches out;
  for (size_t d = 0; d < nb; ++d) out.count *= dst.shape[d];
  out.dst = scratch_array<int64_t>(out.count, "matmul");
  out.a = scratch_array<int64_t>(out.count, "matmul");
  out.b = scratch_array<int64_t>(out.count, "matmul");
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

// n values of a 16-bit run with element stride `stride` to and from contiguous f32, by the SIMD
// conversions (bitwise the scalar ones); strided runs go through a contiguous copy.
template <class H>
void widen_run(const H* x, int64_t stride, int64_t n, float* y) {
  if (stride == 1) return simd::widen(x, y, n);
  OX_ASSERT(n <= kNarrowCols, "a strided run longer than its buffer");
  H run[kNarrowCols];
  for (int64_t j = 0; j < n; ++j) run[j] = x[j * stride];
  simd::widen(run, y, n);
}
template <class H>
void narrow_run(const float* x, int64_t n, H* y, int64_t stride) {
  if (stride == 1) return simd::narrow(x, y, n);
  OX_ASSERT(n <= kNarrowCols, "a strided run longer than its buffer");
  H run[kNarrowCols];
  simd::narrow(x, run, n);
  for (int64_t j = 0; j < n; ++j) y[j * stride] = run[j];
}

// The type products are summed in: f32 for 16-bit floats (PyTorch's CPU rule), whose panels
// are widened as they are packed.
template <class T>
using acc_t = std::conditional_t<is_half_v<T>, float, T>;

// One product C = alpha * A @ B + beta * C, M x N x K, on all threads or on this one. The team
// stays together for the whole product: for each block of B, every thread packs its share of
// the panels, waits for the others, then multiplies its items against the shared block.
// In is A's and B's element type; Out is C's: acc_t<In>, or In itself when K fits one depth
// block, so that each element of C is final after one block: the kernel then writes tiles of f32
// into a per-thread buffer (reading C's tile into it first when beta is not 0), which is narrowed
// into C, one rounding per element.
template <class In, class Out>
void gemm_one(const In* a, const In* b, Out* c, const Mat& A, const Mat& B, const Mat& C,
              acc_t<In> alpha, acc_t<In> beta, bool parallel) {
  using T = acc_t<In>;
  constexpr bool kNarrowing = !std::is_same_v<Out, T>;
  const simd::GemmTile tile = simd::gemm_tile(static_cast<const T*>(nullptr));
  OX_ASSERT(kGemmRows % tile.mr == 0, "gemm row block not a multiple of the tile rows");
  OX_ASSERT(kNarrowCols % tile.nr == 0, "gemm narrowing block not a multiple of the tile columns");
  const int64_t M = C.rows, N = C.cols, K = A.cols;
  OX_ASSERT(!kNarrowing || K <= kGemmDepth, "a 16-bit C narrowed after one depth block only");
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  const int64_t widest = std::min(N, kGemmCols), depth = std::min(K, kGemmDepth);
  const int64_t b_elems = depth * ceil_div(widest, tile.nr) * tile.nr, a_elems = kGemmRows * depth;
  const int64_t c_elems = kNarrowing ? kGemmRows * kNarrowCols : 0;
  // Allocated before the team starts: nothing may throw inside it.
  Scratch b_block(size_t(b_elems) * sizeof(T)), a_blocks(size_t(threads * a_elems) * sizeof(T));
  Scratch c_tiles(std::max<size_t>(size_t(threads * c_elems) * sizeof(T), 1));
  T* const bp = static_cast<T*>(b_block.get());
  // Items are column chunks x panels of tile.mr rows, so contiguous shares of them balance the
  // threads to a panel; a thread packs up to kGemmRows of its rows of A at a time. Rows are split
  // when there are enough of them and C is not much wider than tall: each thread then packs only
  // its rows of A, the B block being packed once by all (the training shapes, M = 2048 and
  // K, N = 128..512, and the weight gradients, K = 2048: 5-9% faster than chunks on 2 threads).
  // A wide C instead gets a column chunk per thread, each thread multiplying only the B panels
  // it packed itself (48 x 512 x 4096: 7% faster than rows), at the price of every thread
  // packing all of A; with few rows and columns, chunks are added until every thread is busy.
  const int64_t row_panels = ceil_div(M, tile.mr), all_panels = ceil_div(widest, tile.nr);
  const bool split_rows = row_panels >= 4 * threads && 4 * M >= widest;
  const int64_t chunks_max =
      all_panels >= 4 * threads && !split_rows
          ? threads
          : std::clamp<int64_t>(ceil_div(2 * threads, row_panels), 1, all_panels);
  auto work = [&](int64_t tid, int64_t team, auto&& barrier) {
    const auto share = [&](int64_t n) { return std::pair{n * tid / team, n * (tid + 1) / team}; };
    T* const ap = static_cast<T*>(a_blocks.get()) + tid * a_elems;
    T* const cp = static_cast<T*>(c_tiles.get()) + tid * c_elems;
    for (int64_t j0 = 0; j0 < N; j0 += kGemmCols) {
      const int64_t nc = std::min(kGemmCols, N - j0), panels = ceil_div(nc, tile.nr);
      const int64_t chunks = std::min(chunks_max, panels);
      for (int64_t p0 = 0; p0 < K; p0 += kGemmDepth) {
        const int64_t kc = std::min(kGemmDepth, K - p0);
        if (j0 + p0 > 0) barrier();  // everyone is done with the previous block of B
        const auto [q0, q1] = share(panels);
        if (q0 < q1)
          simd::gemm_pack_b(b + p0 * B.rs + (j0 + q0 * tile.nr) * B.cs, B.rs, B.cs, kc,
                            std::min(nc, q1 * tile.nr) - q0 * tile.nr, bp + q0 * tile.nr * kc);
        barrier();
        const T block_beta = p0 == 0 ? beta : T(1);
        auto [begin, end] = share(chunks * row_panels);
        while (begin < end) {
          const int64_t chunk = begin / row_panels, panel = begin % row_panels;
          const int64_t count = std::min({end - begin, row_panels - panel, kGemmRows / tile.mr});
          const int64_t i0 = panel * tile.mr, mc = std::min(count * tile.mr, M - i0);
          simd::gemm_pack_a(a + i0 * A.rs + p0 * A.cs, A.rs, A.cs, mc, kc, ap);
          const int64_t c0 = panels * chunk / chunks, c1 = panels * (chunk + 1) / chunks;
          const int64_t jc = c0 * tile.nr, cols = std::min(nc, c1 * tile.nr) - jc;
          Out* const ct = c + i0 * C.rs + (j0 + jc) * C.cs;
          if constexpr (!kNarrowing) {
            simd::gemm_block(ap, bp + jc * kc, mc, cols, kc, ct, C.rs, C.cs, alpha, block_beta);
          } else {
            for (int64_t j = 0; j < cols; j += kNarrowCols) {
              const int64_t w = std::min(kNarrowCols, cols - j);
              if (block_beta != T(0))
                for (int64_t i = 0; i < mc; ++i)
                  widen_run(ct + i * C.rs + j * C.cs, C.cs, w, cp + i * kNarrowCols);
              simd::gemm_block(ap, bp + (jc + j) * kc, mc, w, kc, cp, kNarrowCols, 1, alpha,
                               block_beta);
              for (int64_t i = 0; i < mc; ++i)
                narrow_run(cp + i * kNarrowCols, w, ct + i * C.rs + j * C.cs, C.cs);
            }
          }
          begin += count;
        }
      }
    }
  };
  if (threads == 1) return work(0, 1, [] {});
#pragma omp parallel num_threads(static_cast <int>(threads))
  work(omp_get_thread_num(), omp_get_num_threads(), [] {
#pragma omp barrier
  });
}

// C = beta * C + alpha * A @ B over all batches. Many matrices go one per thread; fewer run one
// after another, each on all threads.
template <class In, class Out>
void gemm_packed_oriented(const Batches& bt, Mat A, Mat B, Mat C, acc_t<In> alpha, acc_t<In> beta) {
  const double work = double(C.rows) * double(C.cols) * double(A.cols);
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  auto product = [&](int64_t t, bool parallel) {
    gemm_one<In, Out>(reinterpret_cast<const In*>(A.data) + bt.a[size_t(t)],
                      reinterpret_cast<const In*>(B.data) + bt.b[size_t(t)],
                      reinterpret_cast<Out*>(C.data) + bt.dst[size_t(t)], A, B, C, alpha, beta,
                      parallel);
  };
  if (bt.count >= threads || work < kGemmParallelWork) {
    const int64_t grain = std::max<int64_t>(1, int64_t(kGemmParallelWork / std::max(work, 1.0)));
    parallel_for(0, bt.count, grain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) product(t, false);
    });
  } else {
    for (int64_t t = 0; t < bt.count; ++t) product(t, true);
  }
}

// Column range `part` of `parts` equal ranges of N columns, starting on multiples of `align`
// (the small-rows paths split one product's columns among the threads this way).
std::pair<int64_t, int64_t> column_range(int64_t N, int64_t parts, int64_t part, int64_t align) {
  const auto start = [&](int64_t p) { return std::min(N, ceil_div(N * p / parts, align) * align); };
  return {start(part), start(part + 1)};
}

// A few rows against a B with contiguous rows (x @ W in decoding: M = batch): straight from B,
// which packing would copy whole for a single pass. The threads split the columns in as many
// equal ranges (long contiguous runs of each row of B: what streams W from memory fastest),
// each summing its elements over every depth block in order, as gemm_one does: the same bits.
template <class T>
void gemm_small_rows(const Batches& bt, const Mat& A, const Mat& B, const Mat& C, T alpha, T beta) {
  const int64_t M = C.rows, N = C.cols, K = A.cols;
  const int64_t lanes = 16;  // ranges start on 64-byte lines
  const int64_t parts = std::clamp<int64_t>(
      std::min<int64_t>(omp_in_parallel() ? 1 : omp_get_max_threads(), ceil_div(N, lanes)), 1,
      int64_t(M * N * K / kGemmParallelWork) + 1);
  Scratch scratch(size_t(M * (N + parts * lanes)) * sizeof(T));
  for (int64_t t = 0; t < bt.count; ++t) {
    const T* a = reinterpret_cast<const T*>(A.data) + bt.a[size_t(t)];
    const T* b = reinterpret_cast<const T*>(B.data) + bt.b[size_t(t)];
    T* c = reinterpret_cast<T*>(C.data) + bt.dst[size_t(t)];
    parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const auto [j0, j1] = column_range(N, parts, part, lanes);
        if (j0 >= j1) continue;
        T* acc = static_cast<T*>(scratch.get()) + M * (j0 + part * lanes);
        for (int64_t p0 = 0; p0 < K; p0 += kGemmDepth) {
          simd::gemm_small_rows(a + p0 * A.cs, A.rs, A.cs, b + p0 * B.rs + j0, B.rs, M, j1 - j0,
                                std::min(kGemmDepth, K - p0), c + j0, C.rs, alpha,
                                p0 == 0 ? beta : T(1), acc);
        }
      }
    });
  }
}

// A few rows against a B with contiguous columns (x @ W^T: every Linear layer in decoding, the
// output layer, q @ k^T per head), read straight from W by a kernel that transposes its runs in
// registers: W crosses memory once and is never copied (packing it, even a few panels at a time
// in L2, left the memory idle while the panels were written). Same k order and depth blocks as
// gemm_one: the same bits. 16-bit A is widened a depth block at a time, 16-bit C goes through an
// f32 buffer kNarrowCols wide. Many products (one per head) go one per thread; fewer split their
// columns in equal ranges.
template <class In, class Out>
void gemm_small_rows_transposed(const Batches& bt, const Mat& A, const Mat& B, const Mat& C,
                                acc_t<In> alpha, acc_t<In> beta) {
  using T = acc_t<In>;
  constexpr bool kWidening = !std::is_same_v<In, T>, kNarrowing = !std::is_same_v<Out, T>;
  const int64_t M = C.rows, N = C.cols, K = A.cols;
  OX_ASSERT(!kNarrowing || K <= kGemmDepth, "a 16-bit C narrowed after one depth block only");
  const bool nested = omp_in_parallel();  // then this thread alone runs every item below
  const int64_t threads = nested ? 1 : omp_get_max_threads();
  const double work = double(M) * double(N) * double(K);
  const bool by_batch = bt.count >= threads || work < kGemmParallelWork;
  const int64_t parts = by_batch ? 1 : std::min(threads, ceil_div(N, kNarrowCols));
  // Per thread, allocated before the team starts: A's widened depth block, f32 C for 16-bit C.
  const int64_t a_elems = kWidening ? M * std::min(K, kGemmDepth) : 0;
  const int64_t slot_elems = a_elems + (kNarrowing ? M * kNarrowCols : 0);
  Scratch scratch(std::max<size_t>(size_t(threads * slot_elems) * sizeof(T), 1));
  auto columns = [&](int64_t t, int64_t j0, int64_t j1) {
    const In* a = reinterpret_cast<const In*>(A.data) + bt.a[size_t(t)];
    const In* b = reinterpret_cast<const In*>(B.data) + bt.b[size_t(t)] + j0 * B.cs;
    Out* c = reinterpret_cast<Out*>(C.data) + bt.dst[size_t(t)] + j0 * C.cs;
    T* const ap = static_cast<T*>(scratch.get()) + (nested ? 0 : omp_get_thread_num()) * slot_elems;
    T* const cp = ap + a_elems;
    for (int64_t p0 = 0; p0 < K; p0 += kGemmDepth) {
      const int64_t kc = std::min(kGemmDepth, K - p0);
      const T block_beta = p0 == 0 ? beta : T(1);
      const T* ak = nullptr;
      int64_t ars = A.rs, acs = A.cs;
      if constexpr (kWidening) {
        for (int64_t i = 0; i < M; ++i)
          for (int64_t p = 0; p < kc; p += kNarrowCols)  // widen_run's runs are that long at most
            widen_run(a + i * A.rs + (p0 + p) * A.cs, A.cs, std::min(kNarrowCols, kc - p),
                      ap + i * kc + p);
        ak = ap, ars = kc, acs = 1;
      } else {
        ak = a + p0 * A.cs;
      }
      if constexpr (!kNarrowing) {
        simd::gemm_small_rows_transposed(ak, ars, acs, b + p0, B.cs, M, j1 - j0, kc, c, C.rs, C.cs,
                                         alpha, block_beta);
      } else {
        for (int64_t j = 0; j < j1 - j0; j += kNarrowCols) {
          const int64_t w = std::min(kNarrowCols, j1 - j0 - j);
          Out* const ct = c + j * C.cs;
          if (block_beta != T(0))
            for (int64_t i = 0; i < M; ++i) widen_run(ct + i * C.rs, C.cs, w, cp + i * kNarrowCols);
          simd::gemm_small_rows_transposed(ak, ars, acs, b + p0 + j * B.cs, B.cs, M, w, kc, cp,
                                           kNarrowCols, 1, alpha, block_beta);
          for (int64_t i = 0; i < M; ++i) narrow_run(cp + i * kNarrowCols, w, ct + i * C.rs, C.cs);
        }
      }
    }
  };
  if (by_batch) {
    const int64_t grain = std::max<int64_t>(1, int64_t(kGemmParallelWork / std::max(work, 1.0)));
    parallel_for(0, bt.count, grain, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) columns(t, 0, N);
    });
    return;
  }
  for (int64_t t = 0; t < bt.count; ++t) {
    parallel_for(0, parts, 1, [&](int64_t begin, int64_t end) {
      for (int64_t part = begin; part < end; ++part) {
        const auto [j0, j1] = column_range(N, parts, part, kNarrowCols);
        if (j0 < j1) columns(t, j0, j1);
      }
    });
  }
}

template <class In, class Out>
void gemm_packed(const Batches& bt, Mat A, Mat B, Mat C, acc_t<In> alpha, acc_t<In> beta) {
  if constexpr (std::is_same_v<In, Out> && !is_half_v<In>) {
    if (C.rows <= simd::kSmallRows && B.cs == 1 && C.cs == 1 && B.cols > 1)
      return gemm_small_rows<In>(bt, A, B, C, alpha, beta);
  }
  if (C.rows <= simd::kSmallRows && B.rs == 1 && B.cs != 1)
    return gemm_small_rows_transposed<In, Out>(bt, A, B, C, alpha, beta);
  // The kernel stores whole rows of C's tiles fast: a column-major C computes C^T = B^T A^T.
  // So does a thin C (N below one tile), which then runs on short tiles instead of padded ones.
  // The swap changes no bits: each element still sums the same products in k order.
  const int64_t nr = simd::gemm_tile(static_cast<acc_t<In>*>(nullptr)).nr;
  if ((C.cs != 1 && C.rs == 1) || (C.cols < nr && C.rows > C.cols))
    return gemm_packed_oriented<In, Out>(Batches{bt.count, bt.dst, bt.b, bt.a}, B.t(), A.t(), C.t(),
                                         alpha, beta);
  gemm_packed_oriented<In, Out>(bt, A, B, C, alpha, beta);
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

// dst = beta * dst + alpha * a @ b on the packed GEMM: A and B of In, dst of Out (see gemm_one).
template <class In, class Out>
void matmul_packed(StridedArray dst, StridedArray a, StridedArray b, const Scalar& alpha,
                   const Scalar& beta) {
  try_fold_batch(dst, a, b);
  const Batches bt = batch_offsets(dst, a, b);
  gemm_packed<In, Out>(bt, mat_of(a), mat_of(b), mat_of(dst), scalar_to<acc_t<In>>(alpha),
                       scalar_to<acc_t<In>>(beta));
}

// dst = beta * dst + alpha * a @ b for the integer dtypes: the loop needs B's columns
// contiguous.
template <class T>
void matmul_loop(StridedArray dst, StridedArray a, StridedArray b, const Scalar& alpha_s,
                 const Scalar& beta_s) {
  const T alpha = scalar_to<T>(alpha_s), beta = scalar_to<T>(beta_s);
  Packed pb;
  const Mat mb = mat_of(b);
  if (mb.cols > 1 && mb.cs != 1) b = (pb = pack(b, b.dtype)).array;
  try_fold_batch(dst, a, b);
  const Batches bt = batch_offsets(dst, a, b);
  gemm_loop<T>(bt, mat_of(a), mat_of(b), mat_of(dst), alpha, beta);
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
      // PyTorch's CPU rule: products and sums in f32, one rounding at the end. A and B are
      // widened as their panels are packed; C is narrowed tile by tile when one depth block
      // covers K, else summed across the blocks in an f32 copy that is narrowed once.
      if (a.shape.back() <= kGemmDepth) return matmul_packed<T, T>(dst, a, b, alpha, beta);
      Packed pd = pack(dst, kF32, beta.to_double() != 0);
      matmul_packed<T, float>(pd.array, a, b, alpha, beta);
      cpu::copy(dst, pd.array);
    } else if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      matmul_packed<T, T>(dst, a, b, alpha, beta);
    } else if constexpr (std::is_same_v<T, bool>) {
      OX_ASSERT(false, "matmul kernel given bool");
    } else {
      matmul_loop<T>(dst, a, b, alpha, beta);
    }
  });
}

void set_blas_threads(int n) { openblas_set_num_threads(n); }

std::string blas_config() {
  return std::string(openblas_get_config()) + ", " + openblas_get_corename() + " kernels";
}

}  // namespace ox::cpu
