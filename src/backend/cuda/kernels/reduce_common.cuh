#pragma once
// Reductions and scans on the device: the launch parameters and plans (plain C++, shared with
// the host launchers in backend/cuda/reduce.cpp and tested on the CPU), and under nvcc the kernel
// bodies the families kernels/reduce_{sum,extreme,stats}.cu and kernels/scan.cu instantiate.
//
// Determinism: the plan is a function of (outputs, reduced extent) alone, and every output is
// computed by one fixed sequence of operations whatever grid runs it:
//   per thread: one thread folds the output's elements in row-major order;
//   per block:  the reduced range is cut into `nchunks` chunks of `chunk` elements; thread t of
//               a 256-thread block folds elements t, t + 256, ... of a chunk in order, then a
//               fixed shared-memory tree combines the 256 partials; with several chunks each
//               chunk's result goes to a scratch buffer and a second launch (stage 1) combines
//               an output's chunks in chunk order.
// Scans: a row is cut into `nchunks` chunks; one thread per chunk folds its total (stage 0),
// one thread per row turns the totals into exclusive carries in chunk order (stage 1), and one
// thread per chunk scans it sequentially from its carry (stage 2). With one chunk only stage 2
// runs and the result is the sequential scan.

#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels/offsets.cuh"
#include "core/host_device.h"

namespace ox::cuda::kernels {

inline constexpr int kReduceBlock = 256;  // threads of a per-block reduction (fixed)
// Per-thread plan: reduced extents below this, or at least this many outputs.
inline constexpr int64_t kReducePerThreadBelow = 128;
inline constexpr int64_t kReducePerThreadOutputs = int64_t(1) << 20;
// Per-block plan: about this many (output, chunk) blocks when outputs are few, each chunk at
// least kReduceMinChunk elements.
inline constexpr int64_t kReduceTargetBlocks = 1024;
inline constexpr int64_t kReduceMinChunk = 8192;
// Bytes of scratch per (output, chunk) partial: the largest accumulator ({f64, i64}).
inline constexpr int64_t kPartialBytes = 16;

struct ReducePlan {
  bool per_block = false;
  int64_t nchunks = 1;
  int64_t chunk = 0;  // reduced elements per chunk; the last chunk may be shorter
};

// The plan for n_out outputs of n_red elements each (n_out > 0).
inline ReducePlan plan_reduce(int64_t n_out, int64_t n_red) {
  ReducePlan p;
  p.chunk = n_red;
  if (n_red < kReducePerThreadBelow || n_out >= kReducePerThreadOutputs) return p;
  p.per_block = true;
  int64_t n = ceil_div(kReduceTargetBlocks, n_out);
  const int64_t most = n_red / kReduceMinChunk;  // chunks of at least kReduceMinChunk
  if (n > most) n = most;
  if (n < 1) n = 1;
  p.chunk = ceil_div(n_red, n);
  p.nchunks = ceil_div(n_red, p.chunk);
  return p;
}

struct ScanPlan {
  int64_t nchunks = 1;
  int64_t chunk = 0;
};
inline constexpr int64_t kScanSequentialRows = 16384;   // this many rows: one thread per row
inline constexpr int64_t kScanSequentialLength = 1024;  // rows this short: one thread per row
inline constexpr int64_t kScanTargetThreads = 65536;
inline constexpr int64_t kScanMinChunk = 256;

// The plan for n_rows rows of n elements (both > 0).
inline ScanPlan plan_scan(int64_t n_rows, int64_t n) {
  ScanPlan p;
  p.chunk = n;
  if (n_rows >= kScanSequentialRows || n <= kScanSequentialLength) return p;
  int64_t c = ceil_div(kScanTargetThreads, n_rows);
  const int64_t most = n / kScanMinChunk;  // chunks of at least kScanMinChunk
  if (c > most) c = most;
  if (c < 1) c = 1;
  p.chunk = ceil_div(n, c);
  p.nchunks = ceil_div(n, p.chunk);
  return p;
}

// The one kernel parameter of every reduction kernel (passed by value).
struct ReduceArgs {
  Offsets<3> out;  // over the output shape: dst, src (its output dims), values (else dst)
  Offsets<1> red;  // over the reduced shape: src
  int64_t n_out = 0, n_red = 0;
  int64_t nchunks = 1, chunk = 0;
  int32_t per_block = 0;
  int32_t stage = 0;      // 0: read the elements; 1: combine the partials of each output
  int32_t dense_dst = 0;  // write dst[o] (a per-output scratch of an earlier pass)
  int32_t pad = 0;
  const void* src = nullptr;
  void* dst = nullptr;
  void* values = nullptr;       // ArgMax/ArgMin: the values too, when not null
  void* partial = nullptr;      // kPartialBytes per (output, chunk) when nchunks > 1
  const void* param = nullptr;  // per-output values from an earlier pass, dense
  double p = 2;                 // Norm
  double correction = 1;        // Var, Std
};

// The one kernel parameter of every scan kernel.
struct ScanArgs {
  Offsets<3> outer;  // over the leading dims: dst, src, indices
  int64_t n_rows = 0, n = 0;
  int64_t s_dst = 0, s_src = 0, s_idx = 0;  // strides along the scanned dim
  int64_t nchunks = 1, chunk = 0;
  int32_t stage = 2;  // 0: chunk totals; 1: carries per row; 2: the scan
  int32_t pad = 0;
  const void* src = nullptr;
  void* dst = nullptr;
  int64_t* idx = nullptr;
  void* partial = nullptr;  // kPartialBytes per (row, chunk) when nchunks > 1
};

// ---- The order-sensitive combines, host and device (tested on the CPU) ---------------------

template <class C>
OX_HOST_DEVICE inline bool is_nan_value(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return x != x;
  } else {
    return false;
  }
}

// ArgMax/ArgMin: whether (bv, bi) comes before (av, ai). A NaN before any number (the lower
// index among NaNs), then the extreme, then the lower index among equals: a total order, so
// the selected index is the first of the extreme (of the first NaN) in any combining order.
template <bool IsMax, class C>
OX_HOST_DEVICE inline bool arg_first(C bv, int64_t bi, C av, int64_t ai) {
  const bool bn = is_nan_value(bv), an = is_nan_value(av);
  if (bn || an) return bn && (!an || bi < ai);
  if (IsMax ? (bv > av) : (bv < av)) return true;
  return bv == av && bi < ai;
}

// cummax/cummin: the running value and its index (-1: nothing seen yet).
template <class C>
struct Running {
  C v;
  int64_t i;
};
// Whether x replaces the running value v: a NaN always, nothing replaces a NaN, ties do.
template <bool IsMax, class C>
OX_HOST_DEVICE inline bool running_takes(C x, C v) {
  if (is_nan_value(x)) return true;
  if (is_nan_value(v)) return false;
  return IsMax ? x >= v : x <= v;
}
template <bool IsMax, class C>
OX_HOST_DEVICE inline Running<C> running_step(Running<C> s, C x, int64_t i) {
  return s.i < 0 || running_takes<IsMax>(x, s.v) ? Running<C>{x, i} : s;
}
// The running value after a chunk whose own running value (from nothing) is `total`, entered
// with `carry`: what the sequential scan reaches (a NaN in the chunk wins, its last one; a NaN
// carry stays; else the chunk's last extreme when it ties or beats the carry).
template <bool IsMax, class C>
OX_HOST_DEVICE inline Running<C> running_combine(Running<C> carry, Running<C> total) {
  if (total.i < 0) return carry;
  return carry.i < 0 || running_takes<IsMax>(total.v, carry.v) ? total : carry;
}

}  // namespace ox::cuda::kernels

#ifdef __CUDACC__

#include "backend/cuda/kernels/common.cuh"

namespace ox::cuda::kernels {

template <class T>
struct ComputeOf {
  using type = T;
};
template <>
struct ComputeOf<F16> {
  using type = float;
};
template <>
struct ComputeOf<BF16> {
  using type = float;
};
// The type arithmetic on storage type T is done in (core/dispatch.h's compute_t).
template <class T>
using compute_of = typename ComputeOf<T>::type;

template <class T>
__device__ inline compute_of<T> load_compute(const T* p) {
  if constexpr (std::is_same_v<T, F16>) {
    return ox::detail::half_bits_to_float(p->bits);
  } else if constexpr (std::is_same_v<T, BF16>) {
    return ox::detail::bfloat16_bits_to_float(p->bits);
  } else {
    return *p;
  }
}

// A compute-type value back to storage type T (exact for a value loaded from a T).
template <class T>
__device__ inline T store_compute(compute_of<T> v) {
  if constexpr (std::is_floating_point_v<compute_of<T>>) {
    return from_double<T>(static_cast<double>(v));
  } else {
    return v;
  }
}

template <class C>
__device__ inline bool nan_of(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return x != x;
  } else {
    return false;
  }
}

template <class C>
__device__ inline C quiet_nan_of() {
  if constexpr (std::is_same_v<C, float>) {
    return __int_as_float(0x7fc00000);
  } else {
    return __longlong_as_double(0x7ff8000000000000LL);
  }
}

// The offset in src of reduced index i.
__device__ inline int64_t reduced_offset(const Offsets<1>& red, int64_t i) {
  if (red.ndim == 0) return 0;
  if (red.ndim == 1) return i * red.strides[0][0];
  int64_t off[1];
  red.get(i, off);
  return off[0];
}

struct NoParam {};

// i64 arithmetic modulo 2^64 (core/ops/scalar.h's wrap_add and wrap_mul).
__device__ inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
__device__ inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

template <class Op>
__device__ inline auto param_of(const ReduceArgs& a, int64_t o) {
  if constexpr (Op::kParam) {
    return load_compute(static_cast<const typename Op::ParamStore*>(a.param) + o);
  } else {
    return NoParam{};
  }
}

// Where output o goes: dst + its offset, or dst[o] for a dense scratch.
template <class Out>
__device__ inline Out& out_at(const ReduceArgs& a, int64_t o, const int64_t (&off)[3]) {
  return static_cast<Out*>(a.dst)[a.dense_dst ? o : off[0]];
}

// The body of every reduction kernel; Op: In (storage), Acc, kParam/ParamStore, init(),
// map(x, i, param), combine(a, b), finish(args, o, offsets, acc, param).
template <class Op>
__device__ inline void reduce_body(const ReduceArgs& a) {
  using In = typename Op::In;
  using Acc = typename Op::Acc;
  static_assert(sizeof(Acc) <= kPartialBytes, "partial slot too small");
  const Op op(a);
  const In* src = static_cast<const In*>(a.src);
  Acc* partial = static_cast<Acc*>(a.partial);
  if (a.stage == 1) {  // combine each output's chunk partials in chunk order
    grid_stride(a.n_out, [&](int64_t o) {
      int64_t off[3];
      a.out.get(o, off);
      const Acc* p = partial + o * a.nchunks;
      Acc acc = p[0];
      for (int64_t c = 1; c < a.nchunks; ++c) acc = op.combine(acc, p[c]);
      op.finish(a, o, off, acc, param_of<Op>(a, o));
    });
    return;
  }
  if (!a.per_block) {  // one thread per output, its elements in row-major order
    grid_stride(a.n_out, [&](int64_t o) {
      int64_t off[3];
      a.out.get(o, off);
      const auto param = param_of<Op>(a, o);
      const In* row = src + off[1];
      Acc acc = op.init();
      for (int64_t i = 0; i < a.n_red; ++i)
        acc = op.combine(acc, op.map(load_compute(row + reduced_offset(a.red, i)), i, param));
      op.finish(a, o, off, acc, param);
    });
    return;
  }
  // One block per (output, chunk); blockDim.x == kReduceBlock.
  __shared__ __align__(16) unsigned char raw[kReduceBlock * sizeof(Acc)];
  Acc* sh = reinterpret_cast<Acc*>(raw);
  const int t = int(threadIdx.x);
  const int64_t tasks = a.n_out * a.nchunks;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t o = task / a.nchunks, c = task - o * a.nchunks;
    int64_t off[3];
    a.out.get(o, off);
    const auto param = param_of<Op>(a, o);
    const In* row = src + off[1];
    const int64_t begin = c * a.chunk;
    const int64_t end = a.n_red - begin < a.chunk ? a.n_red : begin + a.chunk;
    Acc acc = op.init();
    for (int64_t i = begin + t; i < end; i += kReduceBlock)
      acc = op.combine(acc, op.map(load_compute(row + reduced_offset(a.red, i)), i, param));
    sh[t] = acc;
    __syncthreads();
    for (int s = kReduceBlock / 2; s > 0; s >>= 1) {
      if (t < s) sh[t] = op.combine(sh[t], sh[t + s]);
      __syncthreads();
    }
    if (t == 0) {
      if (a.nchunks == 1) {
        op.finish(a, o, off, sh[0], param);
      } else {
        partial[task] = sh[0];
      }
    }
    __syncthreads();  // sh[0] is read before the next task writes sh
  }
}

// ---- Scans -------------------------------------------------------------------------------

// The body of every scan kernel; Op: In, Out, State, identity(), step(s, x, i),
// combine(carry, total), write(args, dst offset, idx offset, state).
template <class Op>
__device__ inline void scan_body(const ScanArgs& a) {
  using In = typename Op::In;
  using State = typename Op::State;
  static_assert(sizeof(State) <= kPartialBytes, "partial slot too small");
  const In* src = static_cast<const In*>(a.src);
  State* partial = static_cast<State*>(a.partial);
  if (a.stage == 1) {  // exclusive carries of each row's chunks, in chunk order
    grid_stride(a.n_rows, [&](int64_t r) {
      State* p = partial + r * a.nchunks;
      State carry = Op::identity();
      for (int64_t c = 0; c < a.nchunks; ++c) {
        const State total = p[c];
        p[c] = carry;
        carry = Op::combine(carry, total);
      }
    });
    return;
  }
  grid_stride(a.n_rows * a.nchunks, [&](int64_t task) {
    const int64_t r = task / a.nchunks, c = task - r * a.nchunks;
    int64_t off[3];
    a.outer.get(r, off);
    const int64_t begin = c * a.chunk;
    const int64_t end = a.n - begin < a.chunk ? a.n : begin + a.chunk;
    if (a.stage == 0) {
      State s = Op::identity();
      for (int64_t i = begin; i < end; ++i)
        s = Op::step(s, load_compute(src + off[1] + i * a.s_src), i);
      partial[task] = s;
      return;
    }
    State s = a.nchunks > 1 ? partial[task] : Op::identity();
    for (int64_t i = begin; i < end; ++i) {
      s = Op::step(s, load_compute(src + off[1] + i * a.s_src), i);
      Op::write(a, off[0] + i * a.s_dst, off[2] + i * a.s_idx, s);
    }
  });
}

}  // namespace ox::cuda::kernels

#endif  // __CUDACC__
