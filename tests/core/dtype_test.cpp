// DType sizes, names and parsing; torch.promote_types over every pair; torch.result_type with
// dimensioned tensors, zero-dim tensors and bare numbers; Scalar kinds.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <sstream>
#include <string>

#include "test_util.h"

namespace {

using ox::DType;

using oxtest::caught;

// ---- sizes, names, predicates -------------------------------------------------------------

TEST(DType, SizesAreTheElementByteWidths) {
  EXPECT_EQ(ox::dtype_size(ox::kF32), 4u);
  EXPECT_EQ(ox::dtype_size(ox::kF64), 8u);
  EXPECT_EQ(ox::dtype_size(ox::kF16), 2u);
  EXPECT_EQ(ox::dtype_size(ox::kBF16), 2u);
  EXPECT_EQ(ox::dtype_size(ox::kI64), 8u);
  EXPECT_EQ(ox::dtype_size(ox::kI32), 4u);
  EXPECT_EQ(ox::dtype_size(ox::kI16), 2u);
  EXPECT_EQ(ox::dtype_size(ox::kI8), 1u);
  EXPECT_EQ(ox::dtype_size(ox::kU8), 1u);
  EXPECT_EQ(ox::dtype_size(ox::kBool), 1u);
}

TEST(DType, SizesMatchTheCxxElementTypes) {
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<float>), sizeof(float));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<double>), sizeof(double));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<ox::Half>), sizeof(ox::Half));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<ox::BFloat16>), sizeof(ox::BFloat16));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<int64_t>), sizeof(int64_t));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<int32_t>), sizeof(int32_t));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<int16_t>), sizeof(int16_t));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<int8_t>), sizeof(int8_t));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<uint8_t>), sizeof(uint8_t));
  EXPECT_EQ(ox::dtype_size(ox::dtype_of<bool>), sizeof(bool));
}

TEST(DType, DTypeOfMapsEachCxxType) {
  EXPECT_EQ(ox::dtype_of<float>, ox::kF32);
  EXPECT_EQ(ox::dtype_of<const float>, ox::kF32);
  EXPECT_EQ(ox::dtype_of<double>, ox::kF64);
  EXPECT_EQ(ox::dtype_of<ox::Half>, ox::kF16);
  EXPECT_EQ(ox::dtype_of<ox::BFloat16>, ox::kBF16);
  EXPECT_EQ(ox::dtype_of<int64_t>, ox::kI64);
  EXPECT_EQ(ox::dtype_of<int32_t>, ox::kI32);
  EXPECT_EQ(ox::dtype_of<int16_t>, ox::kI16);
  EXPECT_EQ(ox::dtype_of<int8_t>, ox::kI8);
  EXPECT_EQ(ox::dtype_of<uint8_t>, ox::kU8);
  EXPECT_EQ(ox::dtype_of<volatile bool>, ox::kBool);
}

TEST(DType, AllDTypesListsEachOnce) {
  int seen[ox::kNumDTypes] = {};
  for (DType dt : ox::kAllDTypes) ++seen[static_cast<int>(dt)];
  for (int i = 0; i < ox::kNumDTypes; ++i) EXPECT_EQ(seen[i], 1) << "dtype index " << i;
}

TEST(DType, Categories) {
  struct Row {
    DType dt;
    bool floating, integral, is_signed;
  };
  const Row rows[] = {
      {ox::kF32, true, false, true}, {ox::kF64, true, false, true},
      {ox::kF16, true, false, true}, {ox::kBF16, true, false, true},
      {ox::kI64, false, true, true}, {ox::kI32, false, true, true},
      {ox::kI16, false, true, true}, {ox::kI8, false, true, true},
      {ox::kU8, false, true, false}, {ox::kBool, false, false, false},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(ox::is_floating(r.dt), r.floating) << r.dt;
    EXPECT_EQ(ox::is_integral(r.dt), r.integral) << r.dt;
    EXPECT_EQ(ox::is_signed(r.dt), r.is_signed) << r.dt;
  }
}

TEST(DType, ShortNames) {
  EXPECT_EQ(ox::dtype_name(ox::kF32), "f32");
  EXPECT_EQ(ox::dtype_name(ox::kF64), "f64");
  EXPECT_EQ(ox::dtype_name(ox::kF16), "f16");
  EXPECT_EQ(ox::dtype_name(ox::kBF16), "bf16");
  EXPECT_EQ(ox::dtype_name(ox::kI64), "i64");
  EXPECT_EQ(ox::dtype_name(ox::kI32), "i32");
  EXPECT_EQ(ox::dtype_name(ox::kI16), "i16");
  EXPECT_EQ(ox::dtype_name(ox::kI8), "i8");
  EXPECT_EQ(ox::dtype_name(ox::kU8), "u8");
  EXPECT_EQ(ox::dtype_name(ox::kBool), "bool");
}

TEST(DType, OutOfRangeValueIsNamedInvalid) {
  EXPECT_EQ(ox::dtype_name(static_cast<DType>(ox::kNumDTypes)), "invalid");
  EXPECT_EQ(ox::dtype_name(static_cast<DType>(200)), "invalid");
}

TEST(DType, StreamsItsShortName) {
  std::ostringstream out;
  out << ox::kBF16 << ',' << ox::kU8;
  EXPECT_EQ(out.str(), "bf16,u8");
}

TEST(DType, ParseAcceptsEveryAlias) {
  struct Alias {
    const char* name;
    DType dt;
  };
  const Alias aliases[] = {
      {"f32", ox::kF32},     {"float32", ox::kF32}, {"float", ox::kF32},     {"f64", ox::kF64},
      {"float64", ox::kF64}, {"double", ox::kF64},  {"f16", ox::kF16},       {"float16", ox::kF16},
      {"half", ox::kF16},    {"bf16", ox::kBF16},   {"bfloat16", ox::kBF16}, {"i64", ox::kI64},
      {"int64", ox::kI64},   {"long", ox::kI64},    {"i32", ox::kI32},       {"int32", ox::kI32},
      {"int", ox::kI32},     {"i16", ox::kI16},     {"int16", ox::kI16},     {"short", ox::kI16},
      {"i8", ox::kI8},       {"int8", ox::kI8},     {"u8", ox::kU8},         {"uint8", ox::kU8},
      {"bool", ox::kBool},
  };
  for (const Alias& a : aliases) EXPECT_EQ(ox::parse_dtype(a.name), a.dt) << a.name;
}

TEST(DType, ParseRoundTripsEveryShortName) {
  for (DType dt : ox::kAllDTypes) EXPECT_EQ(ox::parse_dtype(ox::dtype_name(dt)), dt) << dt;
}

TEST(DType, ParseRejectsUnknownNamesWithValueError) {
  for (const char* bad : {"", "F32", "float128", "f 32", "f32 ", "int4", "uint16", "complex64",
                          "boolean", "bfloat"}) {
    const ox::Error e = caught([&] { ox::parse_dtype(bad); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << "'" << bad << "'";
    EXPECT_NE(std::string(e.what()).find("parse_dtype"), std::string::npos) << e.what();
    std::string quoted = "'";  // built by appending: GCC 12 misfires -Wrestrict on a + b + c
    quoted += bad;
    quoted += '\'';
    EXPECT_NE(std::string(e.what()).find(quoted), std::string::npos) << e.what();
  }
}

// ---- promote_types ---------------------------------------------------------------------------

// torch.promote_types for every pair, written out by hand from PyTorch's rules, in the order
// bool < u8, i8 < i16 < i32 < i64 < f16, bf16 < f32 < f64 (u8+i8 -> i16, f16+bf16 -> f32,
// any integer with a float gives that float). Deliberately in a different order from DType.
constexpr DType kOrder[10] = {ox::kBool, ox::kU8,  ox::kI8,   ox::kI16, ox::kI32,
                              ox::kI64,  ox::kF16, ox::kBF16, ox::kF32, ox::kF64};
constexpr DType B = ox::kBool, U8 = ox::kU8, I8 = ox::kI8, I16 = ox::kI16, I32 = ox::kI32,
                I64 = ox::kI64, F16 = ox::kF16, BF = ox::kBF16, F32 = ox::kF32, F64 = ox::kF64;
constexpr DType kExpectedPromotion[10][10] = {
    //        bool  u8   i8   i16  i32  i64  f16  bf16 f32  f64
    /* bool */ {B, U8, I8, I16, I32, I64, F16, BF, F32, F64},
    /* u8   */ {U8, U8, I16, I16, I32, I64, F16, BF, F32, F64},
    /* i8   */ {I8, I16, I8, I16, I32, I64, F16, BF, F32, F64},
    /* i16  */ {I16, I16, I16, I16, I32, I64, F16, BF, F32, F64},
    /* i32  */ {I32, I32, I32, I32, I32, I64, F16, BF, F32, F64},
    /* i64  */ {I64, I64, I64, I64, I64, I64, F16, BF, F32, F64},
    /* f16  */ {F16, F16, F16, F16, F16, F16, F16, F32, F32, F64},
    /* bf16 */ {BF, BF, BF, BF, BF, BF, F32, BF, F32, F64},
    /* f32  */ {F32, F32, F32, F32, F32, F32, F32, F32, F32, F64},
    /* f64  */ {F64, F64, F64, F64, F64, F64, F64, F64, F64, F64},
};

TEST(Promotion, AllHundredPairsMatchPyTorchTable) {
  int checked = 0;
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j) {
      EXPECT_EQ(ox::promote_types(kOrder[i], kOrder[j]), kExpectedPromotion[i][j])
          << kOrder[i] << " with " << kOrder[j];
      ++checked;
    }
  EXPECT_EQ(checked, 100);
}

TEST(Promotion, HandTableIsSymmetric) {  // guards the hand-written table itself
  for (int i = 0; i < 10; ++i)
    for (int j = 0; j < 10; ++j)
      EXPECT_EQ(kExpectedPromotion[i][j], kExpectedPromotion[j][i]) << i << "," << j;
}

TEST(Promotion, SameTypeGivesItself) {
  for (DType dt : ox::kAllDTypes) EXPECT_EQ(ox::promote_types(dt, dt), dt) << dt;
}

TEST(Promotion, IsSymmetricAndAssociative) {
  for (DType a : ox::kAllDTypes)
    for (DType b : ox::kAllDTypes) {
      EXPECT_EQ(ox::promote_types(a, b), ox::promote_types(b, a)) << a << " " << b;
      for (DType c : ox::kAllDTypes)
        EXPECT_EQ(ox::promote_types(ox::promote_types(a, b), c),
                  ox::promote_types(a, ox::promote_types(b, c)))
            << a << " " << b << " " << c;
    }
}

TEST(Promotion, NamedPyTorchCases) {
  EXPECT_EQ(ox::promote_types(ox::kU8, ox::kI8), ox::kI16);
  EXPECT_EQ(ox::promote_types(ox::kI8, ox::kU8), ox::kI16);
  EXPECT_EQ(ox::promote_types(ox::kF16, ox::kBF16), ox::kF32);
  EXPECT_EQ(ox::promote_types(ox::kBF16, ox::kF16), ox::kF32);
  EXPECT_EQ(ox::promote_types(ox::kI64, ox::kF16), ox::kF16);
  EXPECT_EQ(ox::promote_types(ox::kBool, ox::kU8), ox::kU8);
  EXPECT_EQ(ox::promote_types(ox::kI32, ox::kF32), ox::kF32);
  EXPECT_EQ(ox::promote_types(ox::kF32, ox::kF64), ox::kF64);
}

// ---- Scalar ----------------------------------------------------------------------------------

TEST(DTypeScalar, KindFollowsTheCxxType) {
  EXPECT_EQ(ox::Scalar(true).kind(), ox::Scalar::Kind::Bool);
  EXPECT_EQ(ox::Scalar(false).kind(), ox::Scalar::Kind::Bool);
  EXPECT_EQ(ox::Scalar(2).kind(), ox::Scalar::Kind::Int);
  EXPECT_EQ(ox::Scalar(int64_t{-7}).kind(), ox::Scalar::Kind::Int);
  EXPECT_EQ(ox::Scalar(uint8_t{200}).kind(), ox::Scalar::Kind::Int);
  EXPECT_EQ(ox::Scalar(int8_t{-3}).kind(), ox::Scalar::Kind::Int);
  EXPECT_EQ(ox::Scalar(2.5).kind(), ox::Scalar::Kind::Float);
  EXPECT_EQ(ox::Scalar(2.5f).kind(), ox::Scalar::Kind::Float);
  EXPECT_EQ(ox::Scalar(ox::Half(1.5f)).kind(), ox::Scalar::Kind::Float);
  EXPECT_EQ(ox::Scalar(ox::BFloat16(1.5f)).kind(), ox::Scalar::Kind::Float);
  EXPECT_EQ(ox::Scalar().kind(), ox::Scalar::Kind::Int);
}

TEST(DTypeScalar, IsFloatingOnlyForFloats) {
  EXPECT_TRUE(ox::Scalar(0.0).is_floating());
  EXPECT_FALSE(ox::Scalar(0).is_floating());
  EXPECT_FALSE(ox::Scalar(false).is_floating());
}

TEST(DTypeScalar, Values) {
  EXPECT_EQ(ox::Scalar().to_int(), 0);
  EXPECT_EQ(ox::Scalar().to_double(), 0.0);
  EXPECT_EQ(ox::Scalar(true).to_int(), 1);
  EXPECT_EQ(ox::Scalar(true).to_double(), 1.0);
  EXPECT_EQ(ox::Scalar(false).to_int(), 0);
  EXPECT_EQ(ox::Scalar(uint8_t{200}).to_int(), 200);
  EXPECT_EQ(ox::Scalar(int8_t{-3}).to_int(), -3);
  // int64 beyond 2^53 is kept exactly (not passed through a double).
  const int64_t big = (int64_t{1} << 62) + 1;
  EXPECT_EQ(ox::Scalar(big).to_int(), big);
  EXPECT_EQ(ox::Scalar(-5).to_double(), -5.0);
  EXPECT_EQ(ox::Scalar(2.75).to_double(), 2.75);
  EXPECT_EQ(ox::Scalar(0.1f).to_double(), static_cast<double>(0.1f));
  EXPECT_EQ(ox::Scalar(2.75).to_int(), 2);    // truncates toward zero
  EXPECT_EQ(ox::Scalar(-2.75).to_int(), -2);  // truncates toward zero
  EXPECT_EQ(ox::Scalar(ox::Half(1.5f)).to_double(), 1.5);
  EXPECT_EQ(ox::Scalar(ox::BFloat16(-3.0f)).to_double(), -3.0);
}

TEST(DTypeScalar, DefaultDTypeIsF32I64OrBool) {
  EXPECT_EQ(ox::Scalar(2.5).default_dtype(), ox::kF32);  // the default float dtype, not f64
  EXPECT_EQ(ox::Scalar(2.5f).default_dtype(), ox::kF32);
  EXPECT_EQ(ox::Scalar(2).default_dtype(), ox::kI64);
  EXPECT_EQ(ox::Scalar(uint8_t{1}).default_dtype(), ox::kI64);
  EXPECT_EQ(ox::Scalar(true).default_dtype(), ox::kBool);
}

TEST(DTypeScalar, Streams) {
  std::ostringstream out;
  out << ox::Scalar(2.5) << ' ' << ox::Scalar(-3) << ' ' << ox::Scalar(true) << ' '
      << ox::Scalar(false);
  EXPECT_EQ(out.str(), "2.5 -3 true false");
}

// ---- result_type / ResultType ----------------------------------------------------------------

TEST(ResultType, TensorWithScalarFollowsPyTorch) {
  EXPECT_EQ(ox::result_type(ox::kI32, 2.5), ox::kF32);  // int tensor + float -> default
  EXPECT_EQ(ox::result_type(ox::kI32, 2), ox::kI32);    // same category: tensor wins
  EXPECT_EQ(ox::result_type(ox::kU8, 1000), ox::kU8);   // value does not matter
  EXPECT_EQ(ox::result_type(ox::kU8, -1), ox::kU8);
  EXPECT_EQ(ox::result_type(ox::kI8, int64_t{1} << 40), ox::kI8);
  EXPECT_EQ(ox::result_type(ox::kBool, 1), ox::kI64);  // bool tensor + int -> i64
  EXPECT_EQ(ox::result_type(ox::kBool, true), ox::kBool);
  EXPECT_EQ(ox::result_type(ox::kBool, 2.5), ox::kF32);
  EXPECT_EQ(ox::result_type(ox::kF16, 2.5), ox::kF16);  // float tensor keeps its type
  EXPECT_EQ(ox::result_type(ox::kBF16, 1e30), ox::kBF16);
  EXPECT_EQ(ox::result_type(ox::kF64, 2.5f), ox::kF64);
  EXPECT_EQ(ox::result_type(ox::kF16, 3), ox::kF16);
  EXPECT_EQ(ox::result_type(ox::kI64, true), ox::kI64);
  EXPECT_EQ(ox::result_type(ox::kI16, false), ox::kI16);
  EXPECT_EQ(ox::result_type(ox::kI64, 2.5), ox::kF32);
}

TEST(ResultType, ZeroDimTensorsOnlyRaiseTheCategory) {
  using RT = ox::ResultType;
  EXPECT_EQ(RT().tensor(ox::kI32).tensor(ox::kI64, true).get(), ox::kI32);
  EXPECT_EQ(RT().tensor(ox::kI32).tensor(ox::kF64, true).get(), ox::kF64);
  EXPECT_EQ(RT().tensor(ox::kF16).tensor(ox::kF64, true).get(), ox::kF16);
  EXPECT_EQ(RT().tensor(ox::kF32).tensor(ox::kF64, true).get(), ox::kF32);
  EXPECT_EQ(RT().tensor(ox::kF16).tensor(ox::kBF16, true).get(), ox::kF16);
  EXPECT_EQ(RT().tensor(ox::kI64).tensor(ox::kF16, true).get(), ox::kF16);
  EXPECT_EQ(RT().tensor(ox::kU8).tensor(ox::kI8, true).get(), ox::kU8);
  EXPECT_EQ(RT().tensor(ox::kBool).tensor(ox::kI64, true).get(), ox::kI64);
  EXPECT_EQ(RT().tensor(ox::kBool).tensor(ox::kBool, true).get(), ox::kBool);
  EXPECT_EQ(RT().tensor(ox::kI8).tensor(ox::kBool, true).get(), ox::kI8);
}

TEST(ResultType, ZeroDimTensorsAndScalarsAlone) {
  using RT = ox::ResultType;
  EXPECT_EQ(RT().tensor(ox::kI64, true).scalar(2.5).get(), ox::kF32);
  EXPECT_EQ(RT().tensor(ox::kI32, true).tensor(ox::kI64, true).get(), ox::kI64);
  EXPECT_EQ(RT().tensor(ox::kU8, true).tensor(ox::kI8, true).get(), ox::kI16);
  EXPECT_EQ(RT().tensor(ox::kF16, true).tensor(ox::kBF16, true).get(), ox::kF32);
  EXPECT_EQ(RT().tensor(ox::kF16, true).scalar(2.5).get(), ox::kF16);
  EXPECT_EQ(RT().tensor(ox::kF64, true).scalar(2.5).get(), ox::kF64);
  EXPECT_EQ(RT().tensor(ox::kBool, true).scalar(1).get(), ox::kI64);
  EXPECT_EQ(RT().tensor(ox::kI8, true).scalar(1).get(), ox::kI8);
  EXPECT_EQ(RT().tensor(ox::kBool, true).get(), ox::kBool);
  EXPECT_EQ(RT().scalar(1).scalar(2.5).get(), ox::kF32);
  EXPECT_EQ(RT().scalar(true).scalar(1).get(), ox::kI64);
  EXPECT_EQ(RT().scalar(true).get(), ox::kBool);
  EXPECT_EQ(RT().scalar(7).get(), ox::kI64);
}

TEST(ResultType, DimensionedTensorsPromoteFully) {
  using RT = ox::ResultType;
  EXPECT_EQ(RT().tensor(ox::kI8).tensor(ox::kU8).get(), ox::kI16);
  EXPECT_EQ(RT().tensor(ox::kF16).tensor(ox::kBF16).get(), ox::kF32);
  EXPECT_EQ(RT().tensor(ox::kI32).tensor(ox::kI64).get(), ox::kI64);
  EXPECT_EQ(RT().tensor(ox::kF16).tensor(ox::kI64).tensor(ox::kI8).get(), ox::kF16);
  EXPECT_EQ(RT().tensor(ox::kF32).tensor(ox::kF64, false).get(), ox::kF64);
}

TEST(ResultType, ThreeTiers) {
  using RT = ox::ResultType;
  // zero-dim bf16 beats the float scalar (same category), then raises the int tensor.
  EXPECT_EQ(RT().tensor(ox::kI32).tensor(ox::kBF16, true).scalar(2.5).get(), ox::kBF16);
  // zero-dim i64 with a float scalar gives f32, which raises the i32 tensor.
  EXPECT_EQ(RT().tensor(ox::kI32).tensor(ox::kI64, true).scalar(2.5).get(), ox::kF32);
  // bool tensor, bool zero-dim tensor and an int scalar: the int category wins, as i64.
  EXPECT_EQ(RT().tensor(ox::kBool).tensor(ox::kBool, true).scalar(2).get(), ox::kI64);
  // float tensor ignores everything below it.
  EXPECT_EQ(RT().tensor(ox::kBF16).tensor(ox::kF64, true).scalar(2.5).get(), ox::kBF16);
  EXPECT_EQ(RT().tensor(ox::kU8).tensor(ox::kI64, true).scalar(300).get(), ox::kU8);
}

TEST(ResultType, OrderOfOperandsDoesNotMatter) {
  using RT = ox::ResultType;
  EXPECT_EQ(RT().scalar(2.5).tensor(ox::kI64, true).tensor(ox::kI32).get(), ox::kF32);
  EXPECT_EQ(RT().tensor(ox::kI64, true).tensor(ox::kI32).scalar(2.5).get(), ox::kF32);
  EXPECT_EQ(RT().scalar(2).tensor(ox::kBool).get(), ox::kI64);
  EXPECT_EQ(RT().tensor(ox::kF64, true).tensor(ox::kI32).get(), ox::kF64);
}

TEST(ResultType, MatchesResultTypeFunction) {
  for (DType dt : ox::kAllDTypes)
    for (const ox::Scalar& s : {ox::Scalar(1.5), ox::Scalar(3), ox::Scalar(true)})
      EXPECT_EQ(ox::ResultType().tensor(dt).scalar(s).get(), ox::result_type(dt, s)) << dt;
}

TEST(ResultType, TensorAndScalarForEveryDType) {
  // Independent rule: a float scalar moves bool/int tensors to f32; an int scalar moves a bool
  // tensor to i64; otherwise the tensor's dtype is kept.
  for (DType dt : ox::kAllDTypes) {
    const bool fl = dt == F32 || dt == F64 || dt == F16 || dt == BF;
    EXPECT_EQ(ox::result_type(dt, 0.5), fl ? dt : F32) << dt;
    EXPECT_EQ(ox::result_type(dt, 5), dt == B ? I64 : dt) << dt;
    EXPECT_EQ(ox::result_type(dt, false), dt) << dt;
  }
}

TEST(ResultType, NoOperandsIsAnInternalError) {
  const ox::Error e = caught([] { (void)ox::ResultType().get(); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Internal);
}

}  // namespace
