// Binary elementwise ops: every op of ops.h's binary section on docs/TESTING.md's shapes, layouts
// (each operand in each layout, and mixed), broadcasting pairs, tensor-scalar and scalar-tensor
// forms, each dtype it takes (and one it refuses), special values, and thread counts.
// Expected values: f64 formulas on the stored inputs, exact 128-bit integer arithmetic wrapped to
// the dtype, and promotion written out here from docs/OPS.md's rules.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/ew_util.h"
#include "test_util.h"

namespace {

using namespace ewtest;  // NOLINT: the helpers are this test's vocabulary
using ox::ErrorKind;
using ox::TensorOrScalar;
using oxtest::kind_of;

// ---- Reference semantics ----------------------------------------------------------------------

// Python's float floor division (as torch.div(..., rounding_mode="floor")).
double floordiv_ref(double a, double b) {
  if (b == 0) return a / b;
  if (std::isnan(a) || std::isnan(b) || std::isinf(a)) return kNaN;
  if (std::isinf(b)) return (a == 0 || (a < 0) == (b < 0)) ? 0.0 : -1.0;
  // In long double (64-bit mantissa, wider exponent): 2.5 / 0.1 is 24.999..., which a double
  // division rounds to 25, and 1e-310 / -1e20 does not underflow to -0.
  return static_cast<double>(std::floor(static_cast<long double>(a) / b));
}
// Python's float remainder: the sign of the divisor.
double remainder_ref(double a, double b) {
  if (std::isnan(a) || std::isnan(b) || std::isinf(a) || b == 0) return kNaN;
  double r = std::fmod(a, b);  // exact
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}
double logaddexp_ref(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return kNaN;
  if (a == -kInf && b == -kInf) return -kInf;
  if (a == kInf || b == kInf) return kInf;
  const double m = std::max(a, b), n = std::min(a, b);
  return m + std::log1p(std::exp(n - m));
}

// Exact integer semantics (before wrapping to the dtype); division by zero gives 0.
i128 floordiv_i(i128 a, i128 b) {
  if (b == 0) return 0;
  i128 q = a / b;
  if (q * b != a && ((a < 0) != (b < 0))) --q;
  return q;
}
i128 truncdiv_i(i128 a, i128 b) { return b == 0 ? 0 : a / b; }
i128 remainder_i(i128 a, i128 b) { return b == 0 ? 0 : a - b * floordiv_i(a, b); }
i128 fmod_i(i128 a, i128 b) { return b == 0 ? 0 : a - b * (a / b); }
// a^b modulo 2^64 (then wrapped); a negative exponent gives trunc(1 / a^|b|).
i128 pow_i(i128 a, i128 b) {
  if (b < 0) return a == 1 ? 1 : a == -1 ? ((-b) % 2 ? -1 : 1) : 0;
  uint64_t r = 1, base = static_cast<uint64_t>(static_cast<int64_t>(a));
  for (auto e = static_cast<uint64_t>(b); e; e >>= 1) {
    if (e & 1) r *= base;
    base *= base;
  }
  return static_cast<int64_t>(r);
}

enum class Cmp { Eq, Ne, Lt, Le, Gt, Ge, And, Or, Xor };
template <class T>
bool compare(Cmp c, T a, T b) {
  switch (c) {
    case Cmp::Eq:
      return a == b;
    case Cmp::Ne:
      return a != b;
    case Cmp::Lt:
      return a < b;
    case Cmp::Le:
      return a <= b;
    case Cmp::Gt:
      return a > b;
    case Cmp::Ge:
      return a >= b;
    case Cmp::And:
      return a != T(0) && b != T(0);
    case Cmp::Or:
      return a != T(0) || b != T(0);
    case Cmp::Xor:
      return (a != T(0)) != (b != T(0));
  }
  return false;
}

// ---- The op table --------------------------------------------------------------------------

enum class Out {
  Same,         // the common dtype, bool included (add/mul/maximum/minimum: or/and)
  SameNoBool,   // the common dtype; bool refused
  FloatOnly,    // floating common dtypes only (alpha = 0.5)
  ToFloat,      // integer and bool compute in f32
  Bool,         // comparisons and logical ops
  IntegerOnly,  // bitwise: integer and bool
};

struct BCase {
  std::string name;
  std::function<Tensor(const TensorOrScalar&, const TensorOrScalar&)> op;
  Out out;
  std::function<double(double, double, DType)> fref;  // floating results; DType: compute
  std::function<i128(i128, i128)> iref;               // integer results, before wrapping
  std::optional<Cmp> cmp;                             // Out::Bool
  double lo, hi, blo, bhi;                            // floating domains of a and b
  int64_t ilo, ihi, iblo, ibhi;                       // integer domains of a and b
  bool quarters = false;                              // floats on multiples of 1/4 (equal pairs)
};

std::optional<DType> out_dtype(Out o, DType common) {
  switch (o) {
    case Out::Same:
      return common;
    case Out::SameNoBool:
      return common == ox::kBool ? std::nullopt : std::optional(common);
    case Out::FloatOnly:
      return ox::is_floating(common) ? std::optional(common) : std::nullopt;
    case Out::ToFloat:
      return ox::is_floating(common) ? common : ox::kF32;
    case Out::Bool:
      return ox::kBool;
    case Out::IntegerOnly:
      return ox::is_floating(common) ? std::nullopt : std::optional(common);
  }
  return std::nullopt;
}

using BinFn = std::function<Tensor(const TensorOrScalar&, const TensorOrScalar&)>;
#define OX_FN(expr) [](const TensorOrScalar& a, const TensorOrScalar& b) { return expr; }

using Ref3 = std::function<double(double, double, DType)>;
// Most references do not depend on the dtype the op computes in.
Ref3 exact(std::function<double(double, double)> f) {
  if (!f) return {};
  return [f](double a, double b, DType) { return f(a, b); };
}

BCase arith(std::string n, BinFn op, Out out, Ref3 f, std::function<i128(i128, i128)> i,
            double lo = -1000, double hi = 1000, int64_t ilo = -100, int64_t ihi = 100) {
  return {std::move(n), std::move(op), out, std::move(f), std::move(i), std::nullopt, lo, hi, lo,
          hi,           ilo,           ihi, ilo,          ihi};
}
BCase arith(std::string n, BinFn op, Out out, std::function<double(double, double)> f,
            std::function<i128(i128, i128)> i, double lo = -1000, double hi = 1000,
            int64_t ilo = -100, int64_t ihi = 100) {
  return arith(std::move(n), std::move(op), out, exact(std::move(f)), std::move(i), lo, hi, ilo,
               ihi);
}

// The quotient as the op's compute dtype rounds it (f64, or f32 for every other float dtype),
// truncated: trunc mode is trunc(a / b) in floating arithmetic, as PyTorch's (so 2.5 / 0.1f
// truncates to 25, where floor mode gives the exact 24).
double truncdiv_ref(double a, double b, DType compute) {
  if (compute == ox::kF64) return std::trunc(a / b);
  return std::trunc(static_cast<double>(static_cast<float>(a) / static_cast<float>(b)));
}
BCase comparison(std::string n, BinFn op, Cmp c) {
  return {std::move(n), std::move(op), Out::Bool, {}, {}, c, -4, 4, -4, 4, -5, 5, -5, 5, true};
}

std::vector<BCase> binary_cases() {
  std::vector<BCase> c = {
      arith(
          "add", OX_FN(ox::add(a, b)), Out::Same, [](double a, double b) { return a + b; },
          [](i128 a, i128 b) { return a + b; }, -1000, 1000, -1000000, 1000000),
      // a + alpha * b rounds twice (no fma, as PyTorch); on [-1, 1] that stays in tolerance.
      arith(
          "add_alpha_3", OX_FN(ox::add(a, b, 3)), Out::Same,
          [](double a, double b) { return a + 3 * b; }, [](i128 a, i128 b) { return a + 3 * b; },
          -1, 1),
      arith(
          "add_alpha_half", OX_FN(ox::add(a, b, 0.5)), Out::FloatOnly,
          [](double a, double b) { return a + 0.5 * b; }, std::function<i128(i128, i128)>{}, -1, 1),
      arith(
          "sub", OX_FN(ox::sub(a, b)), Out::SameNoBool, [](double a, double b) { return a - b; },
          [](i128 a, i128 b) { return a - b; }, -1000, 1000, -1000000, 1000000),
      arith(
          "sub_alpha_neg2", OX_FN(ox::sub(a, b, -2)), Out::SameNoBool,
          [](double a, double b) { return a + 2 * b; }, [](i128 a, i128 b) { return a + 2 * b; },
          -1, 1),
      arith(
          "mul", OX_FN(ox::mul(a, b)), Out::Same, [](double a, double b) { return a * b; },
          [](i128 a, i128 b) { return a * b; }),
      arith("div", OX_FN(ox::div(a, b)), Out::ToFloat, [](double a, double b) { return a / b; },
            {}),
      arith("div_floor", OX_FN(ox::div(a, b, "floor")), Out::SameNoBool, floordiv_ref, floordiv_i,
            -1000, 1000, -20, 20),
      arith("div_trunc", OX_FN(ox::div(a, b, "trunc")), Out::SameNoBool, truncdiv_ref, truncdiv_i,
            -1000, 1000, -20, 20),
      arith("floor_divide", OX_FN(ox::floor_divide(a, b)), Out::SameNoBool, floordiv_ref,
            floordiv_i, -1000, 1000, -20, 20),
      arith("remainder", OX_FN(ox::remainder(a, b)), Out::SameNoBool, remainder_ref, remainder_i,
            -1000, 1000, -20, 20),
      arith(
          "fmod", OX_FN(ox::fmod(a, b)), Out::SameNoBool,
          [](double a, double b) { return std::fmod(a, b); }, fmod_i, -1000, 1000, -20, 20),
      arith(
          "atan2", OX_FN(ox::atan2(a, b)), Out::ToFloat,
          [](double a, double b) { return std::atan2(a, b); }, {}, -10, 10),
      arith(
          "maximum", OX_FN(ox::maximum(a, b)), Out::Same,
          [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); },
          [](i128 a, i128 b) { return std::max(a, b); }),
      arith(
          "minimum", OX_FN(ox::minimum(a, b)), Out::Same,
          [](double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); },
          [](i128 a, i128 b) { return std::min(a, b); }),
      arith(
          "hypot", OX_FN(ox::hypot(a, b)), Out::ToFloat,
          [](double a, double b) { return std::hypot(a, b); }, {}, -100, 100),
      arith("logaddexp", OX_FN(ox::logaddexp(a, b)), Out::ToFloat, logaddexp_ref, {}, -30, 30),
      comparison("eq", OX_FN(ox::eq(a, b)), Cmp::Eq),
      comparison("ne", OX_FN(ox::ne(a, b)), Cmp::Ne),
      comparison("lt", OX_FN(ox::lt(a, b)), Cmp::Lt),
      comparison("le", OX_FN(ox::le(a, b)), Cmp::Le),
      comparison("gt", OX_FN(ox::gt(a, b)), Cmp::Gt),
      comparison("ge", OX_FN(ox::ge(a, b)), Cmp::Ge),
      comparison("logical_and", OX_FN(ox::logical_and(a, b)), Cmp::And),
      comparison("logical_or", OX_FN(ox::logical_or(a, b)), Cmp::Or),
      comparison("logical_xor", OX_FN(ox::logical_xor(a, b)), Cmp::Xor),
      arith(
          "bitwise_and", OX_FN(ox::bitwise_and(a, b)), Out::IntegerOnly, Ref3{},
          [](i128 a, i128 b) { return a & b; }, 0, 0, -1000, 1000),
      arith(
          "bitwise_or", OX_FN(ox::bitwise_or(a, b)), Out::IntegerOnly, Ref3{},
          [](i128 a, i128 b) { return a | b; }, 0, 0, -1000, 1000),
      arith(
          "bitwise_xor", OX_FN(ox::bitwise_xor(a, b)), Out::IntegerOnly, Ref3{},
          [](i128 a, i128 b) { return a ^ b; }, 0, 0, -1000, 1000),
  };
  BCase pow = arith(
      "pow", OX_FN(ox::pow(a, b)), Out::SameNoBool,
      [](double a, double b) { return std::pow(a, b); }, pow_i);
  pow.lo = 0.25, pow.hi = 4, pow.blo = -4, pow.bhi = 4;
  pow.ilo = -6, pow.ihi = 6, pow.iblo = 0, pow.ibhi = 7;
  c.push_back(pow);
  return c;
}

// ---- Operand values ------------------------------------------------------------------------

std::vector<double> specials(DType dt) {
  if (ox::is_floating(dt)) {
    const double s = dt == ox::kF64 ? 1e-310 : dt == ox::kF16 ? 3e-6 : 1e-40;
    return {0.0, -0.0, 1e20, -1e20, s, -s, kInf, -kInf, kNaN, 1.0, -1.0, 2.5};
  }
  if (dt == ox::kBool) return {0, 1};
  std::vector<double> out;
  for (int64_t v : {int64_t(0), int64_t(1), int64_t(-1), int_min(dt), int_max(dt), int_min(dt) + 1})
    if (v >= int_min(dt) && v <= int_max(dt)) out.push_back(static_cast<double>(v));
  return out;
}

// Sources for a and b: the cross product of the specials first, then each op's domain.
std::pair<Source, Source> sources(const BCase& c, DType dt) {
  const std::vector<double> sp = specials(dt);
  const auto k = static_cast<int64_t>(sp.size());
  auto make = [=](bool second) -> Source {
    const double lo = second ? c.blo : c.lo, hi = second ? c.bhi : c.hi;
    const int64_t ilo = std::max(second ? c.iblo : c.ilo, int_min(dt));
    const int64_t ihi = std::min(second ? c.ibhi : c.ihi, int_max(dt));
    const bool q = c.quarters;
    return [=](int64_t i) {
      if (i < k * k) return sp[static_cast<size_t>(second ? i / k : i % k)];
      if (ox::is_floating(dt)) {
        const double v = uniform_at(i, second ? 71 : 53, lo, hi);
        return q ? std::round(v * 4) / 4 : v;
      }
      if (dt == ox::kBool) return double(integer_at(i, second ? 71 : 53, 0, 1));
      return double(integer_at(i, second ? 71 : 53, std::min(ilo, ihi), ihi));
    };
  };
  return {make(false), make(true)};
}

// Expected values of c on stored operands a, b (already broadcast to one shape).
void check_values(const BCase& c, const Tensor& out, DType common, DType out_dt, const Tensor& a,
                  const Tensor& b, const ShapeV& shape, const std::string& what) {
  if (c.cmp) {
    std::vector<int64_t> exp;
    if (ox::is_floating(common)) {
      const auto va = values_of(a), vb = values_of(b);
      for (size_t i = 0; i < va.size(); ++i) exp.push_back(compare(*c.cmp, va[i], vb[i]));
    } else {
      const auto va = ints_of(a), vb = ints_of(b);
      for (size_t i = 0; i < va.size(); ++i) exp.push_back(compare(*c.cmp, va[i], vb[i]));
    }
    return expect_int_values(out, ox::kBool, shape, exp, what);
  }
  if (ox::is_floating(out_dt)) {
    const auto va = values_of(a), vb = values_of(b);
    std::vector<double> exp(va.size());
    const DType compute = out_dt == ox::kF64 ? ox::kF64 : ox::kF32;
    for (size_t i = 0; i < va.size(); ++i) exp[i] = c.fref(va[i], vb[i], compute);
    return expect_float_values(out, out_dt, shape, exp, what);
  }
  const auto va = ints_of(a), vb = ints_of(b);
  std::vector<int64_t> exp(va.size());
  for (size_t i = 0; i < va.size(); ++i) exp[i] = wrap(out_dt, c.iref(va[i], vb[i]));
  expect_int_values(out, out_dt, shape, exp, what);
}

std::string name_of(const ::testing::TestParamInfo<BCase>& info) { return info.param.name; }
void PrintTo(const BCase& c, std::ostream* os) { *os << c.name; }

class BinarySweep : public ::testing::TestWithParam<BCase> {};

// Layout pairs: each layout for both operands, and a few mixtures.
const std::vector<std::pair<Lay, Lay>> kLayoutPairs = {
    {Lay::Contig, Lay::Contig},           {Lay::Transposed, Lay::Transposed},
    {Lay::Narrowed, Lay::Narrowed},       {Lay::ExpandOuter, Lay::ExpandOuter},
    {Lay::ExpandInner, Lay::ExpandInner}, {Lay::Flipped, Lay::Flipped},
    {Lay::Contig, Lay::Flipped},          {Lay::Transposed, Lay::Narrowed},
    {Lay::ExpandInner, Lay::Contig},      {Lay::Contig, Lay::ExpandOuter}};

TEST_P(BinarySweep, EveryDTypeShapeAndLayout) {
  const BCase& c = GetParam();
  for (DType dt : ox::kAllDTypes) {
    const std::optional<DType> out_dt = out_dtype(c.out, dt);
    if (!out_dt) {
      EXPECT_EQ(kind_of([&] { c.op(ox::ones({3}, dt), ox::ones({3}, dt)); }), ErrorKind::DType)
          << c.name << " " << dt;
      continue;
    }
    const auto [sa, sb] = sources(c, dt);
    for (const ShapeV& shape : kShapes) {
      for (const auto& [la, lb] : kLayoutPairs) {
        // The large shape (there for the parallel split): every layout pair in f32, contiguous
        // in i32 and f16; the small shapes take every dtype and layout pair.
        if (shape == kBig && dt != ox::kF32 &&
            !((dt == ox::kI32 || dt == ox::kF16) && la == Lay::Contig && lb == Lay::Contig))
          continue;
        const std::string what = c.name + " " + std::string(ox::dtype_name(dt)) + " " +
                                 shape_str(shape) + " " + lay_name(la) + "/" + lay_name(lb);
        const Tensor a = make_input(shape, dt, la, sa), b = make_input(shape, dt, lb, sb);
        const Tensor out = c.op(a, b);
        check_values(c, out, dt, *out_dt, a, b, shape, what);
        if (la != Lay::Contig || lb != Lay::Contig) {
          EXPECT_EQ(bytes_of(out), bytes_of(c.op(a.contiguous(), b.contiguous()))) << what;
        }
      }
    }
  }
}

// The broadcast shape of a and b, by NumPy's rule (assumed compatible).
ShapeV broadcast_shape(const ShapeV& a, const ShapeV& b) {
  const size_t n = std::max(a.size(), b.size());
  ShapeV out(n);
  for (size_t k = 0; k < n; ++k) {
    const int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1;
    const int64_t y = k < b.size() ? b[b.size() - 1 - k] : 1;
    out[n - 1 - k] = x == 1 ? y : x;
  }
  return out;
}

// docs/TESTING.md's broadcasting pairs (both orders), an empty one and a large one.
TEST_P(BinarySweep, BroadcastingPairs) {
  const BCase& c = GetParam();
  const std::vector<std::pair<ShapeV, ShapeV>> pairs = {
      {{1}, {}},           {{2, 1}, {2}}, {{3, 1, 2}, {1, 3, 2}},
      {{5, 1, 4}, {3, 1}}, {{0, 1}, {3}}, {{1029, 1}, {917}}};
  for (DType dt : {ox::kF32, ox::kI32, ox::kBF16, ox::kU8}) {
    const std::optional<DType> out_dt = out_dtype(c.out, dt);
    if (!out_dt) continue;
    const auto [sa, sb] = sources(c, dt);
    for (const auto& [p, q] : pairs) {
      for (bool swap : {false, true}) {
        const ShapeV& sha = swap ? q : p;
        const ShapeV& shb = swap ? p : q;
        const ShapeV shape = broadcast_shape(sha, shb);
        for (Lay lay : {Lay::Contig, Lay::Transposed, Lay::Narrowed, Lay::Flipped}) {
          if (oxtest::product(shape) > 100000 && (dt != ox::kF32 || swap || lay == Lay::Narrowed))
            continue;  // the large pair once per layout kind, in f32
          const std::string what = c.name + " " + std::string(ox::dtype_name(dt)) + " " +
                                   shape_str(sha) + " with " + shape_str(shb) + " " + lay_name(lay);
          const Tensor a = make_input(sha, dt, lay, sa), b = make_input(shb, dt, lay, sb);
          const Tensor out = c.op(a, b);
          // Expected operands, broadcast by index arithmetic written here.
          const int64_t n = oxtest::product(shape);
          const auto va = values_of(a), vb = values_of(b);
          std::vector<double> ea(static_cast<size_t>(n)), eb(static_cast<size_t>(n));
          for (int64_t i = 0; i < n; ++i) {
            ea[size_t(i)] = va[size_t(broadcast_source(shape, sha, i))];
            eb[size_t(i)] = vb[size_t(broadcast_source(shape, shb, i))];
          }
          check_values(c, out, dt, *out_dt, ox::tensor(ea, ox::Shape(shape), {.dtype = dt}),
                       ox::tensor(eb, ox::Shape(shape), {.dtype = dt}), shape, what);
        }
      }
    }
  }
}

// ---- Tensor-scalar and scalar-tensor ----------------------------------------------------------

int category(DType dt) { return ox::is_floating(dt) ? 2 : dt == ox::kBool ? 0 : 1; }
int category(const ox::Scalar& s) {
  return s.is_floating() ? 2 : s.kind() == ox::Scalar::Kind::Bool ? 0 : 1;
}

// docs/OPS.md: a bare number changes a tensor's dtype only when its category is higher, and
// then to f32 (float) or i64 (integer).
DType promoted(DType t, const ox::Scalar& s) {
  if (category(s) <= category(t)) return t;
  return s.is_floating() ? ox::kF32 : ox::kI64;
}

TEST_P(BinarySweep, TensorScalarAndScalarTensor) {
  const BCase& c = GetParam();
  const std::vector<ox::Scalar> scalars = {ox::Scalar(2),   ox::Scalar(-3),   ox::Scalar(2.5),
                                           ox::Scalar(0.1), ox::Scalar(true), ox::Scalar(-1e20)};
  for (DType dt : ox::kAllDTypes) {
    const auto [sa, sb] = sources(c, dt);
    for (const ox::Scalar& s : scalars) {
      if (!s.is_floating() && is_int(dt) && (s.to_int() < int_min(dt) || s.to_int() > int_max(dt)))
        continue;  // an integer outside the dtype wraps; tested by name elsewhere
      const DType common = promoted(dt, s);
      const std::optional<DType> out_dt = out_dtype(c.out, common);
      for (bool scalar_first : {false, true}) {
        const Tensor t = make_input({812}, dt, Lay::Flipped, scalar_first ? sb : sa);
        auto call = [&] { return scalar_first ? c.op(s, t) : c.op(t, s); };
        const std::string what =
            c.name + " " + std::string(ox::dtype_name(dt)) + " scalar " +
            (s.is_floating() ? std::to_string(s.to_double()) : std::to_string(s.to_int())) +
            (scalar_first ? " first" : " second");
        if (!out_dt) {
          EXPECT_EQ(kind_of(call), ErrorKind::DType) << what;
          continue;
        }
        // The scalar as the op computes with it: exact for f64, f32 for f32 and the 16-bit
        // floats (which compute in f32), the dtype's value for integers.
        double sv = s.to_double();
        if (common == ox::kF32 || common == ox::kF16 || common == ox::kBF16)
          sv = static_cast<float>(sv);
        if (!ox::is_floating(common)) sv = static_cast<double>(wrap(common, s.to_int()));
        const Tensor ts =
            ox::full({812}, sv, {.dtype = ox::is_floating(common) ? ox::kF64 : ox::kI64});
        // The tensor as converted to the common dtype (an i32 becomes f32, rounding 2^31 - 1).
        const Tensor tc = ox::is_floating(common) ? t.to(common).to(ox::kF64) : t.to(ox::kI64);
        const Tensor x = scalar_first ? ts : tc, y = scalar_first ? tc : ts;
        const Tensor out = call();
        if (c.cmp || !ox::is_floating(*out_dt)) {
          check_values(c, out, common, *out_dt, x, y, {812}, what);
        } else {
          const auto vx = values_of(x), vy = values_of(y);
          std::vector<double> exp(vx.size());
          const DType compute = *out_dt == ox::kF64 ? ox::kF64 : ox::kF32;
          for (size_t i = 0; i < vx.size(); ++i) exp[i] = c.fref(vx[i], vy[i], compute);
          expect_float_values(out, *out_dt, {812}, exp, what);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, BinarySweep, ::testing::ValuesIn(binary_cases()), name_of);

// ---- Thread counts ----------------------------------------------------------------------------

TEST(BinaryThreads, OneAndTwoThreadsAreBitwiseIdentical) {
  ThreadGuard guard;
  const Source s1 = [](int64_t i) { return uniform_at(i, 5, -50, 50); };
  const Source s2 = [](int64_t i) { return uniform_at(i, 6, -50, 50); };
  for (Lay lay : {Lay::Contig, Lay::Transposed, Lay::Flipped, Lay::ExpandOuter}) {
    const Tensor a = make_input(kBig, ox::kF32, lay, s1), b = make_input(kBig, ox::kF32, lay, s2);
    const Tensor ia = make_input(kBig, ox::kI32, lay, s1), ib = make_input(kBig, ox::kI32, lay, s2);
    const Tensor row = make_input({917}, ox::kF32, lay, s2);
    const Tensor cond = ox::gt(a, b);
    const std::vector<std::function<Tensor()>> ops = {
        [&] { return ox::add(a, b, 0.5); },    [&] { return ox::pow(a, 2); },
        [&] { return ox::remainder(ia, ib); }, [&] { return ox::div(a, row); },
        [&] { return ox::lt(a, row); },        [&] { return ox::where(cond, a, 0.0); },
        [&] { return ox::logaddexp(a, b); },   [&] { return ox::lerp(a, b, 0.3); }};
    for (size_t k = 0; k < ops.size(); ++k) {
      ox::set_num_threads(1);
      const std::vector<uint8_t> one = bytes_of(ops[k]());
      ox::set_num_threads(2);
      EXPECT_EQ(one, bytes_of(ops[k]())) << "op " << k << " " << lay_name(lay);
    }
    // In place too.
    ox::set_num_threads(1);
    Tensor x1 = a.clone();
    x1.mul_(b);
    ox::set_num_threads(2);
    Tensor x2 = a.clone();
    x2.mul_(b);
    EXPECT_EQ(bytes_of(x1), bytes_of(x2)) << lay_name(lay);
  }
}

}  // namespace
