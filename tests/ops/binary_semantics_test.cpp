// Binary elementwise ops, by rule: type promotion of results, division rounding modes, integer
// division by zero, integer powers, wrapping, in-place forms (casting, aliasing, versions),
// where / masked_fill / lerp / addcmul / addcdiv, operators, and typed errors. Expected values
// are hand-derived numbers or f64 formulas written here.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/ew_util.h"
#include "tensor/storage.h"
#include "test_util.h"

namespace {

using namespace ewtest;  // NOLINT: the helpers are this test's vocabulary
using ox::ErrorKind;
using oxtest::kind_of;
using oxtest::shape_of;

std::vector<double> f64s(const Tensor& t) { return t.to_vector<double>(); }

// ---- Promotion ------------------------------------------------------------------------------

TEST(BinaryPromotion, ResultDtypes) {
  const Tensor i32 = ox::tensor(std::vector<int32_t>{1, 2, 3});
  const Tensor f16 = ox::ones({3}, ox::kF16), bf16 = ox::ones({3}, ox::kBF16);
  EXPECT_EQ((i32 + 2.5).dtype(), ox::kF32);
  EXPECT_EQ(f64s(i32 + 2.5), (std::vector<double>{3.5, 4.5, 5.5}));
  EXPECT_EQ((i32 + 2).dtype(), ox::kI32);
  EXPECT_EQ((2 * i32).dtype(), ox::kI32);
  EXPECT_EQ((ox::tensor({true}) + 1).dtype(), ox::kI64);
  EXPECT_EQ((ox::tensor({true}) + true).dtype(), ox::kBool);
  EXPECT_EQ((i32 + ox::scalar_tensor(1.0, {.dtype = ox::kF64})).dtype(), ox::kF64);
  EXPECT_EQ((i32 + ox::scalar_tensor(1, {.dtype = ox::kI64})).dtype(), ox::kI32);
  EXPECT_EQ((i32 + ox::tensor({1})).dtype(), ox::kI64);  // both dimensioned
  EXPECT_EQ((f16 + 2.5).dtype(), ox::kF16);
  EXPECT_EQ((f16 + 0.1).dtype(), ox::kF16);
  EXPECT_EQ((f16 + ox::ones({3})).dtype(), ox::kF32);
  EXPECT_EQ((f16 + bf16).dtype(), ox::kF32);
  EXPECT_EQ((bf16 + i32).dtype(), ox::kBF16);
  EXPECT_EQ(ox::eq(f16, 1).dtype(), ox::kBool);
  EXPECT_EQ(ox::atan2(i32, i32).dtype(), ox::kF32);
  EXPECT_EQ(ox::maximum(ox::ones({1}, ox::kU8), ox::ones({1}, ox::kI8)).dtype(), ox::kI16);
}

TEST(BinaryPromotion, IntegerScalarsWrapIntoTheTensorDtype) {
  const Tensor u8 = ox::tensor(std::vector<uint8_t>{200, 0, 255});
  const Tensor r = u8 + 1000;  // 1000 = 3 * 256 + 232
  EXPECT_EQ(r.dtype(), ox::kU8);
  EXPECT_EQ(ints_of(r), (std::vector<int64_t>{176, 232, 231}));
  EXPECT_EQ(ints_of(u8 - 1), (std::vector<int64_t>{199, 255, 254}));
  const Tensor i8 = ox::tensor(std::vector<int8_t>{127, -128});
  EXPECT_EQ(ints_of(i8 + 1), (std::vector<int64_t>{-128, -127}));
  EXPECT_EQ(ints_of(i8 * 2), (std::vector<int64_t>{-2, 0}));
  const Tensor i64 = ox::tensor(std::vector<int64_t>{INT64_MAX, INT64_MIN});
  EXPECT_EQ(ints_of(i64 + 1), (std::vector<int64_t>{INT64_MIN, INT64_MIN + 1}));
  EXPECT_EQ(ints_of(i64 * -1), (std::vector<int64_t>{-INT64_MAX, INT64_MIN}));
  // alpha wraps the same way: u8 x - 254 y is x + 2 y modulo 256.
  EXPECT_EQ(ints_of(ox::sub(ox::tensor(std::vector<uint8_t>{10}),
                            ox::tensor(std::vector<uint8_t>{3}), -2)),
            (std::vector<int64_t>{16}));
}

TEST(BinaryPromotion, IntegerDivisionIsTrueDivisionInF32) {
  const Tensor a = ox::tensor({7, -7, 1, 0}), b = ox::tensor({2, 2, 0, 0});
  const Tensor q = a / b;
  EXPECT_EQ(q.dtype(), ox::kF32);
  const std::vector<double> v = f64s(q);
  EXPECT_EQ(v[0], 3.5);
  EXPECT_EQ(v[1], -3.5);
  EXPECT_EQ(v[2], kInf);
  EXPECT_TRUE(std::isnan(v[3]));
  EXPECT_EQ(ox::div(ox::tensor({true}), ox::tensor({true})).dtype(), ox::kF32);
  EXPECT_EQ((ox::tensor(std::vector<int32_t>{3}) / 2).item<float>(), 1.5f);
}

TEST(BinaryPromotion, HalfTensorWithScalarComputesInF32) {
  // PyTorch computes f16 op scalar with the scalar exact, in f32, then rounds once.
  const Tensor h = ox::tensor({1.0, 2048.0, 0.1}, {.dtype = ox::kF16});
  // 1 + 2049 = 2050 (representable); rounding 2049 to f16 first (2048) would give 2048 + 1 -> 2048.
  EXPECT_EQ(f64s(h + 2049)[0], 2050.0);
  EXPECT_EQ(f64s(ox::add(h, 2049))[1], 4096.0);  // 4097 rounds to even 4096
  // 2048 + 0.1: exact 2048.1 rounds to 2048 in f16 (spacing 2).
  EXPECT_EQ(f64s(h + 0.1)[1], 2048.0);
  // f16(0.1) = 0.0999755859375; times 3 is 0.2999267578125, halfway between the f16 neighbours
  // 0.2998046875 (mantissa even) and 0.30004882812: ties go to even.
  EXPECT_EQ(f64s(h * 3)[2], 0.2998046875);
  // Comparisons take the same path: f16's 0.0999755859375 against f32's 0.1f.
  EXPECT_FALSE(ox::eq(ox::tensor({0.1}, {.dtype = ox::kF16}), 0.1).item<bool>());
  EXPECT_TRUE(ox::eq(ox::tensor({2.5}, {.dtype = ox::kF16}), 2.5).item<bool>());
  // bf16 1 + 1e20: 1e20 rounds to bf16 once, 0x60AD (9.9727710149e19).
  EXPECT_EQ(f64s(ox::tensor({1.0}, {.dtype = ox::kBF16}) + 1e20)[0], 0x1.5ap+66);
  Tensor hi = h.clone();
  hi += 2049;
  EXPECT_EQ(f64s(hi)[0], 2050.0);
}

// ---- Division rounding modes and integer division by zero ------------------------------------

TEST(BinaryDivision, RoundingModesOnIntegersAndFloats) {
  const std::vector<int64_t> a = {7, -7, 7, -7, 0, 6, -6};
  const std::vector<int64_t> b = {2, 2, -2, -2, 3, -3, 4};
  const std::vector<int64_t> floor = {3, -4, -4, 3, 0, -2, -2};
  const std::vector<int64_t> trunc = {3, -3, -3, 3, 0, -2, -1};
  const std::vector<int64_t> rem = {1, 1, -1, -1, 0, 0, 2};    // sign of the divisor
  const std::vector<int64_t> fmod = {1, -1, 1, -1, 0, 0, -2};  // sign of the dividend
  for (DType dt :
       {ox::kI64, ox::kI32, ox::kI16, ox::kI8, ox::kF32, ox::kF64, ox::kF16, ox::kBF16}) {
    const Tensor x = ox::tensor(a, {.dtype = dt}), y = ox::tensor(b, {.dtype = dt});
    const std::string n(ox::dtype_name(dt));
    EXPECT_EQ(ox::div(x, y, "floor").dtype(), dt) << n;
    EXPECT_EQ(ints_of(ox::div(x, y, "floor")), floor) << n;
    EXPECT_EQ(ints_of(ox::floor_divide(x, y)), floor) << n;
    EXPECT_EQ(ints_of(ox::div(x, y, "trunc")), trunc) << n;
    EXPECT_EQ(ox::div(x, y, "trunc").dtype(), dt) << n;
    EXPECT_EQ(ints_of(ox::remainder(x, y)), rem) << n;
    EXPECT_EQ(ints_of(x % y), rem) << n;
    EXPECT_EQ(ints_of(ox::fmod(x, y)), fmod) << n;
  }
  // Non-integral float quotients.
  const Tensor x = ox::tensor({-7.5, 7.5, -0.5}, {.dtype = ox::kF64}),
               y = ox::tensor({2.0, -2.0, 4.0}, {.dtype = ox::kF64});
  EXPECT_EQ(f64s(ox::div(x, y, "floor")), (std::vector<double>{-4, -4, -1}));
  EXPECT_EQ(f64s(ox::div(x, y, "trunc")), (std::vector<double>{-3, -3, 0}));
  EXPECT_EQ(f64s(ox::remainder(x, y)), (std::vector<double>{0.5, -0.5, 3.5}));
  EXPECT_EQ(f64s(ox::fmod(x, y)), (std::vector<double>{-1.5, 1.5, -0.5}));
  EXPECT_EQ(kind_of([&] { ox::div(x, y, "round"); }), ErrorKind::Value);
}

TEST(BinaryDivision, IntegerDivisionByZeroIsZero) {
  for (DType dt : kIntTypes) {
    const Tensor x = ox::tensor({5, 0, 100}, {.dtype = dt}), z = ox::zeros({3}, dt);
    const std::string n(ox::dtype_name(dt));
    EXPECT_EQ(ints_of(ox::div(x, z, "floor")), (std::vector<int64_t>{0, 0, 0})) << n;
    EXPECT_EQ(ints_of(ox::div(x, z, "trunc")), (std::vector<int64_t>{0, 0, 0})) << n;
    EXPECT_EQ(ints_of(ox::floor_divide(x, 0)), (std::vector<int64_t>{0, 0, 0})) << n;
    EXPECT_EQ(ints_of(ox::remainder(x, z)), (std::vector<int64_t>{0, 0, 0})) << n;
    EXPECT_EQ(ints_of(ox::fmod(x, 0)), (std::vector<int64_t>{0, 0, 0})) << n;
  }
  // Floats follow IEEE: inf, nan.
  const std::vector<double> f =
      f64s(ox::div(ox::tensor({1.0, -1.0, 0.0}, {.dtype = ox::kF64}), 0.0, "floor"));
  EXPECT_EQ(f[0], kInf);
  EXPECT_EQ(f[1], -kInf);
  EXPECT_TRUE(std::isnan(f[2]));
  EXPECT_TRUE(std::isnan(f64s(ox::remainder(ox::tensor({1.0}, {.dtype = ox::kF64}), 0.0))[0]));
  EXPECT_TRUE(std::isnan(f64s(ox::fmod(ox::tensor({1.0}, {.dtype = ox::kF64}), 0.0))[0]));
}

TEST(BinaryDivision, MostNegativeByMinusOneWraps) {
  const Tensor x = ox::tensor(std::vector<int64_t>{INT64_MIN});
  EXPECT_EQ(ints_of(ox::div(x, -1, "floor")), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(ints_of(ox::div(x, -1, "trunc")), (std::vector<int64_t>{INT64_MIN}));
  EXPECT_EQ(ints_of(ox::remainder(x, -1)), (std::vector<int64_t>{0}));
  EXPECT_EQ(ints_of(ox::fmod(x, -1)), (std::vector<int64_t>{0}));
  const Tensor y = ox::tensor(std::vector<int8_t>{-128});
  EXPECT_EQ(ints_of(ox::floor_divide(y, -1)), (std::vector<int64_t>{-128}));
}

TEST(BinaryDivision, PythonFloorSemanticsForFloats) {
  // 2.5 // 0.1 is 24 in Python (the quotient 24.99999999999999861 is below 25), -1 // inf is
  // -1, 1 // inf is 0, inf // 1 is nan.
  const Tensor x = ox::tensor({2.5, -1.0, 1.0, kInf}, {.dtype = ox::kF64});
  const Tensor y = ox::tensor({0.1, kInf, kInf, 1.0}, {.dtype = ox::kF64});
  const std::vector<double> r = f64s(ox::floor_divide(x, y));
  EXPECT_EQ(r[0], 24.0);
  EXPECT_EQ(r[1], -1.0);
  EXPECT_EQ(r[2], 0.0);
  EXPECT_TRUE(std::isnan(r[3]));
  // remainder(-1, inf) = inf and remainder(1, -inf) = -inf (Python), fmod keeps the dividend.
  const std::vector<double> m =
      f64s(ox::remainder(ox::tensor({-1.0, 1.0}, {.dtype = ox::kF64}), ox::tensor({kInf, -kInf})));
  EXPECT_EQ(m, (std::vector<double>{kInf, -kInf}));
  EXPECT_EQ(f64s(ox::fmod(ox::tensor({-1.0}, {.dtype = ox::kF64}), kInf)),
            (std::vector<double>{-1.0}));
}

// ---- Powers -----------------------------------------------------------------------------------

TEST(BinaryPow, IntegerPowersWrapAndNegativeExponentsTruncate) {
  const Tensor base = ox::tensor({2, 1, -1, -1, 0, 3, -2});
  const Tensor expo = ox::tensor({-1, -5, -3, -2, -1, 0, 3});
  // trunc(1 / base^|e|): 0 except for bases 1 and -1.
  EXPECT_EQ(ints_of(ox::pow(base, expo)), (std::vector<int64_t>{0, 1, -1, 1, 0, 1, -8}));
  EXPECT_EQ(ox::pow(base, expo).dtype(), ox::kI64);
  EXPECT_EQ(ints_of(ox::pow(ox::tensor(std::vector<int8_t>{3}), 5)), (std::vector<int64_t>{-13}));
  EXPECT_EQ(ints_of(ox::pow(ox::tensor({2}), 64)), (std::vector<int64_t>{0}));
  EXPECT_EQ(
      ints_of(ox::pow(ox::tensor({3}), 40)),
      (std::vector<int64_t>{static_cast<int64_t>(12157665459056928801ull)}));  // 3^40 mod 2^64
  EXPECT_EQ(ox::pow(ox::tensor({2}), 0.5).dtype(), ox::kF32);
  EXPECT_FLOAT_EQ(ox::pow(ox::tensor({2}), 0.5).item<float>(), std::sqrt(2.0f));
  EXPECT_EQ(ox::pow(2, ox::tensor({3})).item<int64_t>(), 8);
  EXPECT_EQ(ox::pow(2.0, ox::tensor({3})).dtype(), ox::kF32);
  EXPECT_EQ(ox::tensor({3.0}, {.dtype = ox::kF64}).pow(2).item<double>(), 9.0);
  EXPECT_EQ(kind_of([&] { ox::pow(ox::tensor({true}), ox::tensor({true})); }), ErrorKind::DType);
}

// ---- NaN and signed zeros -----------------------------------------------------------------------

TEST(BinaryNaN, MaximumMinimumPropagateComparisonsAreFalse) {
  const Tensor a = ox::tensor({kNaN, 1.0, kNaN}, {.dtype = ox::kF64}),
               b = ox::tensor({1.0, kNaN, kNaN}, {.dtype = ox::kF64});
  for (const Tensor& r : {ox::maximum(a, b), ox::minimum(a, b)})
    for (double v : f64s(r)) EXPECT_TRUE(std::isnan(v));
  EXPECT_EQ(ints_of(ox::eq(a, b)), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(ints_of(ox::ne(a, b)), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ints_of(ox::lt(a, b)), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(ints_of(ox::ge(a, b)), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(ints_of(ox::logical_and(a, b)), (std::vector<int64_t>{1, 1, 1}));  // NaN is true
  // Clamp with tensor bounds propagates a NaN bound.
  EXPECT_TRUE(std::isnan(
      f64s(ox::clamp(ox::tensor({0.0}, {.dtype = ox::kF64}), ox::tensor({kNaN}), Tensor()))[0]));
  EXPECT_EQ(f64s(ox::logaddexp(ox::tensor({-kInf, kInf}), ox::tensor({-kInf, -kInf}))),
            (std::vector<double>{-kInf, kInf}));
}

// ---- In place
// -------------------------------------------------------------------------------------

TEST(BinaryInPlace, ValuesOnEveryLayout) {
  const Source s1 = [](int64_t i) { return uniform_at(i, 1, -10, 10); };
  const Source s2 = [](int64_t i) { return uniform_at(i, 2, 0.5, 10); };
  for (DType dt : {ox::kF32, ox::kF64, ox::kF16}) {
    for (Lay lay : {Lay::Contig, Lay::Transposed, Lay::Narrowed, Lay::Flipped}) {
      for (const ShapeV& shape : {ShapeV{}, ShapeV{0}, ShapeV{23}, ShapeV{31, 17}, kBig}) {
        const std::string what = std::string(ox::dtype_name(dt)) + shape_str(shape) + lay_name(lay);
        const Tensor y = make_input(shape, dt, Lay::Contig, s2);
        const std::vector<double> vy = values_of(y);
        struct Step {
          const char* name;
          std::function<void(Tensor&)> apply;
          std::function<double(double, double)> ref;
        };
        const std::vector<Step> steps = {
            {"add_", [&](Tensor& x) { x.add_(y); }, [](double a, double b) { return a + b; }},
            {"add_alpha", [&](Tensor& x) { x.add_(y, 0.5); },
             [](double a, double b) { return a + 0.5 * b; }},
            {"sub_", [&](Tensor& x) { x.sub_(y); }, [](double a, double b) { return a - b; }},
            {"mul_", [&](Tensor& x) { x.mul_(y); }, [](double a, double b) { return a * b; }},
            {"div_", [&](Tensor& x) { x.div_(y); }, [](double a, double b) { return a / b; }},
            {"+=", [&](Tensor& x) { x += y; }, [](double a, double b) { return a + b; }},
            {"-=", [&](Tensor& x) { x -= y; }, [](double a, double b) { return a - b; }},
            {"*=", [&](Tensor& x) { x *= y; }, [](double a, double b) { return a * b; }},
            {"/=", [&](Tensor& x) { x /= y; }, [](double a, double b) { return a / b; }},
            {"add_ scalar", [&](Tensor& x) { x.add_(1.5); },
             [](double a, double) { return a + 1.5; }},
            {"mul_ scalar", [&](Tensor& x) { x.mul_(-3); },
             [](double a, double) { return a * -3; }},
            {"/= scalar", [&](Tensor& x) { x /= 4; }, [](double a, double) { return a / 4; }},
        };
        for (const Step& st : steps) {
          if (shape == kBig && dt != ox::kF32) continue;
          Tensor x = make_input(shape, dt, lay, s1);
          const std::vector<double> vx = values_of(x);
          const Tensor keep = x;  // the same handle: in place means x is still x
          const uint64_t version = x.storage()->version();
          st.apply(x);
          EXPECT_EQ(x.impl(), keep.impl()) << what << st.name;
          std::vector<double> exp(vx.size());
          for (size_t i = 0; i < vx.size(); ++i) exp[i] = st.ref(vx[i], vy[i]);
          expect_float_values(x, dt, shape, exp, what + " " + st.name);
          EXPECT_GT(x.storage()->version(), version) << what << st.name;
        }
      }
    }
  }
}

TEST(BinaryInPlace, IntegersAndBroadcastOther) {
  Tensor x = ox::tensor({{1, 2, 3}, {4, 5, 6}});
  x.add_(ox::tensor({10, 20, 30}), 2);
  EXPECT_EQ(ints_of(x), (std::vector<int64_t>{21, 42, 63, 24, 45, 66}));
  x.sub_(ox::tensor({{1}, {2}}));
  EXPECT_EQ(ints_of(x), (std::vector<int64_t>{20, 41, 62, 22, 43, 64}));
  x *= ox::tensor(std::vector<int32_t>{1, 0, -1});  // i32 into i64: fine
  EXPECT_EQ(ints_of(x), (std::vector<int64_t>{20, 0, -62, 22, 0, -64}));
  Tensor h = ox::tensor({1.0, 2.0}, {.dtype = ox::kF16});
  h += ox::tensor({0.5f, 0.25f});  // f32 result cast back into f16
  EXPECT_EQ(f64s(h), (std::vector<double>{1.5, 2.25}));
  EXPECT_EQ(h.dtype(), ox::kF16);
  Tensor u = ox::tensor(std::vector<uint8_t>{250});
  u += 10;
  EXPECT_EQ(ints_of(u), (std::vector<int64_t>{4}));
}

TEST(BinaryInPlace, ResultThatCannotBeCastIsADtypeError) {
  Tensor i = ox::tensor(std::vector<int32_t>{1, 2});
  EXPECT_EQ(kind_of([&] { i.add_(2.5); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { i.div_(2); }), ErrorKind::DType);  // true division gives f32
  EXPECT_EQ(kind_of([&] { i /= ox::tensor({2}); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { i += ox::ones({2}); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { i.add_(ox::ones({2}), 0.5); }), ErrorKind::DType);
  Tensor b = ox::tensor({true, false});
  EXPECT_EQ(kind_of([&] { b.add_(1); }), ErrorKind::DType);  // i64 into bool
  EXPECT_EQ(kind_of([&] { b.sub_(ox::tensor({true, true})); }), ErrorKind::DType);
  EXPECT_EQ(ints_of(i), (std::vector<int64_t>{1, 2}));  // untouched
}

TEST(BinaryInPlace, ExpandedSelfIsAValueErrorAndShapesMustNotGrow) {
  Tensor e = ox::zeros({3}).expand({4, 3});
  EXPECT_EQ(kind_of([&] { e.add_(1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { e.mul_(ox::ones({4, 3})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { e += 1.0; }), ErrorKind::Value);
  Tensor ei = ox::zeros({3}, ox::kI32).expand({2, 3});
  EXPECT_EQ(kind_of([&] { ei.add_(2.5); }), ErrorKind::Value);
  Tensor x = ox::zeros({3});
  EXPECT_EQ(kind_of([&] { x.add_(ox::ones({2, 3})); }), ErrorKind::Shape);
  Tensor h = ox::zeros({3}, ox::kF16);
  EXPECT_EQ(kind_of([&] { h.add_(ox::ones({2, 3})); }), ErrorKind::Shape);  // the converting path
  EXPECT_EQ(kind_of([&] { x.add_(ox::ones({4})); }), ErrorKind::Shape);
}

TEST(BinaryInPlace, OtherOperandAliasingSelf) {
  const std::vector<double> v = {1, 2, 3, 4, 5};
  {
    Tensor x = ox::tensor(v);
    x.add_(x.flip({0}));  // every element reads the original mirror element
    EXPECT_EQ(f64s(x), (std::vector<double>{6, 6, 6, 6, 6}));
  }
  {
    Tensor x = ox::tensor(v);
    x.mul_(x);
    EXPECT_EQ(f64s(x), (std::vector<double>{1, 4, 9, 16, 25}));
  }
  {
    Tensor x = ox::tensor(v);
    Tensor tail = x.narrow(0, 1, 4);
    tail.add_(x.narrow(0, 0, 4));  // overlapping shifted windows, not a running sum
    EXPECT_EQ(f64s(x), (std::vector<double>{1, 3, 5, 7, 9}));
  }
  {
    Tensor m = ox::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.dtype = ox::kF64});
    m.sub_(m.t());
    EXPECT_EQ(f64s(m), (std::vector<double>{0, -1, 1, 0}));
  }
  {
    Tensor m = ox::tensor({{1.0, 2.0}, {3.0, 4.0}}, {.dtype = ox::kF64});
    m.sub_(m.select(0, 0));  // row 0 broadcast over both rows, read before it changes
    EXPECT_EQ(f64s(m), (std::vector<double>{0, 0, 2, 2}));
  }
  {
    Tensor x = ox::tensor(std::vector<int32_t>{1, 2, 3});
    x += x.flip({0});
    EXPECT_EQ(ints_of(x), (std::vector<int64_t>{4, 4, 4}));
  }
  {  // aliasing through a dtype conversion (f16 self, f32 result)
    Tensor h = ox::tensor({1.0, 2.0, 3.0}, {.dtype = ox::kF16});
    h.add_(h.flip({0}).to(ox::kF32));
    EXPECT_EQ(f64s(h), (std::vector<double>{4, 4, 4}));
  }
}

TEST(BinaryInPlace, VersionCounterBumpsOnEveryPath) {
  Tensor x = ox::ones({4});
  Tensor view = x.narrow(0, 1, 2);
  uint64_t v = x.storage()->version();
  view.add_(1);  // direct path, through a view: the shared storage's counter moves
  EXPECT_GT(x.storage()->version(), v);
  v = x.storage()->version();
  Tensor h = ox::ones({4}, ox::kF16);
  const uint64_t hv = h.storage()->version();
  h.add_(ox::ones({4}));  // converting path
  EXPECT_GT(h.storage()->version(), hv);
  x.masked_fill_(ox::tensor({true, false, false, false}), 5.0);
  EXPECT_GT(x.storage()->version(), v);
  v = x.storage()->version();
  x.clamp_(0, 2);
  EXPECT_GT(x.storage()->version(), v);
  EXPECT_EQ(f64s(x), (std::vector<double>{2, 2, 2, 1}));
}

// ---- where, masked_fill -------------------------------------------------------------------------

TEST(Where, ValuesLayoutsBroadcastingAndPromotion) {
  const Source sc = [](int64_t i) { return double(integer_at(i, 11, 0, 1)); };
  const Source sa = [](int64_t i) { return uniform_at(i, 12, -5, 5); };
  const Source sb = [](int64_t i) { return uniform_at(i, 13, -5, 5); };
  for (DType dt : ox::kAllDTypes) {
    for (Lay lay : kLayouts) {
      for (const ShapeV& shape : kShapes) {
        if (shape == kBig && dt != ox::kF32 && lay != Lay::Contig) continue;
        const std::string what = std::string(ox::dtype_name(dt)) + shape_str(shape) + lay_name(lay);
        const Tensor c = make_input(shape, ox::kBool, lay, sc);
        const Tensor a = make_input(shape, dt, lay, sa),
                     b = make_input(shape, dt, Lay::Flipped, sb);
        const auto vc = ints_of(c);
        const auto va = values_of(a), vb = values_of(b);
        std::vector<double> exp(va.size());
        for (size_t i = 0; i < va.size(); ++i) exp[i] = vc[i] ? va[i] : vb[i];
        const Tensor r = ox::where(c, a, b);
        ASSERT_EQ(r.dtype(), dt) << what;
        ASSERT_EQ(shape_of(r), shape) << what;
        EXPECT_EQ(values_of(r), exp) << what;  // selection is exact
      }
    }
  }
  // Broadcasting across all three, scalars, promotion.
  const Tensor c = ox::tensor({{true}, {false}});  // (2, 1)
  const Tensor a = ox::tensor({1, 2, 3});          // (3,) i64
  EXPECT_EQ(shape_of(ox::where(c, a, 0)), (ShapeV{2, 3}));
  EXPECT_EQ(ints_of(ox::where(c, a, 0)), (std::vector<int64_t>{1, 2, 3, 0, 0, 0}));
  EXPECT_EQ(ox::where(c, a, 2.5).dtype(), ox::kF32);
  EXPECT_EQ(f64s(ox::where(c, a, 2.5)), (std::vector<double>{1, 2, 3, 2.5, 2.5, 2.5}));
  EXPECT_EQ(ox::where(c, 1, 2.5).dtype(), ox::kF32);
  EXPECT_EQ(shape_of(ox::where(c, 1, 2)), (ShapeV{2, 1}));
  EXPECT_EQ(ox::where(c, ox::ones({3}, ox::kF16), ox::ones({3})).dtype(), ox::kF32);
  EXPECT_TRUE(std::isnan(f64s(ox::where(ox::tensor({true}), kNaN, 0.0))[0]));
  EXPECT_EQ(kind_of([&] { ox::where(ox::tensor({1}), a, a); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::where(ox::tensor({true, false}), a, a); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::where(Tensor(), a, a); }), ErrorKind::Value);
}

TEST(MaskedFill, ValuesBroadcastAndErrors) {
  const Tensor x = ox::tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, {.dtype = ox::kF64})
                       .t();                      // (3, 2), transposed
  const Tensor mask = ox::tensor({true, false});  // broadcasts over rows
  const Tensor r = ox::masked_fill(x, mask, -1.0);
  EXPECT_EQ(r.dtype(), ox::kF64);
  EXPECT_EQ(f64s(r), (std::vector<double>{-1, 4, -1, 5, -1, 6}));
  EXPECT_EQ(f64s(x.masked_fill(mask, kInf))[0], kInf);
  EXPECT_EQ(f64s(ox::masked_fill(x, mask, ox::scalar_tensor(7, {.dtype = ox::kI32})))[2], 7.0);
  // The value takes x's dtype (a float into an integer tensor truncates, as PyTorch).
  const Tensor xi = ox::tensor({1, 2, 3});
  EXPECT_EQ(ints_of(ox::masked_fill(xi, ox::tensor({true, false, false}), 2.7)),
            (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(ox::masked_fill(xi, ox::tensor({false, true, false}), 2.7).dtype(), ox::kI64);
  // A value the dtype cannot hold is refused, as fill_ refuses it.
  const Tensor u8 = ox::tensor(std::vector<uint8_t>{1, 2});
  EXPECT_EQ(kind_of([&] {
              ox::masked_fill(u8, ox::tensor({true, false}), 300);
            }),
            ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::masked_fill(u8, ox::tensor({true, false}), -1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::masked_fill(x, ox::tensor({1, 0}), 0.0); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] {
              ox::masked_fill(x, ox::tensor({true, false, true}), 0.0);
            }),
            ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] {
              ox::masked_fill(x.select(0, 0), ox::ones({3, 2}, ox::kBool), 0.0);
            }),
            ErrorKind::Shape);  // the mask may not grow x
  EXPECT_EQ(kind_of([&] { ox::masked_fill(x, mask, ox::ones({2})); }), ErrorKind::Shape);
  // In place.
  Tensor y = x.clone();
  y.masked_fill_(mask, 0.5);
  EXPECT_EQ(f64s(y), (std::vector<double>{0.5, 4, 0.5, 5, 0.5, 6}));
  Tensor e = ox::zeros({2}).expand({3, 2});
  EXPECT_EQ(kind_of([&] { e.masked_fill_(mask, 1.0); }), ErrorKind::Value);
}

// ---- lerp, addcmul, addcdiv -----------------------------------------------------------------

TEST(Composites, LerpAddcmulAddcdivEveryFloatDtype) {
  const Source s1 = [](int64_t i) { return uniform_at(i, 21, -4, 4); };
  const Source s2 = [](int64_t i) { return uniform_at(i, 22, -4, 4); };
  const Source s3 = [](int64_t i) { return uniform_at(i, 23, 0.5, 4); };
  for (DType dt : kFloatTypes) {
    for (Lay lay : {Lay::Contig, Lay::Transposed, Lay::Flipped, Lay::ExpandOuter}) {
      for (const ShapeV& shape : {ShapeV{}, ShapeV{0}, ShapeV{23}, ShapeV{29, 31}}) {
        const std::string what = std::string(ox::dtype_name(dt)) + shape_str(shape) + lay_name(lay);
        const Tensor a = make_input(shape, dt, lay, s1), b = make_input(shape, dt, Lay::Contig, s2);
        const Tensor w = make_input(shape, dt, Lay::Flipped, s3);
        const auto va = values_of(a), vb = values_of(b), vw = values_of(w);
        std::vector<double> lerp_s(va.size()), lerp_t(va.size()), cmul(va.size()), cdiv(va.size());
        for (size_t i = 0; i < va.size(); ++i) {
          lerp_s[i] = va[i] + 0.3 * (vb[i] - va[i]);
          lerp_t[i] = va[i] + vw[i] * (vb[i] - va[i]);
          cmul[i] = va[i] + 0.5 * vb[i] * vw[i];
          cdiv[i] = va[i] - 2.0 * vb[i] / vw[i];
        }
        // 16-bit dtypes compute composites in f32 and round once: one unit in the last place.
        auto check = [&](const Tensor& r, const std::vector<double>& e, const std::string& n) {
          expect_float_values(r, dt, shape, e, n);
        };
        check(ox::lerp(a, b, 0.3), lerp_s, what + " lerp scalar");
        check(ox::lerp(a, b, w), lerp_t, what + " lerp tensor");
        check(ox::addcmul(a, b, w, 0.5), cmul, what + " addcmul");
        check(ox::addcdiv(a, b, w, -2.0), cdiv, what + " addcdiv");
      }
    }
  }
}

TEST(Composites, LerpIsExactAtBothEnds) {
  // start + w (end - start) would give 1 + (1e-8 - 1) = 0 at w = 1 in f32.
  const Tensor a = ox::tensor({1.0f, -3.0f}), b = ox::tensor({1e-8f, 1e30f});
  EXPECT_EQ(ox::lerp(a, b, 1.0).to_vector<float>(), b.to_vector<float>());
  EXPECT_EQ(ox::lerp(a, b, 0.0).to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(ox::lerp(a, b, ox::ones({2})).to_vector<float>(), b.to_vector<float>());
  EXPECT_EQ(ox::lerp(a, b, ox::zeros({2})).to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(ox::lerp(a, b, ox::tensor({0.0f, 1.0f})).to_vector<float>(),
            (std::vector<float>{1.0f, 1e30f}));
}

TEST(Composites, DtypesBroadcastingAndErrors) {
  const Tensor a = ox::zeros({2, 1}), b = ox::ones({3});
  EXPECT_EQ(shape_of(ox::lerp(a, b, 0.5)), (ShapeV{2, 3}));
  EXPECT_EQ(f64s(ox::lerp(a, b, 0.5)), (std::vector<double>(6, 0.5)));
  EXPECT_EQ(f64s(ox::lerp(ox::tensor({1.0f}), ox::tensor({3.0f}), 1.0)), (std::vector<double>{3}));
  EXPECT_EQ(kind_of([&] { ox::lerp(ox::tensor({1}), ox::tensor({2}), 0.5); }), ErrorKind::DType);
  const Tensor i = ox::tensor({1, 2, 3});
  EXPECT_EQ(ints_of(ox::addcmul(i, i, i, 2)), (std::vector<int64_t>{3, 10, 21}));
  EXPECT_EQ(ox::addcmul(i, i, i).dtype(), ox::kI64);
  EXPECT_EQ(kind_of([&] { ox::addcmul(i, i, i, 0.5); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::addcdiv(i, i, i); }), ErrorKind::DType);
  EXPECT_EQ(f64s(ox::addcdiv(ox::zeros({2}), ox::tensor({1.0f, 3.0f}), ox::tensor({2.0f, 4.0f}))),
            (std::vector<double>{0.5, 0.75}));
  EXPECT_EQ(kind_of([&] { ox::addcmul(ox::zeros({2}), ox::zeros({3}), ox::zeros({3})); }),
            ErrorKind::Shape);
}

// ---- Operators, scalar-scalar, errors ---------------------------------------------------------

TEST(BinaryOperators, MatchTheFunctions) {
  const Tensor a = ox::tensor({6, -7, 5}), b = ox::tensor({4, 2, -3});
  EXPECT_EQ(ints_of(a + b), ints_of(ox::add(a, b)));
  EXPECT_EQ(ints_of(a - b), (std::vector<int64_t>{2, -9, 8}));
  EXPECT_EQ(ints_of(a * b), (std::vector<int64_t>{24, -14, -15}));
  EXPECT_EQ(f64s(a / b), (std::vector<double>{1.5, -3.5, double(5.0f / -3.0f)}));
  EXPECT_EQ(ints_of(a % b), (std::vector<int64_t>{2, 1, -1}));
  EXPECT_EQ(ints_of(a & b), (std::vector<int64_t>{4, 0, 5 & -3}));
  EXPECT_EQ(ints_of(a | b), (std::vector<int64_t>{6, -5, 5 | -3}));
  EXPECT_EQ(ints_of(a ^ b), (std::vector<int64_t>{2, -5, 5 ^ -3}));
  EXPECT_EQ(ints_of(a == b), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(ints_of(a != 6), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(ints_of(a < b), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(ints_of(a <= 5), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(ints_of(a > b), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(ints_of(a >= -7), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ints_of(10 - a), (std::vector<int64_t>{4, 17, 5}));
  EXPECT_EQ(f64s(1.0 / ox::tensor({2.0, 4.0}, {.dtype = ox::kF64})),
            (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(ints_of(3 % a), (std::vector<int64_t>{3, -4, 3}));
  EXPECT_EQ(ints_of(-a), (std::vector<int64_t>{-6, 7, -5}));
  EXPECT_EQ(ints_of(~a), (std::vector<int64_t>{-7, 6, -6}));
  EXPECT_EQ(ints_of(ox::tensor({true, false}) & true), (std::vector<int64_t>{1, 0}));
}

TEST(BinaryOperators, ScalarScalar) {
  const Tensor s = ox::add(2, 3);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), ox::kI64);
  EXPECT_EQ(s.item<int64_t>(), 5);
  EXPECT_EQ(ox::div(1, 2).item<float>(), 0.5f);
  EXPECT_EQ(ox::mul(2.5, true).dtype(), ox::kF32);
  EXPECT_EQ(ox::lt(1, 2.5).item<bool>(), true);
}

TEST(BinaryErrors, TypedErrors) {
  const Tensor f = ox::ones({3}), i = ox::ones({3}, ox::kI32), b = ox::ones({3}, ox::kBool);
  EXPECT_EQ(kind_of([&] { ox::bitwise_and(f, f); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { i | 1.5; }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::bitwise_xor(f, i); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { b - b; }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::sub(b, true); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::floor_divide(b, b); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::remainder(b, b); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::fmod(b, b); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::add(i, i, 0.5); }), ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { ox::add(ox::ones({2}), ox::ones({3})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::mul(ox::ones({2, 3}), ox::ones({3, 2})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { ox::add(Tensor(), f); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::add(f, Tensor()); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { ox::add(2, Tensor()); }), ErrorKind::Value);
  const ox::Error e = oxtest::caught([&] { ox::add(ox::ones({2}), ox::ones({3})); });
  EXPECT_TRUE(oxtest::contains(e, "[add]")) << e.what();
  const ox::Error d = oxtest::caught([&] { ox::bitwise_or(f, f); });
  EXPECT_TRUE(oxtest::contains(d, "[bitwise_or]")) << d.what();
  EXPECT_TRUE(oxtest::contains(d, "f32")) << d.what();
}

}  // namespace
