// The CPU's elementwise dispatch, generated from the tables of core/elementwise_ops.h: every row
// runs for exactly the dtypes its class takes (others are internal errors), and computes what
// the row's shared functor (core/ops/) computes, bit for bit, on contiguous and strided
// layouts. The ops with a vector kernel (simd::has_unary, has_binary) are compared with a
// tolerance: the CPU runs Highway's approximations for them, the functors are the libm
// definitions.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/convert.h"
#include "backend/cpu/simd/simd.h"
#include "core/dispatch.h"
#include "core/ops/binary_math.h"
#include "core/ops/unary_math.h"
#include "oxmera/core/error.h"

namespace ox {
namespace {

using cpu::convert;

Backend& cpu_backend() { return backend_for(DeviceType::CPU, "elementwise_dispatch_test"); }

// Edge values of dtype T: signed zeros, infinities and NaN for floats, extremes for integers.
template <class T>
std::vector<T> edge_values() {
  if constexpr (std::is_same_v<T, bool>) {
    return {false, true, true, false};
  } else if constexpr (std::is_integral_v<T>) {
    std::vector<T> v;
    for (int64_t x : {0, 1, -1, 2, -2, 3, -3, 7, -7, 8, 100, -100}) v.push_back(static_cast<T>(x));
    v.push_back(std::numeric_limits<T>::min());
    v.push_back(std::numeric_limits<T>::max());
    return v;
  } else {
    constexpr double inf = std::numeric_limits<double>::infinity();
    std::vector<T> v;
    for (double x : {0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, -2.5, 3.0, -7.0, 0.1, 20.5, -88.0, 100.0,
                     1e-3, 1e30, inf, -inf, std::numeric_limits<double>::quiet_NaN()})
      v.push_back(convert<T>(x));
    return v;
  }
}

// A 1-d array over bytes `data`, `stride` elements apart.
StridedArray array_of(std::vector<char>& data, int64_t n, int64_t stride, DType dt) {
  return StridedArray{data.data(), Shape{n}, Strides{stride}, dt, Device::cpu()};
}

// Element i of an array of `stride`, as raw bytes of `dt`.
template <class T>
void put(std::vector<char>& bytes, int64_t i, int64_t stride, T v) {
  std::memcpy(bytes.data() + i * stride * int64_t(sizeof(T)), &v, sizeof(T));
}
template <class T>
T get(const std::vector<char>& bytes, int64_t i, int64_t stride) {
  T v;
  std::memcpy(&v, bytes.data() + i * stride * int64_t(sizeof(T)), sizeof(T));
  return v;
}

// got == want bitwise, or (tolerant) both NaN, equal, or within rtol.
template <class T>
bool matches(T got, T want, bool tolerant, double floor = 0) {
  if (std::memcmp(&got, &want, sizeof(T)) == 0) return true;
  if (!tolerant) return false;
  const double g = static_cast<double>(convert<double>(got));
  const double w = static_cast<double>(convert<double>(want));
  if (std::isnan(g) || std::isnan(w)) return std::isnan(g) && std::isnan(w);
  if (std::isinf(g) || std::isinf(w)) return g == w;
  const double rtol = dtype_of<T> == kF32 ? 1e-5 : dtype_of<T> == kF64 ? 1e-13 : 1e-2;
  return std::fabs(g - w) <= rtol * std::fabs(w) + rtol * 1e-1 + floor;
}

template <class F>
bool is_internal_error(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind() == ErrorKind::Internal;
  }
  return false;
}

const UnaryParams kParams{.a = 0.5, .b = 3, .c = -4};  // every op's parameters, in range

// Row `op` on dtype T: the CPU's result, on a contiguous and a strided layout, against the
// functor's per element.
template <UnaryOp kOp, template <class> class F, class T>
void check_unary(int& checked) {
  constexpr DTypeClass kClass = unary_class(kOp);
  const DType dt = dtype_of<T>;
  const std::vector<T> x = edge_values<T>();
  const auto n = int64_t(x.size());
  if constexpr (!class_takes(kClass, dtype_of<T>)) {
    std::vector<char> in(n * sizeof(T)), out(n * sizeof(T));
    EXPECT_TRUE(is_internal_error([&] {
      cpu_backend().unary(kOp, array_of(out, n, 1, dt), array_of(in, n, 1, dt), kParams);
    })) << unary_name(kOp)
        << " on " << dt;
  } else {
    using C = compute_t<T>;
    using Out = std::conditional_t<kClass == DTypeClass::AnyToBool, bool, T>;
    const auto f = elementwise::make_unary<F, C>(kParams);
    for (int64_t stride : {1, 3}) {
      std::vector<char> in(n * stride * sizeof(T)), out(n * stride * sizeof(Out));
      for (int64_t i = 0; i < n; ++i) put(in, i, stride, x[i]);
      cpu_backend().unary(kOp, array_of(out, n, stride, dtype_of<Out>), array_of(in, n, stride, dt),
                          kParams);
      for (int64_t i = 0; i < n; ++i) {
        const Out want = convert<Out>(f(static_cast<C>(x[i])));
        const Out got = get<Out>(out, i, stride);
        EXPECT_TRUE(matches(got, want, cpu::simd::has_unary(kOp, dt)))
            << unary_name(kOp) << " on " << dt << " at " << double(convert<double>(x[i]))
            << " (stride " << stride << "): " << double(convert<double>(got)) << " vs "
            << double(convert<double>(want));
      }
    }
    ++checked;
  }
}

template <UnaryOp kOp, template <class> class F>
void check_unary_row(int& checked) {
  check_unary<kOp, F, float>(checked);
  check_unary<kOp, F, double>(checked);
  check_unary<kOp, F, Half>(checked);
  check_unary<kOp, F, BFloat16>(checked);
  check_unary<kOp, F, int64_t>(checked);
  check_unary<kOp, F, int32_t>(checked);
  check_unary<kOp, F, int16_t>(checked);
  check_unary<kOp, F, int8_t>(checked);
  check_unary<kOp, F, uint8_t>(checked);
  check_unary<kOp, F, bool>(checked);
}

int dtypes_taken(DTypeClass k) {
  int n = 0;
  for (DType dt : kAllDTypes) n += class_takes(k, dt);
  return n;
}

TEST(UnaryDispatch, EveryRowRunsItsFunctorOnTheDtypesOfItsClass) {
  int checked = 0, expected = 0;
#define OX_UNARY_ROW(code, name, cls, functor)                   \
  check_unary_row<UnaryOp::code, elementwise::functor>(checked); \
  expected += dtypes_taken(DTypeClass::cls);
  OX_UNARY_OPS(OX_UNARY_ROW)
#undef OX_UNARY_ROW
  EXPECT_EQ(checked, expected);
}

// What row `op` gives for x, y of dtype T, by its functor.
template <BinaryOp kOp, template <class> class F, class T>
auto expected_binary(T x, T y, double alpha) {
  using C = compute_t<T>;
  using Out = std::conditional_t<binary_returns_bool(kOp), bool, T>;
  if constexpr (binary_takes_alpha(kOp) && !std::is_same_v<C, bool>) {
    if (alpha != 1)
      return convert<Out>(
          elementwise::WithAlpha<F, C>(alpha)(static_cast<C>(x), static_cast<C>(y)));
  }
  return convert<Out>(F<C>{}(static_cast<C>(x), static_cast<C>(y)));
}

// Row `op` on dtype T over every pair of edge values, on a contiguous layout, with one operand
// broadcast (stride 0), and strided; with alpha 1 and -2 for the ops that take it.
template <BinaryOp kOp, template <class> class F, class T>
void check_binary(int& checked) {
  constexpr DTypeClass kClass = binary_class(kOp);
  const DType dt = dtype_of<T>;
  const std::vector<T> e = edge_values<T>();
  const auto m = int64_t(e.size());
  if constexpr (!class_takes(kClass, dtype_of<T>)) {
    std::vector<char> a(m * sizeof(T)), out(m * sizeof(T));
    EXPECT_TRUE(is_internal_error([&] {
      cpu_backend().binary(kOp, array_of(out, m, 1, dt), array_of(a, m, 1, dt),
                           array_of(a, m, 1, dt), 1.0);
    })) << binary_name(kOp)
        << " on " << dt;
  } else {
    using Out = std::conditional_t<kClass == DTypeClass::AnyToBool, bool, T>;
    const int64_t n = m * m;
    for (double alpha : {1.0, -2.0}) {
      if (alpha != 1 && !binary_takes_alpha(kOp)) continue;
      for (int layout = 0; layout < 3; ++layout) {
        // layout 0: both n-element operands; 1: a varies, b one value per row (stride 0);
        // 2: strided operands and output.
        const int64_t stride = layout == 2 ? 2 : 1;
        std::vector<char> a(n * stride * sizeof(T)), b(n * stride * sizeof(T));
        std::vector<char> out(n * stride * sizeof(Out));
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < m; ++j) {
            put(a, (i * m + j), stride, e[i]);
            put(b, (i * m + j), stride, e[j]);
          }
        StridedArray A{a.data(), Shape{m, m}, Strides{m * stride, stride}, dt, Device::cpu()};
        StridedArray B{b.data(), Shape{m, m}, Strides{m * stride, stride}, dt, Device::cpu()};
        const StridedArray D{out.data(), Shape{m, m}, Strides{m * stride, stride}, dtype_of<Out>,
                             Device::cpu()};
        if (layout == 1) {  // a[i, j] = e[j] along the run, b[i, j] = e[i] held
          A = StridedArray{b.data(), Shape{m, m}, Strides{m, 1}, dt, Device::cpu()};
          B = StridedArray{a.data(), Shape{m, m}, Strides{m, 0}, dt, Device::cpu()};
        }
        cpu_backend().binary(kOp, D, A, B, alpha);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < m; ++j) {
            const Out want = layout == 1 ? expected_binary<kOp, F, T>(e[j], e[i], alpha)
                                         : expected_binary<kOp, F, T>(e[i], e[j], alpha);
            const Out got = get<Out>(out, i * m + j, stride);
            // gelu_backward's f32 kernel flushes Φ(x) left of -4·√2 (as gelu's forward): an
            // error below 1e-8 of g, the first operand.
            const double g = static_cast<double>(convert<double>(layout == 1 ? e[j] : e[i]));
            const bool vector = cpu::simd::has_binary(kOp, dt);
            EXPECT_TRUE(matches(got, want, vector, vector ? 1e-8 * std::fabs(g) : 0))
                << binary_name(kOp) << " on " << dt << " layout " << layout << " alpha " << alpha
                << " at " << i << ", " << j;
          }
      }
    }
    ++checked;
  }
}

template <BinaryOp kOp, template <class> class F>
void check_binary_row(int& checked) {
  check_binary<kOp, F, float>(checked);
  check_binary<kOp, F, double>(checked);
  check_binary<kOp, F, Half>(checked);
  check_binary<kOp, F, BFloat16>(checked);
  check_binary<kOp, F, int64_t>(checked);
  check_binary<kOp, F, int32_t>(checked);
  check_binary<kOp, F, int16_t>(checked);
  check_binary<kOp, F, int8_t>(checked);
  check_binary<kOp, F, uint8_t>(checked);
  check_binary<kOp, F, bool>(checked);
}

TEST(BinaryDispatch, EveryRowRunsItsFunctorOnTheDtypesOfItsClass) {
  int checked = 0, expected = 0;
#define OX_BINARY_ROW(code, name, cls, functor)                    \
  check_binary_row<BinaryOp::code, elementwise::functor>(checked); \
  expected += dtypes_taken(DTypeClass::cls);
  OX_BINARY_OPS(OX_BINARY_ROW)
#undef OX_BINARY_ROW
  EXPECT_EQ(checked, expected);
}

}  // namespace
}  // namespace ox
