// The shared elementwise functors (core/ops/) checked directly on the host against values worked
// out by hand, closed forms or f64 references, and the table (core/elementwise_ops.h): every
// row has a functor for every compute type its dtype class takes. That the CPU kernels run
// these functors is tests/backend/elementwise_dispatch_test.cpp.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "core/elementwise_ops.h"
#include "core/ops/binary_math.h"
#include "core/ops/unary_math.h"

namespace ox::elementwise {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr float kInfF = std::numeric_limits<float>::infinity();
constexpr float kNaNF = std::numeric_limits<float>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

template <template <class> class F, class C>
auto un(C x, const UnaryParams& p = {}) {
  return make_unary<F, C>(p)(x);
}
template <template <class> class F, class C>
auto bin(C x, C y) {
  return F<C>{}(x, y);
}
template <template <class> class F, class C>
C scaled(C x, C y, double alpha) {
  return WithAlpha<F, C>(alpha)(x, y);
}

template <class T>
constexpr T lowest() {
  return std::numeric_limits<T>::min();
}
template <class T>
constexpr T highest() {
  return std::numeric_limits<T>::max();
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Distance in units in the last place of a float from a double reference.
double ulps(float got, double ref) {
  const double ulp = std::nextafter(std::fabs(static_cast<float>(ref)), kInfF) -
                     std::fabs(static_cast<float>(ref));
  return std::fabs(double(got) - ref) / ulp;
}

// ---- The table -------------------------------------------------------------------------------

// One row's functor for compute type C, when its class takes C: defined (instantiated here, as
// a CUDA kernel would instantiate it) and returning C, or bool for the AnyToBool class.
template <DTypeClass K, template <class> class F, bool kBinary, class C>
int instantiate_for() {
  if constexpr (class_takes(K, dtype_of<C>)) {
    using R = std::conditional_t<K == DTypeClass::AnyToBool, bool, C>;
    if constexpr (kBinary) {
      static_assert(std::is_same_v<decltype(F<C>{}(C(1), C(1))), R>);
      volatile R r = F<C>{}(C(1), C(1));
      (void)r;
    } else {
      static_assert(std::is_same_v<decltype(make_unary<F, C>({})(C(1))), R>);
      volatile R r = make_unary<F, C>({})(C(1));
      (void)r;
    }
    return 1;
  }
  return 0;
}
// The compute types: f16 and bf16 compute in float.
template <DTypeClass K, template <class> class F, bool kBinary>
int instantiate_row() {
  return instantiate_for<K, F, kBinary, float>() + instantiate_for<K, F, kBinary, double>() +
         instantiate_for<K, F, kBinary, int64_t>() + instantiate_for<K, F, kBinary, int32_t>() +
         instantiate_for<K, F, kBinary, int16_t>() + instantiate_for<K, F, kBinary, int8_t>() +
         instantiate_for<K, F, kBinary, uint8_t>() + instantiate_for<K, F, kBinary, bool>();
}

int expected_types(DTypeClass k) {
  int n = 0;
  for (DType dt : {kF32, kF64, kI64, kI32, kI16, kI8, kU8, kBool}) n += class_takes(k, dt);
  return n;
}

TEST(ElementwiseOps, EveryRowHasAFunctorForEveryComputeTypeOfItsClass) {
  int rows = 0;
#define OX_CHECK_ROW(code, name, cls, functor, binary)             \
  EXPECT_EQ((instantiate_row<DTypeClass::cls, functor, binary>()), \
            expected_types(DTypeClass::cls))                       \
      << name;                                                     \
  EXPECT_GT(expected_types(DTypeClass::cls), 0) << name;           \
  ++rows;
#define OX_CHECK_UNARY(code, name, cls, functor) OX_CHECK_ROW(code, name, cls, functor, false)
#define OX_CHECK_BINARY(code, name, cls, functor) OX_CHECK_ROW(code, name, cls, functor, true)
  OX_UNARY_OPS(OX_CHECK_UNARY)
  OX_BINARY_OPS(OX_CHECK_BINARY)
#undef OX_CHECK_UNARY
#undef OX_CHECK_BINARY
#undef OX_CHECK_ROW
  EXPECT_EQ(rows, kUnaryOpCount + kBinaryOpCount);
}

TEST(ElementwiseOps, TableNamesAndClasses) {
  EXPECT_STREQ(unary_name(UnaryOp::Neg), "neg");
  EXPECT_STREQ(unary_name(UnaryOp::LeakyRelu), "leaky_relu");
  EXPECT_STREQ(unary_name(UnaryOp::GeluTanh), "gelu");
  EXPECT_STREQ(unary_name(UnaryOp::BitwiseNot), "bitwise_not");
  EXPECT_STREQ(binary_name(BinaryOp::Add), "add");
  EXPECT_STREQ(binary_name(BinaryOp::FloorDiv), "floor_divide");
  EXPECT_STREQ(binary_name(BinaryOp::LogicalXor), "logical_xor");
  EXPECT_EQ(unary_class(UnaryOp::Relu), DTypeClass::Numeric);
  EXPECT_EQ(unary_class(UnaryOp::Floor), DTypeClass::FloatingOrCopy);
  EXPECT_EQ(unary_class(UnaryOp::IsNan), DTypeClass::AnyToBool);
  EXPECT_EQ(binary_class(BinaryOp::Div), DTypeClass::Floating);
  EXPECT_EQ(binary_class(BinaryOp::Maximum), DTypeClass::NumericOrBool);
  EXPECT_EQ(binary_class(BinaryOp::BitwiseXor), DTypeClass::IntegralOrBool);
  for (int i = 0; i < kBinaryOpCount; ++i) {
    const auto op = BinaryOp(i);
    EXPECT_EQ(binary_returns_bool(op), op >= BinaryOp::Eq && op <= BinaryOp::LogicalXor)
        << binary_name(op);
    EXPECT_EQ(binary_takes_alpha(op), op == BinaryOp::Add || op == BinaryOp::Sub);
  }
  EXPECT_TRUE(class_takes(DTypeClass::Numeric, kU8));
  EXPECT_FALSE(class_takes(DTypeClass::Numeric, kBool));
  EXPECT_TRUE(class_takes(DTypeClass::NumericOrBool, kBool));
  EXPECT_TRUE(class_takes(DTypeClass::Floating, kBF16));
  EXPECT_FALSE(class_takes(DTypeClass::Floating, kI64));
  EXPECT_FALSE(class_takes(DTypeClass::IntegralOrBool, kF16));
  EXPECT_TRUE(class_takes(DTypeClass::AnyToBool, kBool));
}

// ---- Conversions and wrapping ------------------------------------------------------------------

TEST(ElementwiseOps, FloatToIntegerAsX86) {
  EXPECT_EQ(convert_number<int64_t>(kNaN), lowest<int64_t>());
  EXPECT_EQ(convert_number<int64_t>(-kInf), lowest<int64_t>());
  EXPECT_EQ(convert_number<int64_t>(-2.9), -2);
  EXPECT_EQ(convert_number<int32_t>(3e9), lowest<int32_t>());  // out of i32: indefinite
  EXPECT_EQ(convert_number<int32_t>(2.5f), 2);
  EXPECT_EQ(convert_number<int8_t>(300.7), int8_t(44));    // 300 in i32, low byte
  EXPECT_EQ(convert_number<int8_t>(kNaN), int8_t(0));      // low byte of INT32_MIN
  EXPECT_EQ(convert_number<uint8_t>(-1.5), uint8_t(255));  // -1 in i64, low byte
  EXPECT_EQ(convert_number<uint8_t>(256.0), uint8_t(0));
  EXPECT_EQ(convert_number<bool>(0.5), true);
  EXPECT_EQ(convert_number<bool>(-0.0), false);
}

TEST(ElementwiseOps, IntegerArithmeticWraps) {
  EXPECT_EQ(wrap_add<int32_t>(highest<int32_t>(), 1), lowest<int32_t>());
  EXPECT_EQ(wrap_sub<int64_t>(lowest<int64_t>(), 1), highest<int64_t>());
  EXPECT_EQ(wrap_mul<int16_t>(int16_t(256), int16_t(256)), int16_t(0));
  EXPECT_EQ(wrap_mul<uint8_t>(uint8_t(16), uint8_t(17)), uint8_t(16));  // 272 mod 256
  EXPECT_EQ(un<Neg>(lowest<int32_t>()), lowest<int32_t>());
  EXPECT_EQ(un<Abs>(lowest<int8_t>()), lowest<int8_t>());
  EXPECT_EQ(un<Abs>(int8_t(-5)), int8_t(5));
  EXPECT_EQ(un<Square>(int8_t(16)), int8_t(0));
  EXPECT_EQ(un<Neg>(uint8_t(1)), uint8_t(255));
  EXPECT_EQ(bin<Add>(int8_t(127), int8_t(1)), int8_t(-128));
  EXPECT_EQ(bin<Mul>(lowest<int64_t>(), int64_t(-1)), lowest<int64_t>());
  // alpha wraps into the integer type through i64: u8 x - 254 y is x + 2 y.
  EXPECT_EQ(scaled<Sub>(uint8_t(10), uint8_t(3), -2.0), uint8_t(16));
  EXPECT_EQ(scaled<Add>(int32_t(1), int32_t(5), 4294967298.0), 11);  // 2^32 + 2
  EXPECT_EQ(scaled<Add>(1.0, 3.0, 0.5), 2.5);
  // bool arithmetic is logical.
  EXPECT_EQ(bin<Add>(true, true), true);
  EXPECT_EQ(bin<Mul>(true, false), false);
  EXPECT_EQ(bin<Maximum>(false, true), true);
  EXPECT_EQ(bin<Minimum>(false, true), false);
  EXPECT_EQ(bin<BitwiseXor>(true, true), false);
  EXPECT_EQ(un<BitwiseNot>(true), false);
  EXPECT_EQ(un<BitwiseNot>(int8_t(0)), int8_t(-1));
  EXPECT_EQ(un<BitwiseNot>(uint8_t(0)), uint8_t(255));
}

// ---- Division family ---------------------------------------------------------------------------

template <class T>
void expect_integer_division_rules() {
  // floor_divide rounds toward -inf, remainder takes the divisor's sign (Python's // and %).
  EXPECT_EQ(bin<FloorDivide>(T(7), T(2)), T(3));
  EXPECT_EQ(bin<FloorDivide>(T(-7), T(2)), T(-4));
  EXPECT_EQ(bin<FloorDivide>(T(7), T(-2)), T(-4));
  EXPECT_EQ(bin<FloorDivide>(T(-7), T(-2)), T(3));
  EXPECT_EQ(bin<FloorDivide>(T(-6), T(2)), T(-3));
  EXPECT_EQ(bin<Remainder>(T(7), T(3)), T(1));
  EXPECT_EQ(bin<Remainder>(T(-7), T(3)), T(2));
  EXPECT_EQ(bin<Remainder>(T(7), T(-3)), T(-2));
  EXPECT_EQ(bin<Remainder>(T(-7), T(-3)), T(-1));
  EXPECT_EQ(bin<Remainder>(T(-6), T(3)), T(0));
  // Truncating division and fmod take the dividend's sign (C's / and %).
  EXPECT_EQ(bin<TruncDivide>(T(-7), T(2)), T(-3));
  EXPECT_EQ(bin<TruncDivide>(T(7), T(-2)), T(-3));
  EXPECT_EQ(bin<Fmod>(T(-7), T(3)), T(-1));
  EXPECT_EQ(bin<Fmod>(T(7), T(-3)), T(1));
  // Division by zero gives 0 (no trap); INT_MIN / -1 wraps to INT_MIN and its remainder is 0.
  for (T x : {T(0), T(5), T(-5), lowest<T>(), highest<T>()}) {
    EXPECT_EQ(bin<FloorDivide>(x, T(0)), T(0));
    EXPECT_EQ(bin<TruncDivide>(x, T(0)), T(0));
    EXPECT_EQ(bin<Remainder>(x, T(0)), T(0));
    EXPECT_EQ(bin<Fmod>(x, T(0)), T(0));
  }
  EXPECT_EQ(bin<FloorDivide>(lowest<T>(), T(-1)), lowest<T>());
  EXPECT_EQ(bin<TruncDivide>(lowest<T>(), T(-1)), lowest<T>());
  EXPECT_EQ(bin<Remainder>(lowest<T>(), T(-1)), T(0));
  EXPECT_EQ(bin<Fmod>(lowest<T>(), T(-1)), T(0));
  EXPECT_EQ(bin<FloorDivide>(T(5), T(-1)), T(-5));
  EXPECT_EQ(bin<FloorDivide>(lowest<T>(), T(2)), T(lowest<T>() / 2));
  EXPECT_EQ(bin<Remainder>(lowest<T>(), T(3)), T(1));  // 2^odd is 2 mod 3, so -2^odd is 1
  EXPECT_EQ(bin<Fmod>(lowest<T>(), T(3)), T(-2));
}

TEST(ElementwiseOps, IntegerDivisionSignRules) {
  expect_integer_division_rules<int64_t>();
  expect_integer_division_rules<int32_t>();
  expect_integer_division_rules<int16_t>();
  expect_integer_division_rules<int8_t>();
  // Unsigned: no signs to fix; division by zero gives 0 as for the signed types.
  EXPECT_EQ(bin<FloorDivide>(uint8_t(200), uint8_t(7)), uint8_t(28));
  EXPECT_EQ(bin<Remainder>(uint8_t(200), uint8_t(7)), uint8_t(4));
  EXPECT_EQ(bin<FloorDivide>(uint8_t(200), uint8_t(0)), uint8_t(0));
  EXPECT_EQ(bin<Remainder>(uint8_t(255), uint8_t(0)), uint8_t(0));
}

TEST(ElementwiseOps, FloatFloorDivideAndRemainderAsPython) {
  EXPECT_EQ(bin<FloorDivide>(7.0, 2.0), 3.0);
  EXPECT_EQ(bin<FloorDivide>(-7.0, 2.0), -4.0);
  EXPECT_EQ(bin<FloorDivide>(7.0, -2.0), -4.0);
  EXPECT_EQ(bin<FloorDivide>(-7.0, -2.0), 3.0);
  EXPECT_EQ(bin<FloorDivide>(5.5, -2.0), -3.0);
  // 1 // 0.1 is 9 (0.1 is a little more than a tenth), though 1 / 0.1 rounds to 10.
  EXPECT_EQ(bin<FloorDivide>(1.0, 0.1), 9.0);
  EXPECT_EQ(bin<FloorDivide>(-1.0, 0.1), -10.0);
  EXPECT_EQ(bin<FloorDivide>(1.0f, 0.1f), 9.0f);
  EXPECT_EQ(bin<FloorDivide>(5.0, kInf), 0.0);
  EXPECT_EQ(bin<FloorDivide>(-5.0, kInf), -1.0);
  // Division by zero is IEEE division; a zero quotient keeps the sign of a / b.
  EXPECT_EQ(bin<FloorDivide>(1.0, 0.0), kInf);
  EXPECT_EQ(bin<FloorDivide>(-1.0, 0.0), -kInf);
  EXPECT_TRUE(std::isnan(bin<FloorDivide>(0.0, 0.0)));
  EXPECT_TRUE(same_bits(bin<FloorDivide>(0.0, -3.0), -0.0));
  EXPECT_TRUE(same_bits(bin<FloorDivide>(2.0, 3.0), 0.0));
  EXPECT_TRUE(std::isnan(bin<FloorDivide>(kNaN, 2.0)));

  EXPECT_EQ(bin<Remainder>(-7.5, 2.0), 0.5);
  EXPECT_EQ(bin<Remainder>(7.5, -2.0), -0.5);
  EXPECT_EQ(bin<Remainder>(-7.5f, 2.0f), 0.5f);
  EXPECT_EQ(bin<Remainder>(5.0, kInf), 5.0);
  EXPECT_EQ(bin<Remainder>(-5.0, kInf), kInf);  // as Python: -5 + inf
  EXPECT_TRUE(std::isnan(bin<Remainder>(5.0, 0.0)));
  EXPECT_TRUE(std::isnan(bin<Remainder>(kInf, 2.0)));
  EXPECT_EQ(bin<Fmod>(-7.5, 2.0), -1.5);
  EXPECT_EQ(bin<TruncDivide>(-7.5, 2.0), -3.0);
  EXPECT_EQ(bin<TruncDivide>(1.0, 0.0), kInf);
}

// ---- Powers ------------------------------------------------------------------------------------

TEST(ElementwiseOps, IntegerPow) {
  EXPECT_EQ(bin<Pow>(int64_t(2), int64_t(10)), 1024);
  EXPECT_EQ(bin<Pow>(int64_t(0), int64_t(0)), 1);  // 0^0 = 1
  EXPECT_EQ(bin<Pow>(int64_t(7), int64_t(0)), 1);
  EXPECT_EQ(bin<Pow>(int64_t(-2), int64_t(3)), -8);
  EXPECT_EQ(bin<Pow>(int64_t(-3), int64_t(4)), 81);
  EXPECT_EQ(bin<Pow>(int64_t(2), int64_t(62)), int64_t(1) << 62);
  EXPECT_EQ(bin<Pow>(int64_t(2), int64_t(63)), lowest<int64_t>());  // wraps
  EXPECT_EQ(bin<Pow>(int64_t(2), int64_t(64)), 0);
  EXPECT_EQ(bin<Pow>(int32_t(2), int32_t(31)), lowest<int32_t>());
  EXPECT_EQ(bin<Pow>(int8_t(3), int8_t(5)), int8_t(243 - 256));
  EXPECT_EQ(bin<Pow>(uint8_t(3), uint8_t(5)), uint8_t(243));
  EXPECT_EQ(bin<Pow>(uint8_t(2), uint8_t(8)), uint8_t(0));
  // A negative exponent gives trunc(1 / base^n): ±1 for bases ±1, else 0 (0 too for base 0).
  EXPECT_EQ(bin<Pow>(int64_t(2), int64_t(-1)), 0);
  EXPECT_EQ(bin<Pow>(int64_t(1), int64_t(-5)), 1);
  EXPECT_EQ(bin<Pow>(int64_t(-1), int64_t(-3)), -1);
  EXPECT_EQ(bin<Pow>(int64_t(-1), int64_t(-4)), 1);
  EXPECT_EQ(bin<Pow>(int64_t(0), int64_t(-1)), 0);
  EXPECT_EQ(bin<Pow>(int8_t(-1), lowest<int8_t>()), 1);
  // The f64 loop: every small base and exponent against repeated multiplication.
  for (int64_t b = -4; b <= 4; ++b)
    for (int64_t e = 0; e <= 20; ++e) {
      double ref = 1;
      for (int64_t i = 0; i < e; ++i) ref *= double(b);
      EXPECT_EQ(bin<Pow>(b, e), int64_t(ref)) << b << "^" << e;
    }
  EXPECT_EQ(bin<Pow>(2.0, -1.0), 0.5);
  EXPECT_EQ(bin<Pow>(0.0, 0.0), 1.0);
  EXPECT_EQ(bin<Pow>(kNaN, 0.0), 1.0);
}

// ---- Exponentials and logs ---------------------------------------------------------------------

// gelu's gradient: hand values at 0 and ±1 (Φ(1) = 0.8413447460685429, φ(1) =
// 0.24197072451914337), and the tanh form against a central difference of its gelu.
TEST(ElementwiseOps, GeluBackward) {
  EXPECT_EQ(bin<GeluErfBackward>(1.0, 0.0), 0.5);
  EXPECT_EQ(bin<GeluErfBackward>(-2.0, 0.0), -1.0);
  EXPECT_NEAR(bin<GeluErfBackward>(1.0, 1.0), 0.8413447460685429 + 0.24197072451914337, 1e-15);
  EXPECT_NEAR(bin<GeluErfBackward>(3.0, -1.0), 3 * (0.15865525393145707 - 0.24197072451914337),
              1e-15);
  EXPECT_NEAR(bin<GeluErfBackward>(1.0f, 1.0f), 1.0833154705876864f, 2e-7f);
  EXPECT_EQ(bin<GeluErfBackward>(1.0, 40.0), 1.0);           // Φ = 1, φ = 0
  EXPECT_EQ(bin<GeluErfBackward>(1.0, -40.0), 0.0);          // the tail's terms underflow
  EXPECT_TRUE(std::isnan(bin<GeluErfBackward>(1.0, kInf)));  // ∞ · 0, as PyTorch
  EXPECT_TRUE(std::isnan(bin<GeluErfBackward>(kNaN, 1.0)));
  EXPECT_EQ(bin<GeluTanhBackward>(1.0, 0.0), 0.5);
  const auto gelu_tanh = [](double x) {
    return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  };
  for (double x : {-3.0, -0.75, -0.1, 0.3, 1.0, 2.5}) {
    const double h = 1e-5, slope = (gelu_tanh(x + h) - gelu_tanh(x - h)) / (2 * h);
    EXPECT_NEAR(bin<GeluTanhBackward>(2.0, x), 2 * slope, 1e-9) << x;
  }
  EXPECT_EQ(bin<GeluTanhBackward>(1.0, 30.0), 1.0);
  EXPECT_EQ(bin<GeluTanhBackward>(1.0, -30.0), 0.0);
}

TEST(ElementwiseOps, ReluBackward) {
  EXPECT_EQ(bin<ReluBackward>(3.0, 2.0), 3.0);
  EXPECT_EQ(bin<ReluBackward>(3.0, 0.0), 0.0);  // at 0 the gradient is 0, as PyTorch
  EXPECT_EQ(bin<ReluBackward>(3.0, -0.0), 0.0);
  EXPECT_EQ(bin<ReluBackward>(-2.5f, 1e-30f), -2.5f);
  EXPECT_TRUE(std::isnan(bin<ReluBackward>(kNaN, 1.0)));  // g passes where y > 0
  EXPECT_EQ(bin<ReluBackward>(1.0, kNaN), 0.0);
  EXPECT_EQ(bin<ReluBackward>(int64_t(7), int64_t(-1)), 0);
  EXPECT_EQ(bin<ReluBackward>(int32_t(7), int32_t(5)), 7);
}

TEST(ElementwiseOps, LogAddExp) {
  EXPECT_EQ(bin<LogAddExp>(kInf, kInf), kInf);
  EXPECT_EQ(bin<LogAddExp>(-kInf, -kInf), -kInf);  // not -inf - -inf = NaN
  EXPECT_EQ(bin<LogAddExp>(kInf, -kInf), kInf);
  EXPECT_EQ(bin<LogAddExp>(-kInf, kInf), kInf);
  EXPECT_EQ(bin<LogAddExp>(-kInf, 3.0), 3.0);
  EXPECT_EQ(bin<LogAddExp>(3.0, -kInf), 3.0);
  EXPECT_EQ(bin<LogAddExp>(-kInfF, -kInfF), -kInfF);
  EXPECT_TRUE(std::isnan(bin<LogAddExp>(kNaN, 1.0)));
  EXPECT_TRUE(std::isnan(bin<LogAddExp>(1.0, kNaN)));
  EXPECT_TRUE(std::isnan(bin<LogAddExp>(kInf, kNaN)));
  EXPECT_DOUBLE_EQ(bin<LogAddExp>(0.0, 0.0), 0.6931471805599453);
  EXPECT_DOUBLE_EQ(bin<LogAddExp>(1.0, 2.0), 2.3132616875182226);
  EXPECT_DOUBLE_EQ(bin<LogAddExp>(1000.0, 1000.0), 1000.6931471805599);  // no overflow
  EXPECT_DOUBLE_EQ(bin<LogAddExp>(-1000.0, -1000.0), -999.3068528194401);
  // f32 against the f64 form over a grid.
  for (int i = -20; i <= 20; ++i)
    for (int j = -20; j <= 20; ++j) {
      const float x = 0.37f * float(i), y = 0.53f * float(j);
      const double ref = std::log(std::exp(double(x)) + std::exp(double(y)));
      EXPECT_NEAR(bin<LogAddExp>(x, y), ref, 4e-7 * (1 + std::fabs(ref))) << x << " " << y;
    }
}

TEST(ElementwiseOps, Hypot) {
  EXPECT_EQ(bin<Hypot>(3.0, 4.0), 5.0);
  EXPECT_EQ(bin<Hypot>(-3.0f, 4.0f), 5.0f);
  EXPECT_EQ(bin<Hypot>(0.0, -0.0), 0.0);
  EXPECT_EQ(bin<Hypot>(kInf, kNaN), kInf);  // IEEE: an infinity wins over NaN
  EXPECT_EQ(bin<Hypot>(kNaN, -kInf), kInf);
  EXPECT_TRUE(std::isnan(bin<Hypot>(kNaN, 1.0)));
  EXPECT_DOUBLE_EQ(bin<Hypot>(1e200, 1e200), 1.414213562373095e200);  // no overflow
  EXPECT_FLOAT_EQ(bin<Hypot>(3e30f, 4e30f), 5e30f);
  EXPECT_FLOAT_EQ(bin<Hypot>(3e-30f, 4e-30f), 5e-30f);  // no underflow
}

TEST(ElementwiseOps, Atan2Quadrants) {
  EXPECT_DOUBLE_EQ(bin<Atan2>(1.0, 1.0), kPi / 4);
  EXPECT_DOUBLE_EQ(bin<Atan2>(1.0, -1.0), 3 * kPi / 4);
  EXPECT_DOUBLE_EQ(bin<Atan2>(-1.0, -1.0), -3 * kPi / 4);
  EXPECT_DOUBLE_EQ(bin<Atan2>(0.0, -1.0), kPi);
  EXPECT_DOUBLE_EQ(bin<Atan2>(-0.0, -1.0), -kPi);
}

// ---- Maximum and minimum -----------------------------------------------------------------------

TEST(ElementwiseOps, MaximumMinimumPropagateNaN) {
  for (double nan : {kNaN, -kNaN}) {
    EXPECT_TRUE(std::isnan(bin<Maximum>(nan, 1.0)));
    EXPECT_TRUE(std::isnan(bin<Maximum>(1.0, nan)));
    EXPECT_TRUE(std::isnan(bin<Minimum>(nan, 1.0)));
    EXPECT_TRUE(std::isnan(bin<Minimum>(1.0, nan)));
    EXPECT_TRUE(std::isnan(bin<Maximum>(nan, kInf)));
    EXPECT_TRUE(std::isnan(bin<Minimum>(-kInf, nan)));
  }
  EXPECT_TRUE(std::isnan(bin<Maximum>(kNaNF, 1.0f)));
  EXPECT_EQ(bin<Maximum>(-kInf, 2.0), 2.0);
  EXPECT_EQ(bin<Minimum>(-kInf, 2.0), -kInf);
  EXPECT_EQ(bin<Maximum>(int64_t(-3), int64_t(2)), 2);
  EXPECT_EQ(bin<Minimum>(lowest<int32_t>(), highest<int32_t>()), lowest<int32_t>());
  EXPECT_EQ(bin<Maximum>(uint8_t(200), uint8_t(7)), uint8_t(200));
}

// ---- Comparisons and predicates ----------------------------------------------------------------

TEST(ElementwiseOps, ComparisonsAndPredicates) {
  EXPECT_FALSE(bin<Eq>(kNaN, kNaN));
  EXPECT_TRUE(bin<Ne>(kNaN, kNaN));
  EXPECT_FALSE(bin<Lt>(kNaN, 1.0));
  EXPECT_FALSE(bin<Ge>(kNaN, 1.0));
  EXPECT_TRUE(bin<Eq>(0.0, -0.0));
  EXPECT_TRUE(bin<Le>(int8_t(-128), int8_t(127)));
  EXPECT_TRUE(bin<Gt>(uint8_t(255), uint8_t(0)));
  EXPECT_TRUE(bin<LogicalAnd>(kNaN, 2.0));  // NaN is not zero
  EXPECT_FALSE(bin<LogicalOr>(0.0, -0.0));
  EXPECT_TRUE(bin<LogicalXor>(int32_t(3), int32_t(0)));
  EXPECT_FALSE(bin<LogicalXor>(true, true));
  EXPECT_TRUE(un<IsNan>(kNaN));
  EXPECT_FALSE(un<IsNan>(kInf));
  EXPECT_TRUE(un<IsInf>(-kInfF));
  EXPECT_FALSE(un<IsFinite>(kNaNF));
  EXPECT_TRUE(un<IsFinite>(std::numeric_limits<double>::max()));
  EXPECT_FALSE(un<IsNan>(int64_t(0)));
  EXPECT_FALSE(un<IsInf>(highest<int32_t>()));
  EXPECT_TRUE(un<IsFinite>(true));
  EXPECT_TRUE(un<LogicalNot>(-0.0));
  EXPECT_FALSE(un<LogicalNot>(kNaN));
  EXPECT_TRUE(un<LogicalNot>(uint8_t(0)));
}

// ---- Sign, rounding, clamp, nan_to_num ---------------------------------------------------------

TEST(ElementwiseOps, SignRoundingClampNanToNum) {
  EXPECT_EQ(un<Sign>(-3.5), -1.0);
  EXPECT_TRUE(same_bits(un<Sign>(-0.0), 0.0));
  EXPECT_TRUE(std::isnan(un<Sign>(kNaN)));
  EXPECT_EQ(un<Sign>(-kInf), -1.0);
  EXPECT_EQ(un<Sign>(lowest<int64_t>()), -1);
  EXPECT_EQ(un<Sign>(int8_t(0)), 0);
  EXPECT_EQ(un<Sign>(uint8_t(200)), uint8_t(1));
  // round: half to even.
  EXPECT_EQ(un<Round>(0.5), 0.0);
  EXPECT_EQ(un<Round>(1.5), 2.0);
  EXPECT_EQ(un<Round>(2.5), 2.0);
  EXPECT_EQ(un<Round>(-2.5f), -2.0f);
  EXPECT_TRUE(same_bits(un<Round>(-0.4), -0.0));
  EXPECT_EQ(un<Floor>(-0.5), -1.0);
  EXPECT_EQ(un<Ceil>(-0.5), -0.0);
  EXPECT_EQ(un<Trunc>(-1.7), -1.0);
  // clamp: min(max(x, lo), hi), so lo > hi gives hi; NaN propagates.
  const UnaryParams unit{.a = -1, .b = 1};
  EXPECT_EQ(un<Clamp>(5.0, unit), 1.0);
  EXPECT_EQ(un<Clamp>(-kInf, unit), -1.0);
  EXPECT_TRUE(std::isnan(un<Clamp>(kNaN, unit)));
  EXPECT_EQ(un<Clamp>(0.0, UnaryParams{.a = 3, .b = -2}), -2.0);
  EXPECT_EQ(un<Clamp>(int32_t(-7), UnaryParams{.a = -2.5, .b = 3}), -2);  // bounds as x86
  EXPECT_EQ(un<Clamp>(0.5f, UnaryParams{.a = -kInf, .b = 0.25}), 0.25f);
  const UnaryParams repl{.a = 0, .b = 7, .c = -7};
  EXPECT_EQ(un<NanToNum>(kNaN, repl), 0.0);
  EXPECT_EQ(un<NanToNum>(kInf, repl), 7.0);
  EXPECT_EQ(un<NanToNum>(-kInfF, repl), -7.0f);
  EXPECT_EQ(un<NanToNum>(2.5, repl), 2.5);
}

// ---- Activations at their edges ----------------------------------------------------------------

TEST(ElementwiseOps, ActivationsAtEdges) {
  // relu keeps NaN and -0 (x < 0 is false for both).
  EXPECT_EQ(un<Relu>(-2.0), 0.0);
  EXPECT_TRUE(std::isnan(un<Relu>(kNaN)));
  EXPECT_TRUE(same_bits(un<Relu>(-0.0), -0.0));
  EXPECT_EQ(un<Relu>(int8_t(-128)), 0);
  EXPECT_EQ(un<Relu>(uint8_t(200)), uint8_t(200));
  EXPECT_EQ(un<LeakyRelu>(-2.0, {.a = 0.125}), -0.25);
  EXPECT_EQ(un<LeakyRelu>(kInf, {.a = 0.125}), kInf);
  EXPECT_EQ(un<Elu>(-kInf, {.a = 1.5}), -1.5);
  EXPECT_EQ(un<Elu>(3.0, {.a = 1.5}), 3.0);
  EXPECT_TRUE(std::isnan(un<Elu>(kNaN, {.a = 1.0})));
  // softplus: log1p(exp(beta x)) / beta, x itself past the threshold.
  const UnaryParams sp{.a = 1, .b = 20};
  EXPECT_EQ(un<Softplus>(21.0, sp), 21.0);
  EXPECT_EQ(un<Softplus>(kInf, sp), kInf);
  EXPECT_EQ(un<Softplus>(-kInf, sp), 0.0);
  EXPECT_DOUBLE_EQ(un<Softplus>(0.0, sp), 0.6931471805599453);
  EXPECT_DOUBLE_EQ(un<Softplus>(-100.0, sp), 3.720075976020836e-44);
  EXPECT_DOUBLE_EQ(un<Softplus>(1.0, {.a = 2, .b = 20}), std::log1p(std::exp(2.0)) / 2);
  EXPECT_EQ(un<Softplus>(3.0, {.a = 2, .b = 5}), 3.0);  // 2 * 3 > 5
  // sigmoid and friends.
  EXPECT_EQ(un<Sigmoid>(kInf), 1.0);
  EXPECT_EQ(un<Sigmoid>(-kInf), 0.0);
  EXPECT_EQ(un<Sigmoid>(0.0f), 0.5f);
  EXPECT_DOUBLE_EQ(un<Sigmoid>(3.0), 0.9525741268224334);
  EXPECT_EQ(un<LogSigmoid>(-kInf), -kInf);
  EXPECT_EQ(un<LogSigmoid>(kInf), 0.0);
  EXPECT_DOUBLE_EQ(un<LogSigmoid>(0.0), -0.6931471805599453);
  EXPECT_DOUBLE_EQ(un<LogSigmoid>(-800.0), -800.0);  // no overflow in exp
  EXPECT_DOUBLE_EQ(un<Silu>(-100.0), -3.720075976020836e-42);
  EXPECT_EQ(un<Silu>(kInf), kInf);
  // gelu, exact (erf) and tanh forms.
  EXPECT_EQ(un<GeluErf>(0.0), 0.0);
  EXPECT_EQ(un<GeluErf>(kInf), kInf);
  EXPECT_DOUBLE_EQ(un<GeluErf>(1.0), 0.8413447460685429);
  EXPECT_DOUBLE_EQ(un<GeluErf>(-1.0), -0.15865525393145707);
  EXPECT_DOUBLE_EQ(un<GeluTanh>(1.0), 0.8411919906082768);
  EXPECT_DOUBLE_EQ(un<GeluTanh>(-1.0), -0.15880800939172324);
  EXPECT_DOUBLE_EQ(un<GeluTanh>(3.0), 2.996362607918227);
  EXPECT_EQ(un<GeluTanh>(kInf), kInf);
  EXPECT_DOUBLE_EQ(un<Mish>(1.0), 0.8650983882673103);
  EXPECT_DOUBLE_EQ(un<Mish>(-2.0), -0.2525014826957089);
  EXPECT_EQ(un<Mish>(kInf), kInf);
  EXPECT_TRUE(std::isnan(un<Mish>(kNaN)));
  EXPECT_TRUE(std::isnan(un<GeluTanh>(kNaN)));
  // f32 against the f64 functors.
  for (double x : {-7.5, -1.0, -0.1, 0.0, 0.3, 2.0, 9.0}) {
    const auto xf = float(x);
    EXPECT_NEAR(un<GeluErf>(xf), un<GeluErf>(double(xf)), 1e-6 * (1 + std::fabs(x))) << x;
    EXPECT_NEAR(un<GeluTanh>(xf), un<GeluTanh>(double(xf)), 1e-6 * (1 + std::fabs(x))) << x;
    EXPECT_NEAR(un<Mish>(xf), un<Mish>(double(xf)), 1e-6 * (1 + std::fabs(x))) << x;
    EXPECT_LE(ulps(un<Sigmoid>(xf), un<Sigmoid>(double(xf))), 2.0) << x;
  }
}

TEST(ElementwiseOps, ReciprocalsAndRoots) {
  EXPECT_EQ(un<Rsqrt>(4.0), 0.5);
  EXPECT_EQ(un<Rsqrt>(0.0), kInf);
  EXPECT_EQ(un<Rsqrt>(-0.0), -kInf);
  EXPECT_TRUE(std::isnan(un<Rsqrt>(-1.0)));
  EXPECT_EQ(un<Reciprocal>(-0.0f), -kInfF);
  EXPECT_EQ(un<Sqrt>(kInf), kInf);
  EXPECT_EQ(un<Exp2>(10.0), 1024.0);
  EXPECT_EQ(un<Exp2>(-kInf), 0.0);
}

}  // namespace
}  // namespace ox::elementwise
