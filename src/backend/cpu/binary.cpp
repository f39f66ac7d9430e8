// Binary elementwise ops: each row of OX_BINARY_OPS (core/elementwise_ops.h) runs its shared
// functor (core/ops/binary_math.h) over map_binary for the dtypes of its class; the rows with a
// SIMD kernel (simd::has_binary) go to it instead, for every layout. And where.

#include <algorithm>
#include <iterator>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd/simd.h"
#include "core/ops/binary_math.h"

namespace ox::cpu {

namespace {

// dst[i] = op(a[i], b[i]) by the op's SIMD kernel for every layout: contiguous runs of the
// compute type go straight to it, other runs through buffers, so a result never depends on the
// layout.
template <class T>
void map_binary_simd(BinaryOp op, const StridedArray& dst, const StridedArray& a,
                     const StridedArray& b) {
  using C = compute_t<T>;
  parallel_runs<3>({&dst, &a, &b}, [op](const std::array<char*, 3>& p,
                                        const std::array<int64_t, 3>& step, int64_t n) {
    const bool contiguous = step[0] == sizeof(T) && step[1] == sizeof(T) && step[2] == sizeof(T);
    if constexpr (std::is_same_v<T, C>) {
      if (contiguous)
        return simd::binary(op, reinterpret_cast<const C*>(p[1]), reinterpret_cast<const C*>(p[2]),
                            reinterpret_cast<C*>(p[0]), n);
    }
    constexpr int64_t kBuffer = 256;
    C x[kBuffer], y[kBuffer];
    for (int64_t i0 = 0; i0 < n; i0 += kBuffer) {
      const int64_t m = std::min(kBuffer, n - i0);
      char* out = p[0] + i0 * step[0];
      const char* in_a = p[1] + i0 * step[1];
      const char* in_b = p[2] + i0 * step[2];
      if constexpr (is_half_v<T>) {
        if (contiguous) {
          simd::widen(reinterpret_cast<const T*>(in_a), x, m);
          simd::widen(reinterpret_cast<const T*>(in_b), y, m);
          simd::binary(op, x, y, x, m);
          simd::narrow(x, reinterpret_cast<T*>(out), m);
          continue;
        }
      }
      for (int64_t i = 0; i < m; ++i) {
        x[i] = load<T>(in_a + i * step[1]);
        y[i] = load<T>(in_b + i * step[2]);
      }
      simd::binary(op, x, y, x, m);
      for (int64_t i = 0; i < m; ++i) store<T>(out + i * step[0], x[i]);
    }
  });
}

// One row of the table for one dtype: its functor, inlined into map_binary.
template <BinaryOp kOp, template <class> class F, class T>
void binary_loop(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
                 double alpha) {
  using C = compute_t<T>;
  using Out = std::conditional_t<binary_returns_bool(kOp), bool, T>;
  if constexpr (binary_takes_alpha(kOp) && !std::is_same_v<C, bool>) {  // bool ignores alpha
    if (alpha != 1) return map_binary<Out, T>(dst, a, b, elementwise::WithAlpha<F, C>(alpha));
  }
  map_binary<Out, T>(dst, a, b, F<C>{});
}

// The row for each dtype its class takes, by its vector kernel where it has one. (F<C> is named
// outside the generic lambda: GCC 12 fails on a template template parameter applied inside one.)
template <BinaryOp kOp, template <class> class F>
void binary_kernel(const StridedArray& dst, const StridedArray& a, const StridedArray& b,
                   double alpha) {
  dispatch_family<ClassFamily<binary_class(kOp)>>(a.dtype, [&]<class T>() -> void {
    if constexpr (simd::has_binary(kOp, dtype_of<T>))
      map_binary_simd<T>(kOp, dst, a, b);
    else
      binary_loop<kOp, F, T>(dst, a, b, alpha);
  });
}

// The dispatch, generated from the table: entry i runs op i, so every row has its kernel.
using BinaryKernel = void (*)(const StridedArray&, const StridedArray&, const StridedArray&,
                              double);
#define OX_BINARY_KERNEL(code, name, cls, functor) \
  &binary_kernel<BinaryOp::code, elementwise::functor>,
constexpr BinaryKernel kBinaryKernels[] = {OX_BINARY_OPS(OX_BINARY_KERNEL)};
#undef OX_BINARY_KERNEL
static_assert(std::size(kBinaryKernels) == kBinaryOpCount, "a binary op without a CPU kernel");

}  // namespace

void binary(BinaryOp op, const StridedArray& dst, const StridedArray& a, const StridedArray& b,
            double alpha) {
  OX_ASSERT(int(op) < kBinaryOpCount, "invalid binary op ", int(op));
  kBinaryKernels[int(op)](dst, a, b, alpha);
}

void where(const StridedArray& dst, const StridedArray& cond, const StridedArray& a,
           const StridedArray& b) {
  dispatch_dtype(dst.dtype, [&]<class T>() {
    parallel_runs<4>({&dst, &cond, &a, &b}, [](const std::array<char*, 4>& p,
                                               const std::array<int64_t, 4>& step, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        const bool c = *reinterpret_cast<const bool*>(p[1] + i * step[1]);
        *reinterpret_cast<T*>(p[0] + i * step[0]) =
            *reinterpret_cast<const T*>(c ? p[2] + i * step[2] : p[3] + i * step[3]);
      }
    });
  });
}

}  // namespace ox::cpu
