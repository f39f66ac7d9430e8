#pragma once
// Shared by the elementwise op tests: inputs in every layout docs/TESTING.md names, comparison of
// an op's values with expected values per dtype, integer wrapping, and a stateless value source.
// Expected values are always computed by the tests themselves (f64 formulas or exact 128-bit
// integer arithmetic); oxmera is only used to build inputs and read results back (copies and
// conversions, which tests/tensor/copy_test.cpp checks on their own).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace ewtest {

using ox::DType;
using ox::Tensor;
using oxtest::bytes_of;
using oxtest::contiguous_from;
using oxtest::integer_at;
using oxtest::kShapes;
using oxtest::mix;
using oxtest::shape_str;
using oxtest::ShapeV;
using oxtest::Source;
using oxtest::uniform_at;
using oxtest::values_of;
__extension__ typedef __int128 i128;  // exact reference arithmetic for every int64 pair
__extension__ typedef unsigned __int128 u128;

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- Layouts ------------------------------------------------------------------------------

enum class Lay { Contig, Transposed, Narrowed, ExpandOuter, ExpandInner, Flipped };
inline constexpr Lay kLayouts[] = {Lay::Contig,      Lay::Transposed,  Lay::Narrowed,
                                   Lay::ExpandOuter, Lay::ExpandInner, Lay::Flipped};

inline const char* lay_name(Lay l) {
  switch (l) {
    case Lay::Contig:
      return "contiguous";
    case Lay::Transposed:
      return "transposed";
    case Lay::Narrowed:
      return "narrowed";
    case Lay::ExpandOuter:
      return "expanded-outer";
    case Lay::ExpandInner:
      return "expanded-inner";
    case Lay::Flipped:
      return "flipped";
  }
  return "?";
}

inline const ShapeV kBig = {1029, 917};

// A tensor of `shape` and dtype `dt` laid out as `lay`. Expanded layouts repeat values along
// the expanded dim, so read the logical values back with values_of().
inline Tensor make_input(const ShapeV& shape, DType dt, Lay lay, const Source& src) {
  const size_t nd = shape.size();
  switch (lay) {
    case Lay::Contig:
      return contiguous_from(shape, dt, src);
    case Lay::Transposed: {
      if (nd >= 2) {  // contiguous storage of the reversed shape, viewed with dims reversed
        ShapeV rev(shape.rbegin(), shape.rend());
        ox::Dims perm;
        for (size_t d = nd; d-- > 0;) perm.push_back(static_cast<int64_t>(d));
        return contiguous_from(rev, dt, src).permute(perm);
      }
      if (nd == 1)  // a column of an (n, 2) matrix: stride 2
        return contiguous_from({shape[0], 2}, dt, src).select(1, 0);
      return contiguous_from(shape, dt, src);
    }
    case Lay::Narrowed: {  // inside a padded buffer full of a sentinel: offset and gaps
      if (nd == 0) {
        Tensor base = ox::full({3}, 77, dt);
        Tensor v = base.select(0, 1);
        v.copy_(contiguous_from(shape, dt, src));
        return v;
      }
      ShapeV padded = shape;
      for (auto& s : padded) s += 2;
      Tensor v = ox::full(ox::Shape(padded), 77, dt);
      for (size_t d = 0; d < nd; ++d) v = v.narrow(static_cast<int64_t>(d), 1, shape[d]);
      v.copy_(contiguous_from(shape, dt, src));
      return v;
    }
    case Lay::ExpandOuter:
    case Lay::ExpandInner: {
      if (nd == 0) return contiguous_from(shape, dt, src);
      ShapeV base = shape;
      base[lay == Lay::ExpandOuter ? 0 : nd - 1] = 1;
      return contiguous_from(base, dt, src).expand(ox::Shape(shape));
    }
    case Lay::Flipped: {
      ox::Dims all;
      for (size_t d = 0; d < nd; ++d) all.push_back(static_cast<int64_t>(d));
      return contiguous_from(shape, dt, src).flip(all);
    }
  }
  return {};
}

// ---- A stateless value source ---------------------------------------------------------------

// ---- Dtype facts written out here (not read from oxmera) ------------------------------------

inline int bits_of(DType dt) { return static_cast<int>(ox::dtype_size(dt)) * 8; }
inline bool is_int(DType dt) { return !ox::is_floating(dt) && dt != ox::kBool; }
inline int64_t int_min(DType dt) {
  if (dt == ox::kU8 || dt == ox::kBool) return 0;
  return bits_of(dt) == 64 ? INT64_MIN : -(int64_t(1) << (bits_of(dt) - 1));
}
inline int64_t int_max(DType dt) {
  if (dt == ox::kBool) return 1;
  if (dt == ox::kU8) return 255;
  return bits_of(dt) == 64 ? INT64_MAX : (int64_t(1) << (bits_of(dt) - 1)) - 1;
}
// v modulo 2^bits as the dtype's two's complement value; bool is v != 0.
inline int64_t wrap(DType dt, i128 v) {
  if (dt == ox::kBool) return v != 0;
  const auto u = static_cast<uint64_t>(static_cast<u128>(v));
  const int b = bits_of(dt);
  if (b == 64) return static_cast<int64_t>(u);
  const uint64_t m = u & ((uint64_t(1) << b) - 1);
  if (dt == ox::kU8) return static_cast<int64_t>(m);
  return m >= (uint64_t(1) << (b - 1)) ? static_cast<int64_t>(m) - (int64_t(1) << b)
                                       : static_cast<int64_t>(m);
}

// Binary format of the floating dtypes: explicit mantissa bits, smallest normal exponent,
// largest finite value.
struct Format {
  int mant, emin;
  double max;
};
inline Format format_of(DType dt) {
  switch (dt) {
    case ox::kF16:
      return {10, -14, 65504.0};
    case ox::kBF16:
      return {7, -126, 0x1.fep127};
    case ox::kF32:
      return {23, -126, 0x1.fffffep127};
    default:
      return {52, -1022, DBL_MAX};
  }
}
// Spacing of the format at |r| (the subnormal spacing below the normal range).
inline double ulp(DType dt, double r) {
  const Format f = format_of(dt);
  int e = f.emin;
  if (r != 0 && std::isfinite(r)) {
    std::frexp(std::fabs(r), &e);  // |r| = m 2^e, m in [0.5, 1)
    e = std::max(e - 1, f.emin);
  }
  return std::ldexp(1.0, e - f.mant);
}
// x rounded to nearest, ties to even, in dt's format (overflow to infinity).
inline double round_to(DType dt, double x) {
  if (dt == ox::kF64 || !std::isfinite(x) || x == 0) return x;
  const Format f = format_of(dt);
  const double q = ulp(dt, x);
  const double r = std::nearbyint(std::fabs(x) / q) * q;  // x / q is exact: q is a power of two
  return std::copysign(r > f.max ? kInf : r, x);
}

struct Tol {
  double atol, rtol;
};
inline Tol default_tol(DType dt) {  // docs/TESTING.md
  switch (dt) {
    case ox::kF64:
      return {1e-7, 1e-7};
    case ox::kF16:
      return {1e-3, 1e-5};
    case ox::kBF16:
      return {1.6e-2, 1e-5};
    default:
      return {1.3e-6, 1e-5};
  }
}

// Whether `a`, a value of dtype dt, passes for the exact value e. NaN must meet NaN and
// infinity the same infinity. f32/f64: docs/TESTING.md's closeness. f16/bf16: within one unit in
// the last place of e rounded to the format; or within f32 closeness of e, since these dtypes
// compute in f32 and f32's own error, relative to the intermediates, can span several 16-bit
// units where results are tiny (subnormal) after cancellation.
inline bool close_enough(DType dt, double a, double e, Tol tol) {
  if (std::isnan(e)) return std::isnan(a);
  const double r = round_to(dt, e);
  if (std::isinf(r)) return a == r;
  if (!std::isfinite(a)) return false;
  if (dt == ox::kF16 || dt == ox::kBF16)
    return std::fabs(a - r) <= ulp(dt, r) || std::fabs(a - e) <= 1.3e-6 + 1e-5 * std::fabs(e);
  return std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
}

// Checks dtype, shape and every value of a floating result against exact values `expected`.
inline void expect_float_values(const Tensor& actual, DType dt, const ShapeV& shape,
                                const std::vector<double>& expected, const std::string& what,
                                std::optional<Tol> tol = std::nullopt) {
  ASSERT_EQ(actual.dtype(), dt) << what;
  ASSERT_EQ(oxtest::shape_of(actual), shape) << what;
  ASSERT_EQ(expected.size(), static_cast<size_t>(actual.numel())) << what;
  const std::vector<double> a = values_of(actual);
  const Tol t = tol.value_or(default_tol(dt));
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (close_enough(dt, a[i], expected[i], t)) continue;
    if (++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", expected " << expected[i]
                    << " (" << round_to(dt, expected[i]) << " in " << dt << ")";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size() << " elements off";
}

// Checks dtype, shape and every value of an integer or bool result exactly.
inline void expect_int_values(const Tensor& actual, DType dt, const ShapeV& shape,
                              const std::vector<int64_t>& expected, const std::string& what) {
  ASSERT_EQ(actual.dtype(), dt) << what;
  ASSERT_EQ(oxtest::shape_of(actual), shape) << what;
  ASSERT_EQ(expected.size(), static_cast<size_t>(actual.numel())) << what;
  const std::vector<int64_t> a = actual.to_vector<int64_t>();
  int bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] == expected[i]) continue;
    if (++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", expected " << expected[i];
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << a.size() << " elements off";
}

// The exact (unwrapped) integer values of an integer or bool tensor.
inline std::vector<int64_t> ints_of(const Tensor& t) { return t.to_vector<int64_t>(); }

// Row-major index into an operand of shape `in` broadcast to `out`, for flat index i of `out`.
inline int64_t broadcast_source(const ShapeV& out, const ShapeV& in, int64_t i) {
  int64_t src = 0, stride = 1;
  for (size_t k = 0; k < out.size(); ++k) {
    const size_t d = out.size() - 1 - k;
    const int64_t idx = i % out[d];
    i /= out[d];
    if (k < in.size()) {
      const size_t e = in.size() - 1 - k;
      if (in[e] != 1) src += idx * stride;
      stride *= in[e];
    }
  }
  return src;
}

inline const DType kFloatTypes[] = {ox::kF32, ox::kF64, ox::kF16, ox::kBF16};
inline const DType kIntTypes[] = {ox::kI64, ox::kI32, ox::kI16, ox::kI8, ox::kU8};

// Restores the thread count a test changed.
class ThreadGuard {
 public:
  ThreadGuard() : saved_(ox::get_num_threads()) {}
  ~ThreadGuard() { ox::set_num_threads(saved_); }
  ThreadGuard(const ThreadGuard&) = delete;
  ThreadGuard& operator=(const ThreadGuard&) = delete;

 private:
  int saved_;
};

}  // namespace ewtest
