// Unary elementwise ops: every op of ops.h's unary section on docs/TESTING.md's shapes and layouts,
// each dtype it takes (and one it refuses), special values, and thread-count independence.
// Expected values: the op's formula in f64 on the input's stored values (std:: math), or exact
// 128-bit integer arithmetic wrapped to the dtype; never oxmera's own result.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/ew_util.h"
#include "tensor/storage.h"
#include "test_util.h"

namespace {

using namespace ewtest;  // NOLINT: the helpers are this test's vocabulary
using ox::ErrorKind;
using oxtest::kind_of;

// ---- Reference formulas (f64) -----------------------------------------------------------------

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }
// log(1 + e^x) without overflow.
double log1pexp(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }
// PyTorch's softplus: linear once beta x passes the threshold.
double softplus_ref(double x, double beta, double threshold) {
  return beta * x > threshold ? x : log1pexp(beta * x) / beta;
}
double gelu_erf_ref(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// Largest finite value of each floating dtype, written out (nan_to_num's default for infinity).
double largest(DType dt) { return format_of(dt).max; }

// The subnormal each floating dtype is tried on.
double subnormal_of(DType dt) { return dt == ox::kF64 ? 1e-310 : dt == ox::kF16 ? 3e-6 : 1e-40; }
std::vector<double> float_specials(DType dt) {
  const double s = subnormal_of(dt);
  return {0.0, -0.0, 1e20, -1e20, s, -s, kInf, -kInf, kNaN, 1.0, -1.0, 0.5, -0.5, 2.5, -2.5};
}
std::vector<double> int_specials(DType dt) {
  std::vector<double> out;
  for (int64_t v : {int64_t(0), int64_t(1), int64_t(-1), int_min(dt), int_max(dt), int_min(dt) + 1})
    if (v >= int_min(dt) && v <= int_max(dt)) out.push_back(static_cast<double>(v));
  return out;
}

// ---- The op table --------------------------------------------------------------------------

enum class Fam {
  Floating,  // integer and bool inputs compute in f32 (result f32)
  Rounding,  // floating; integer and bool inputs come back as a copy of themselves
  Numeric,   // any dtype but bool, result in the input dtype
};

struct UCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<double(double, DType)> ref;  // value for a floating result of dtype DType
  std::function<i128(i128)> iref;            // Numeric: exact value before wrapping
  double lo, hi;                             // sweep domain
  Fam fam = Fam::Floating;
  bool quarters = false;  // sweep on multiples of 1/4, so that halves (ties) occur
};

template <class F>
std::function<double(double, DType)> f64(F f) {
  return [f](double x, DType) { return f(x); };
}

std::vector<UCase> unary_cases() {
  using std::function;
  const auto neg_i = [](i128 x) { return -x; };
  std::vector<UCase> c = {
      {"neg", [](const Tensor& x) { return ox::neg(x); }, f64([](double x) { return -x; }), neg_i,
       -100, 100, Fam::Numeric},
      {"operator_minus", [](const Tensor& x) { return -x; }, f64([](double x) { return -x; }),
       neg_i, -100, 100, Fam::Numeric},
      {"abs", [](const Tensor& x) { return ox::abs(x); },
       f64([](double x) { return std::fabs(x); }), [](i128 x) { return x < 0 ? -x : x; }, -100, 100,
       Fam::Numeric},
      {"sign", [](const Tensor& x) { return x.sign(); },
       f64([](double x) { return std::isnan(x) ? x : double((x > 0) - (x < 0)); }),
       [](i128 x) { return i128((x > 0) - (x < 0)); }, -100, 100, Fam::Numeric},
      {"square", [](const Tensor& x) { return ox::square(x); }, f64([](double x) { return x * x; }),
       [](i128 x) { return x * x; }, -100, 100, Fam::Numeric},
      {"relu", [](const Tensor& x) { return x.relu(); }, f64([](double x) {
         return std::isnan(x) ? x : x < 0 ? 0.0 : x;
       }),
       [](i128 x) { return x < 0 ? i128(0) : x; }, -100, 100, Fam::Numeric},
      {"exp",
       [](const Tensor& x) { return x.exp(); },
       f64([](double x) { return std::exp(x); }),
       {},
       -10,
       10},
      {"exp2",
       [](const Tensor& x) { return ox::exp2(x); },
       f64([](double x) { return std::exp2(x); }),
       {},
       -20,
       20},
      {"expm1",
       [](const Tensor& x) { return ox::expm1(x); },
       f64([](double x) { return std::expm1(x); }),
       {},
       -10,
       10},
      {"log",
       [](const Tensor& x) { return x.log(); },
       f64([](double x) { return std::log(x); }),
       {},
       1e-3,
       1000},
      {"log2",
       [](const Tensor& x) { return ox::log2(x); },
       f64([](double x) { return std::log2(x); }),
       {},
       1e-3,
       1000},
      {"log10",
       [](const Tensor& x) { return ox::log10(x); },
       f64([](double x) { return std::log10(x); }),
       {},
       1e-3,
       1000},
      {"log1p",
       [](const Tensor& x) { return ox::log1p(x); },
       f64([](double x) { return std::log1p(x); }),
       {},
       -0.999,
       100},
      {"sqrt",
       [](const Tensor& x) { return x.sqrt(); },
       f64([](double x) { return std::sqrt(x); }),
       {},
       0,
       1e4},
      {"rsqrt",
       [](const Tensor& x) { return x.rsqrt(); },
       f64([](double x) { return 1.0 / std::sqrt(x); }),
       {},
       1e-3,
       1e4},
      {"reciprocal",
       [](const Tensor& x) { return ox::reciprocal(x); },
       f64([](double x) { return 1.0 / x; }),
       {},
       -10,
       10},
      {"sin",
       [](const Tensor& x) { return x.sin(); },
       f64([](double x) { return std::sin(x); }),
       {},
       -10,
       10},
      {"cos",
       [](const Tensor& x) { return x.cos(); },
       f64([](double x) { return std::cos(x); }),
       {},
       -10,
       10},
      {"tan",
       [](const Tensor& x) { return ox::tan(x); },
       f64([](double x) { return std::tan(x); }),
       {},
       -1.5,
       1.5},
      {"asin",
       [](const Tensor& x) { return ox::asin(x); },
       f64([](double x) { return std::asin(x); }),
       {},
       -1,
       1},
      {"acos",
       [](const Tensor& x) { return ox::acos(x); },
       f64([](double x) { return std::acos(x); }),
       {},
       -1,
       1},
      {"atan",
       [](const Tensor& x) { return ox::atan(x); },
       f64([](double x) { return std::atan(x); }),
       {},
       -100,
       100},
      {"sinh",
       [](const Tensor& x) { return ox::sinh(x); },
       f64([](double x) { return std::sinh(x); }),
       {},
       -10,
       10},
      {"cosh",
       [](const Tensor& x) { return ox::cosh(x); },
       f64([](double x) { return std::cosh(x); }),
       {},
       -10,
       10},
      {"tanh",
       [](const Tensor& x) { return x.tanh(); },
       f64([](double x) { return std::tanh(x); }),
       {},
       -10,
       10},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, f64(sigmoid_ref), {}, -30, 30},
      {"logsigmoid",
       [](const Tensor& x) { return ox::logsigmoid(x); },
       f64([](double x) { return -log1pexp(-x); }),
       {},
       -30,
       30},
      {"leaky_relu",
       [](const Tensor& x) { return ox::leaky_relu(x); },
       f64([](double x) { return x < 0 ? 0.01 * x : x; }),
       {},
       -30,
       30},
      {"leaky_relu_0.2",
       [](const Tensor& x) { return ox::leaky_relu(x, 0.2); },
       f64([](double x) { return x < 0 ? 0.2 * x : x; }),
       {},
       -30,
       30},
      {"elu",
       [](const Tensor& x) { return ox::elu(x); },
       f64([](double x) { return x > 0 ? x : std::expm1(x); }),
       {},
       -30,
       30},
      {"elu_0.5",
       [](const Tensor& x) { return ox::elu(x, 0.5); },
       f64([](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }),
       {},
       -30,
       30},
      {"gelu", [](const Tensor& x) { return ox::gelu(x); }, f64(gelu_erf_ref), {}, -10, 10},
      {"gelu_tanh",
       [](const Tensor& x) { return ox::gelu(x, "tanh"); },
       f64(gelu_tanh_ref),
       {},
       -10,
       10},
      {"silu",
       [](const Tensor& x) { return ox::silu(x); },
       f64([](double x) { return x * sigmoid_ref(x); }),
       {},
       -30,
       30},
      {"softplus",
       [](const Tensor& x) { return ox::softplus(x); },
       f64([](double x) { return softplus_ref(x, 1, 20); }),
       {},
       -30,
       30},
      {"softplus_2_5",
       [](const Tensor& x) { return ox::softplus(x, 2.0, 5.0); },
       f64([](double x) { return softplus_ref(x, 2, 5); }),
       {},
       -30,
       30},
      {"mish",
       [](const Tensor& x) { return ox::mish(x); },
       f64([](double x) { return x * std::tanh(softplus_ref(x, 1, 20)); }),
       {},
       -30,
       30},
      {"erf",
       [](const Tensor& x) { return ox::erf(x); },
       f64([](double x) { return std::erf(x); }),
       {},
       -5,
       5},
      {"erfc",
       [](const Tensor& x) { return ox::erfc(x); },
       f64([](double x) { return std::erfc(x); }),
       {},
       -5,
       5},
      {"floor",
       [](const Tensor& x) { return x.floor(); },
       f64([](double x) { return std::floor(x); }),
       {},
       -100,
       100,
       Fam::Rounding,
       true},
      {"ceil",
       [](const Tensor& x) { return x.ceil(); },
       f64([](double x) { return std::ceil(x); }),
       {},
       -100,
       100,
       Fam::Rounding,
       true},
      {"round",
       [](const Tensor& x) { return x.round(); },
       f64([](double x) { return std::nearbyint(x); }),  // ties to even (default mode)
       {},
       -100,
       100,
       Fam::Rounding,
       true},
      {"trunc",
       [](const Tensor& x) { return x.trunc(); },
       f64([](double x) { return std::trunc(x); }),
       {},
       -100,
       100,
       Fam::Rounding,
       true},
      {"nan_to_num",
       [](const Tensor& x) { return ox::nan_to_num(x); },
       [](double x, DType dt) {
         return std::isnan(x) ? 0.0 : x == kInf ? largest(dt) : x == -kInf ? -largest(dt) : x;
       },
       {},
       -100,
       100,
       Fam::Rounding},
      {"nan_to_num_args",
       [](const Tensor& x) { return ox::nan_to_num(x, 1.5, 100, -200); },
       f64([](double x) { return std::isnan(x) ? 1.5
                                 : x == kInf   ? 100
                                 : x == -kInf  ? -200
                                               : x; }),
       {},
       -100,
       100,
       Fam::Rounding},
  };
  return c;
}

// Values of the sweep: specials first (for floating dtypes), then the op's domain.
Source sweep_source(const UCase& c, DType dt) {
  if (ox::is_floating(dt)) {
    const std::vector<double> sp = float_specials(dt);
    return [sp, c](int64_t i) {
      if (i < static_cast<int64_t>(sp.size())) return sp[static_cast<size_t>(i)];
      const double v = uniform_at(i, 17, c.lo, c.hi);
      return c.quarters ? std::round(v * 4) / 4 : v;
    };
  }
  if (dt == ox::kBool) return [](int64_t i) { return double(integer_at(i, 5, 0, 1)); };
  // Integers inside both the op's domain and the dtype; a Numeric op also gets the extremes.
  const auto lo = std::max<int64_t>(static_cast<int64_t>(std::ceil(c.lo)), int_min(dt));
  const auto hi = std::min<int64_t>(static_cast<int64_t>(std::floor(c.hi)), int_max(dt));
  const std::vector<double> sp = c.fam == Fam::Numeric ? int_specials(dt) : std::vector<double>{};
  return [sp, lo, hi](int64_t i) {
    if (i < static_cast<int64_t>(sp.size())) return sp[static_cast<size_t>(i)];
    return static_cast<double>(integer_at(i, 29, lo, hi));
  };
}

// The dtype of c's result on dt, or nullopt when c refuses dt.
std::optional<DType> result_dtype(const UCase& c, DType dt) {
  if (ox::is_floating(dt)) return dt;
  switch (c.fam) {
    case Fam::Floating:
      return ox::kF32;
    case Fam::Rounding:
      return dt;
    case Fam::Numeric:
      return dt == ox::kBool ? std::nullopt : std::optional<DType>(dt);
  }
  return std::nullopt;
}

bool wanted(DType dt, const ShapeV& shape, Lay lay) {
  // The large shape (there for the parallel split) in every layout for f32, contiguous for the
  // other floating dtypes and i32; the small shapes take every dtype and layout.
  if (shape != kBig || dt == ox::kF32) return true;
  return lay == Lay::Contig && (ox::is_floating(dt) || dt == ox::kI32);
}

void check_one(const UCase& c, const Tensor& in, DType out_dt, const ShapeV& shape,
               const std::string& what) {
  const Tensor out = c.op(in);
  if (ox::is_floating(out_dt)) {
    std::vector<double> exp = values_of(in);
    for (double& v : exp) v = c.ref(v, out_dt);
    expect_float_values(out, out_dt, shape, exp, what);
  } else if (c.fam == Fam::Numeric) {
    std::vector<int64_t> exp = ints_of(in);
    for (int64_t& v : exp) v = wrap(out_dt, c.iref(v));
    expect_int_values(out, out_dt, shape, exp, what);
  } else {  // rounding ops give integers back unchanged, in new memory
    expect_int_values(out, out_dt, shape, ints_of(in), what);
    if (in.numel() > 0) {
      EXPECT_FALSE(out.is_same_storage(in)) << what;
    }
  }
}

void PrintTo(const UCase& c, std::ostream* os) { *os << c.name; }

class UnarySweep : public ::testing::TestWithParam<UCase> {};

TEST_P(UnarySweep, EveryDTypeShapeAndLayout) {
  const UCase& c = GetParam();
  for (DType dt : ox::kAllDTypes) {
    const std::optional<DType> out_dt = result_dtype(c, dt);
    if (!out_dt) {
      EXPECT_EQ(kind_of([&] { c.op(ox::zeros({3}, dt)); }), ErrorKind::DType) << c.name << dt;
      continue;
    }
    const Source src = sweep_source(c, dt);
    for (const ShapeV& shape : kShapes) {
      for (Lay lay : kLayouts) {
        if (!wanted(dt, shape, lay)) continue;
        const std::string what = c.name + " " + std::string(ox::dtype_name(dt)) + " " +
                                 shape_str(shape) + " " + lay_name(lay);
        const Tensor in = make_input(shape, dt, lay, src);
        check_one(c, in, *out_dt, shape, what);
        if (lay != Lay::Contig) {  // any layout gives what its contiguous copy gives, bitwise
          EXPECT_EQ(bytes_of(c.op(in)), bytes_of(c.op(in.contiguous()))) << what;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, UnarySweep, ::testing::ValuesIn(unary_cases()),
                         [](const ::testing::TestParamInfo<UCase>& info) {
                           std::string n = info.param.name;
                           for (char& ch : n)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// ---- Predicates and bitwise_not ------------------------------------------------------------

struct PCase {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  std::function<bool(double)> ref;
};

TEST(UnaryPredicates, EveryDTypeShapeAndLayout) {
  const std::vector<PCase> cases = {
      {"isnan", [](const Tensor& x) { return ox::isnan(x); },
       [](double v) { return std::isnan(v); }},
      {"isinf", [](const Tensor& x) { return ox::isinf(x); },
       [](double v) { return std::isinf(v); }},
      {"isfinite", [](const Tensor& x) { return ox::isfinite(x); },
       [](double v) { return std::isfinite(v); }},
      {"logical_not", [](const Tensor& x) { return ox::logical_not(x); },
       [](double v) { return v == 0; }},  // NaN is true, so its negation false
  };
  for (const PCase& c : cases) {
    for (DType dt : ox::kAllDTypes) {
      const std::vector<double> sp =
          ox::is_floating(dt) ? float_specials(dt) : std::vector<double>{0, 1};
      const Source src = [&sp, dt](int64_t i) {
        if (i < static_cast<int64_t>(sp.size())) return sp[static_cast<size_t>(i)];
        return ox::is_floating(dt) ? uniform_at(i, 3, -5, 5) : double(integer_at(i, 3, 0, 1));
      };
      for (const ShapeV& shape : kShapes) {
        for (Lay lay : kLayouts) {
          if (!wanted(dt, shape, lay)) continue;
          const std::string what = c.name + " " + std::string(ox::dtype_name(dt)) + " " +
                                   shape_str(shape) + " " + lay_name(lay);
          const Tensor in = make_input(shape, dt, lay, src);
          std::vector<int64_t> exp;
          for (double v : values_of(in)) exp.push_back(c.ref(v));
          expect_int_values(c.op(in), ox::kBool, shape, exp, what);
        }
      }
    }
  }
}

TEST(UnaryBitwiseNot, IntegersAndBool) {
  for (DType dt : {ox::kI64, ox::kI32, ox::kI16, ox::kI8, ox::kU8, ox::kBool}) {
    const std::vector<double> sp = int_specials(dt);
    const Source src = [&](int64_t i) {
      if (i < static_cast<int64_t>(sp.size())) return sp[static_cast<size_t>(i)];
      return double(integer_at(i, 7, std::max<int64_t>(int_min(dt), -1000),
                               std::min<int64_t>(int_max(dt), 1000)));
    };
    for (const ShapeV& shape : kShapes) {
      for (Lay lay : kLayouts) {
        if (!wanted(dt, shape, lay)) continue;
        const std::string what =
            std::string(ox::dtype_name(dt)) + " " + shape_str(shape) + " " + lay_name(lay);
        const Tensor in = make_input(shape, dt, lay, src);
        std::vector<int64_t> exp;
        for (int64_t v : ints_of(in)) exp.push_back(dt == ox::kBool ? !v : wrap(dt, ~v));
        expect_int_values(ox::bitwise_not(in), dt, shape, exp, what);
        expect_int_values(~in, dt, shape, exp, what + " operator~");
      }
    }
  }
  for (DType dt : kFloatTypes)
    EXPECT_EQ(kind_of([&] { ox::bitwise_not(ox::ones({2}, dt)); }), ErrorKind::DType) << dt;
}

// ---- Hand-checked values and documented corners ------------------------------------------

TEST(UnaryValues, SignOfNaNIsNaNAndOfZerosIsZero) {
  const Tensor s = ox::sign(ox::tensor({kNaN, -0.0, 0.0, -3.0, 7.0}, {.dtype = ox::kF64}));
  const std::vector<double> v = values_of(s);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(v[1], 0.0);
  EXPECT_EQ(v[2], 0.0);
  EXPECT_EQ(v[3], -1.0);
  EXPECT_EQ(v[4], 1.0);
}

TEST(UnaryValues, NaNPropagatesThroughReluAndClamp) {
  const Tensor x = ox::tensor({NAN, -1.0f, 2.0f});
  EXPECT_TRUE(std::isnan(x.relu().to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(x.clamp(0, 1).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(x.clamp(std::nullopt, 1).to_vector<float>()[0]));
  EXPECT_TRUE(std::isnan(ox::leaky_relu(x).to_vector<float>()[0]));
  EXPECT_EQ(x.relu().to_vector<float>()[1], 0.0f);
}

TEST(UnaryValues, RoundIsHalfToEven) {
  const Tensor r =
      ox::round(ox::tensor({-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5}, {.dtype = ox::kF64}));
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{-2, -2, -0, 0, 2, 2, 4}));
  EXPECT_TRUE(std::signbit(r.to_vector<double>()[2]));  // -0.5 rounds to -0
}

TEST(UnaryValues, IntegerWrapAtTheExtremes) {
  const Tensor i8 = ox::tensor(std::vector<int8_t>{-128, 127, -1});
  EXPECT_EQ(ints_of(ox::neg(i8)), (std::vector<int64_t>{-128, -127, 1}));
  EXPECT_EQ(ints_of(ox::abs(i8)), (std::vector<int64_t>{-128, 127, 1}));
  EXPECT_EQ(ints_of(ox::square(i8)), (std::vector<int64_t>{0, 1, 1}));  // 127^2 = 16129 = 63*256+1
  const Tensor u8 = ox::tensor(std::vector<uint8_t>{0, 1, 255});
  EXPECT_EQ(ints_of(ox::neg(u8)), (std::vector<int64_t>{0, 255, 1}));
  const Tensor i64 = ox::tensor(std::vector<int64_t>{INT64_MIN, INT64_MAX});
  EXPECT_EQ(ints_of(ox::neg(i64)), (std::vector<int64_t>{INT64_MIN, -INT64_MAX}));
  EXPECT_EQ(ints_of(ox::abs(i64)), (std::vector<int64_t>{INT64_MIN, INT64_MAX}));
}

TEST(UnaryValues, FloatingOpsOnIntegersComputeInF32) {
  const Tensor x = ox::tensor({1, 4, 9});  // i64
  const Tensor r = ox::sqrt(x);
  EXPECT_EQ(r.dtype(), ox::kF32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(ox::exp(ox::tensor({true, false})).dtype(), ox::kF32);
  EXPECT_EQ(ox::reciprocal(ox::tensor({0})).item<float>(), INFINITY);
  // Rounding an integer is the identity, dtype kept.
  EXPECT_EQ(ox::floor(x).dtype(), ox::kI64);
  EXPECT_EQ(ints_of(ox::round(x)), (std::vector<int64_t>{1, 4, 9}));
}

TEST(UnaryValues, NanToNumDefaultsAreTheDtypeExtremes) {
  const std::vector<double> in = {kNaN, kInf, -kInf, 3};
  EXPECT_EQ(values_of(ox::nan_to_num(ox::tensor(in, {.dtype = ox::kF16}))),
            (std::vector<double>{0, 65504, -65504, 3}));
  EXPECT_EQ(values_of(ox::nan_to_num(ox::tensor(in, {.dtype = ox::kF32}))),
            (std::vector<double>{0, FLT_MAX, -FLT_MAX, 3}));
  EXPECT_EQ(values_of(ox::nan_to_num(ox::tensor(in, {.dtype = ox::kF64}))),
            (std::vector<double>{0, DBL_MAX, -DBL_MAX, 3}));
  EXPECT_EQ(values_of(ox::nan_to_num(ox::tensor(in, {.dtype = ox::kBF16}))),
            (std::vector<double>{0, 0x1.fep127, -0x1.fep127, 3}));
}

TEST(UnaryValues, OverflowAndUnderflowBoundaries) {
  // f32 exp overflows past ln(FLT_MAX) = 88.72; f16 results above 65519.99 round to inf.
  EXPECT_EQ(ox::exp(ox::tensor({89.0f})).item<float>(), INFINITY);
  EXPECT_EQ(ox::exp(ox::tensor({-104.0f})).item<float>(), 0.0f);
  EXPECT_EQ(ox::square(ox::tensor({300.0}, {.dtype = ox::kF16})).item<float>(), INFINITY);
  EXPECT_EQ(ox::sigmoid(ox::tensor({-1e20f, 1e20f})).to_vector<float>(),
            (std::vector<float>{0, 1}));
  EXPECT_EQ(ox::logsigmoid(ox::tensor({-1e20f})).item<float>(), -1e20f);
  EXPECT_EQ(ox::softplus(ox::tensor({1e20f})).item<float>(), 1e20f);
}

// ---- clamp ---------------------------------------------------------------------------------

double clamp_ref(double x, std::optional<double> lo, std::optional<double> hi) {
  if (std::isnan(x)) return x;
  if (lo) x = std::max(x, *lo);
  if (hi) x = std::min(x, *hi);
  return x;
}

TEST(Clamp, FloatingEveryShapeAndLayout) {
  const std::vector<std::pair<std::optional<double>, std::optional<double>>> bounds = {
      {-0.5, 0.5}, {-0.5, std::nullopt}, {std::nullopt, 0.5}, {0.75, 0.25}};
  for (DType dt : kFloatTypes) {
    const std::vector<double> sp = float_specials(dt);
    const Source src = [&](int64_t i) {
      return i < int64_t(sp.size()) ? sp[size_t(i)] : uniform_at(i, 41, -2, 2);
    };
    for (const auto& [lo, hi] : bounds) {
      for (const ShapeV& shape : kShapes) {
        for (Lay lay : kLayouts) {
          if (!wanted(dt, shape, lay)) continue;
          const std::string what = std::string(ox::dtype_name(dt)) + " " + shape_str(shape) + " " +
                                   lay_name(lay) + " lo " + (lo ? std::to_string(*lo) : "-") +
                                   " hi " + (hi ? std::to_string(*hi) : "-");
          const Tensor in = make_input(shape, dt, lay, src);
          std::optional<ox::Scalar> slo, shi;
          if (lo) slo = *lo;
          if (hi) shi = *hi;
          std::vector<double> exp = values_of(in);
          for (double& v : exp) v = clamp_ref(v, lo, hi);  // lo > hi gives hi, as min(max())
          expect_float_values(ox::clamp(in, slo, shi), dt, shape, exp, what);
        }
      }
    }
  }
}

TEST(Clamp, IntegersKeepTheirDtype) {
  for (DType dt : kIntTypes) {
    const Source src = [dt](int64_t i) {
      return double(integer_at(i, 43, std::max<int64_t>(int_min(dt), -100), 100));
    };
    for (const ShapeV& shape : {ShapeV{}, ShapeV{0}, ShapeV{23}, kBig}) {
      for (Lay lay : {Lay::Contig, Lay::Transposed, Lay::Flipped}) {
        const std::string what = std::string(ox::dtype_name(dt)) + shape_str(shape) + lay_name(lay);
        const Tensor in = make_input(shape, dt, lay, src);
        std::vector<int64_t> exp = ints_of(in);
        for (int64_t& v : exp) v = std::min<int64_t>(std::max<int64_t>(v, 2), 50);
        expect_int_values(ox::clamp(in, 2, 50), dt, shape, exp, what);
      }
    }
  }
}

TEST(Clamp, BoundsOutsideAnIntegerDtypeClampNothing) {
  // Every u8 is in [-1, 300], every i8 in [-1000, 1000]: clamping changes nothing.
  const Tensor u8 = ox::tensor(std::vector<uint8_t>{0, 7, 255});
  EXPECT_EQ(ints_of(ox::clamp(u8, -1, 300)), (std::vector<int64_t>{0, 7, 255}));
  EXPECT_EQ(ox::clamp(u8, -1, 300).dtype(), ox::kU8);
  const Tensor i8 = ox::tensor(std::vector<int8_t>{-128, 5, 127});
  EXPECT_EQ(ints_of(ox::clamp(i8, -1000, 1000)), (std::vector<int64_t>{-128, 5, 127}));
  EXPECT_EQ(ints_of(ox::clamp(i8, std::nullopt, 1000)), (std::vector<int64_t>{-128, 5, 127}));
  EXPECT_EQ(ints_of(ox::clamp(i8, 200, std::nullopt)), (std::vector<int64_t>{127, 127, 127}));
  EXPECT_EQ(ints_of(ox::clamp(i8, std::nullopt, -200)), (std::vector<int64_t>{-128, -128, -128}));
}

TEST(Clamp, FloatBoundOnIntegersPromotesAndMinAboveMaxGivesMax) {
  const Tensor x = ox::tensor({-3, 0, 4});
  const Tensor r = ox::clamp(x, -0.5, 2.5);
  EXPECT_EQ(r.dtype(), ox::kF32);
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{-0.5f, 0.0f, 2.5f}));
  EXPECT_EQ(ints_of(ox::clamp(x, 3, 1)), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ox::clamp(ox::tensor({-3.f, 0.f, 4.f}), 3, 1).to_vector<float>(),
            (std::vector<float>{1, 1, 1}));
  // bool with integer bounds computes in i64, as torch.clamp's promotion.
  EXPECT_EQ(ox::clamp(ox::tensor({true, false}), 0, 1).dtype(), ox::kI64);
}

TEST(Clamp, TensorBoundsBroadcastAndPropagateNaN) {
  const Tensor x = ox::tensor({{-2.f, 0.f, 2.f}, {5.f, NAN, -5.f}});
  const Tensor lo = ox::tensor({-1.f, NAN, 0.f});
  const Tensor hi = ox::tensor({{1.f}, {3.f}});
  const std::vector<float> r = ox::clamp(x, lo, hi).to_vector<float>();
  EXPECT_EQ(r[0], -1.f);
  EXPECT_TRUE(std::isnan(r[1]));
  EXPECT_EQ(r[2], 1.f);
  EXPECT_EQ(r[3], 3.f);
  EXPECT_TRUE(std::isnan(r[4]));
  EXPECT_EQ(r[5], 0.f);
  EXPECT_EQ(ox::clamp(x, Tensor(), hi).to_vector<float>()[0], -2.f);
  EXPECT_EQ(kind_of([&] { ox::clamp(x, Tensor(), Tensor()); }), ErrorKind::Value);
}

TEST(Clamp, InPlace) {
  Tensor x = ox::tensor({-2.f, 0.5f, 3.f});
  const uint64_t v0 = x.storage()->version();
  x.clamp_(0, 1);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0.5f, 1}));
  EXPECT_GT(x.storage()->version(), v0);
  Tensor t = ox::tensor({{-2.f, 5.f}, {3.f, -4.f}}).t();  // through a transposed view
  t.clamp_(-3, 3);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{-2, 3, 3, -3}));
  Tensor i = ox::tensor({1, 2});
  EXPECT_EQ(kind_of([&] { i.clamp_(0.5); }), ErrorKind::DType);  // f32 result into i64
  Tensor e = ox::zeros({3}).expand({2, 3});
  EXPECT_EQ(kind_of([&] { e.clamp_(0, 1); }), ErrorKind::Value);
}

// ---- Errors ---------------------------------------------------------------------------------

TEST(UnaryErrors, TypedErrors) {
  const Tensor b = ox::tensor({true, false});
  EXPECT_EQ(kind_of([&] { ox::neg(b); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { -b; }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::abs(b); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::sign(b); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::relu(b); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::bitwise_not(ox::ones({1})); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ~ox::ones({1}, ox::kF64); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::gelu(ox::ones({1}), "fast"); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::softplus(ox::ones({1}), 0.0); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::clamp(ox::ones({1}), std::nullopt, std::nullopt); }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::exp(Tensor()); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::isnan(Tensor()); }), ErrorKind::Value);
  const ox::Error e = oxtest::caught([&] { ox::neg(b); });
  EXPECT_TRUE(oxtest::contains(e, "[neg]")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "bool")) << e.what();
}

// ---- Thread counts ----------------------------------------------------------------------------

TEST(UnaryThreads, OneAndTwoThreadsAreBitwiseIdentical) {
  ThreadGuard guard;
  const Source src = [](int64_t i) { return uniform_at(i, 99, -8, 8); };
  for (Lay lay : {Lay::Contig, Lay::Transposed, Lay::Flipped, Lay::ExpandInner}) {
    const Tensor x = make_input(kBig, ox::kF32, lay, src);
    const Tensor xi = make_input(kBig, ox::kI32, lay, src);
    const std::vector<std::function<Tensor()>> ops = {
        [&] { return ox::exp(x); },          [&] { return ox::gelu(x, "tanh"); },
        [&] { return ox::clamp(x, -1, 1); }, [&] { return ox::isnan(x); },
        [&] { return ox::neg(xi); },         [&] { return ox::sqrt(xi); }};
    for (size_t k = 0; k < ops.size(); ++k) {
      ox::set_num_threads(1);
      const std::vector<uint8_t> one = bytes_of(ops[k]());
      ox::set_num_threads(2);
      EXPECT_EQ(one, bytes_of(ops[k]())) << "op " << k << " " << lay_name(lay);
    }
  }
}

}  // namespace
