#pragma once
// The elementwise kernel templates: one loop over strided runs, a functor per op (the shared
// functors of core/ops/, inlined). Contiguous runs (and runs where an input is a broadcast
// scalar) take tight loops the compiler vectorizes.

#include <type_traits>

#include "backend/cpu/convert.h"
#include "backend/cpu/loops.h"
#include "core/dispatch.h"
#include "core/elementwise_ops.h"
#include "core/ops/scalar.h"

namespace ox::cpu {

// Loads/stores convert 16-bit floats to and from f32, so functors see compute types only.
template <class T>
inline compute_t<T> load(const char* p) {
  return static_cast<compute_t<T>>(*reinterpret_cast<const T*>(p));
}
template <class T, class V>
inline void store(char* p, V v) {
  *reinterpret_cast<T*>(p) = convert<T>(v);
}

// dst[i] = f(src[i]).
template <class Out, class In, class F>
void map_unary(const StridedArray& dst, const StridedArray& src, F f) {
  parallel_runs<2>({&dst, &src}, [&](const std::array<char*, 2>& p,
                                     const std::array<int64_t, 2>& step, int64_t n) {
    if (step[0] == sizeof(Out) && step[1] == sizeof(In)) {
      Out* d = reinterpret_cast<Out*>(p[0]);
      const In* s = reinterpret_cast<const In*>(p[1]);
      for (int64_t i = 0; i < n; ++i) d[i] = convert<Out>(f(static_cast<compute_t<In>>(s[i])));
      return;
    }
    for (int64_t i = 0; i < n; ++i) store<Out>(p[0] + i * step[0], f(load<In>(p[1] + i * step[1])));
  });
}

// dst[i] = f(a[i], b[i]); a and b share the dtype In.
template <class Out, class In, class F>
void map_binary(const StridedArray& dst, const StridedArray& a, const StridedArray& b, F f) {
  parallel_runs<3>({&dst, &a, &b}, [&](const std::array<char*, 3>& p,
                                       const std::array<int64_t, 3>& step, int64_t n) {
    using C = compute_t<In>;
    Out* d = reinterpret_cast<Out*>(p[0]);
    const In* x = reinterpret_cast<const In*>(p[1]);
    const In* y = reinterpret_cast<const In*>(p[2]);
    if (step[0] == sizeof(Out)) {
      if (step[1] == sizeof(In) && step[2] == sizeof(In)) {
        for (int64_t i = 0; i < n; ++i) d[i] = convert<Out>(f(C(x[i]), C(y[i])));
        return;
      }
      if (step[1] == sizeof(In) && step[2] == 0) {
        const C yv = C(y[0]);
        for (int64_t i = 0; i < n; ++i) d[i] = convert<Out>(f(C(x[i]), yv));
        return;
      }
      if (step[1] == 0 && step[2] == sizeof(In)) {
        const C xv = C(x[0]);
        for (int64_t i = 0; i < n; ++i) d[i] = convert<Out>(f(xv, C(y[i])));
        return;
      }
    }
    for (int64_t i = 0; i < n; ++i)
      store<Out>(p[0] + i * step[0], f(load<In>(p[1] + i * step[1]), load<In>(p[2] + i * step[2])));
  });
}

// Dispatch helpers over the dtype families the op layer lets through.
// The dtype switch of dispatch_dtype, narrowed to the families a kernel is instantiated for:
// the op layer never sends others, so they are internal errors, not extra instantiations.
template <class Keep, class F>
auto dispatch_family(DType dt, F&& f) {
  using R = decltype(f.template operator()<typename Keep::probe>());
  return dispatch_dtype(dt, [&]<class T>() -> R {
    if constexpr (Keep::template value<T>) {
      return f.template operator()<T>();
    } else {
      OX_ASSERT(false, "kernel not instantiated for ", dt);
      if constexpr (!std::is_void_v<R>) return R{};
    }
  });
}
struct FloatingFamily {
  using probe = float;  // a member, to name the functor's return type
  template <class T>
  static constexpr bool value = std::is_floating_point_v<compute_t<T>>;
};
struct IntegralFamily {
  using probe = int64_t;
  template <class T>
  static constexpr bool value = !std::is_floating_point_v<compute_t<T>>;
};

// The dtypes an elementwise op's dtype class takes (core/elementwise_ops.h).
template <DTypeClass kClass>
struct ClassFamily {
  using probe = std::conditional_t<class_takes(kClass, kF32), float, int64_t>;
  template <class T>
  static constexpr bool value = class_takes(kClass, dtype_of<T>);
};

template <class F>
auto dispatch_floating(DType dt, F&& f) {
  return dispatch_family<FloatingFamily>(dt, std::forward<F>(f));
}
template <class F>
auto dispatch_integral_or_bool(DType dt, F&& f) {
  return dispatch_family<IntegralFamily>(dt, std::forward<F>(f));
}

// Integer arithmetic that wraps modulo 2^bits instead of overflowing (core/ops/scalar.h).
using elementwise::wrap_add;
using elementwise::wrap_mul;
using elementwise::wrap_sub;

}  // namespace ox::cpu
