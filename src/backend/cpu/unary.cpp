// Unary elementwise ops: each row of OX_UNARY_OPS (core/elementwise_ops.h) runs its shared
// functor (core/ops/unary_math.h) over map_unary for the dtypes of its class; the ops Highway
// vectorizes go to their SIMD kernel instead (simd/math.cpp), for every layout.

#include <algorithm>
#include <iterator>

#include "backend/cpu/elementwise.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/simd/simd.h"
#include "core/ops/unary_math.h"

namespace ox::cpu {

namespace {

// dst[i] = op(src[i]) by the op's SIMD kernel for every layout: contiguous runs of the compute
// type go straight to it, other runs through a buffer, so a result never depends on the layout.
template <class T>
void map_unary_simd(UnaryOp op, const StridedArray& dst, const StridedArray& src) {
  using C = compute_t<T>;
  parallel_runs<2>({&dst, &src}, [op](const std::array<char*, 2>& p,
                                      const std::array<int64_t, 2>& step, int64_t n) {
    if constexpr (std::is_same_v<T, C>) {
      if (step[0] == sizeof(T) && step[1] == sizeof(T))
        return simd::unary(op, reinterpret_cast<const C*>(p[1]), reinterpret_cast<C*>(p[0]), n);
    }
    constexpr int64_t kBuffer = 256;
    C buf[kBuffer];
    for (int64_t i0 = 0; i0 < n; i0 += kBuffer) {
      const int64_t m = std::min(kBuffer, n - i0);
      char* out = p[0] + i0 * step[0];
      const char* in = p[1] + i0 * step[1];
      if constexpr (is_half_v<T>) {
        if (step[0] == sizeof(T) && step[1] == sizeof(T)) {  // a contiguous 16-bit run
          simd::widen(reinterpret_cast<const T*>(in), buf, m);
          simd::unary(op, buf, buf, m);
          simd::narrow(buf, reinterpret_cast<T*>(out), m);
          continue;
        }
      }
      for (int64_t i = 0; i < m; ++i) buf[i] = load<T>(in + i * step[1]);
      simd::unary(op, buf, buf, m);
      for (int64_t i = 0; i < m; ++i) store<T>(out + i * step[0], buf[i]);
    }
  });
}

// One row of the table for one dtype: its functor, inlined into map_unary.
template <UnaryOp kOp, template <class> class F, class T>
void unary_loop(const StridedArray& dst, const StridedArray& src, const UnaryParams& p) {
  using Out = std::conditional_t<unary_class(kOp) == DTypeClass::AnyToBool, bool, T>;
  map_unary<Out, T>(dst, src, elementwise::make_unary<F, compute_t<T>>(p));
}

// The row for each dtype its class takes, by its vector kernel where it has one. (The row's
// constants are used outside the generic lambdas: GCC 12 fails on them inside one.)
template <UnaryOp kOp, template <class> class F>
void unary_kernel(const StridedArray& dst, const StridedArray& src, const UnaryParams& p) {
  dispatch_family<ClassFamily<unary_class(kOp)>>(src.dtype, [&]<class T>() -> void {
    if constexpr (simd::has_unary(kOp, dtype_of<T>))
      map_unary_simd<T>(kOp, dst, src);
    else
      unary_loop<kOp, F, T>(dst, src, p);
  });
}

// The dispatch, generated from the table: entry i runs op i, so every row has its kernel.
using UnaryKernel = void (*)(const StridedArray&, const StridedArray&, const UnaryParams&);
#define OX_UNARY_KERNEL(code, name, cls, functor) \
  &unary_kernel<UnaryOp::code, elementwise::functor>,
constexpr UnaryKernel kUnaryKernels[] = {OX_UNARY_OPS(OX_UNARY_KERNEL)};
#undef OX_UNARY_KERNEL
static_assert(std::size(kUnaryKernels) == kUnaryOpCount, "a unary op without a CPU kernel");

}  // namespace

void unary(UnaryOp op, const StridedArray& dst, const StridedArray& src, const UnaryParams& p) {
  OX_ASSERT(int(op) < kUnaryOpCount, "invalid unary op ", int(op));
  kUnaryKernels[int(op)](dst, src, p);
}

}  // namespace ox::cpu
