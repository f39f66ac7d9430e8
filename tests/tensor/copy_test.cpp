// Copies and conversions: to(dtype) for all 100 (source, destination) dtype pairs against an
// oracle written here from the documented rules, copy_ with broadcasting, strided and
// overlapping operands, refused destinations, thread-count independence and SIMD tail sizes.
//
// The oracle works in long double (64-bit mantissa or more, so every int64 is exact):
//   float -> int: truncation toward zero; NaN, +-Inf and out of range give the x86 "integer
//   indefinite" (CVTTSD2SI: the minimum of its width), 64 bits wide for i64 and u8, 32 bits for
//   i32/i16/i8, then the low bits as for int -> int (PyTorch on x86);
//   anything -> bool: != 0 (NaN is true);  bool -> anything: 0 or 1;
//   int -> int: modulo 2^bits;  -> float: round to nearest even in the target format, with
//   16-bit floats reached through f32 (so f64 and int64 round twice, as documented).
// 16-bit floats are built from and read back as bits, decoded here by hand.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "test_util.h"

namespace {

using ox::DType;
using ox::ErrorKind;
using oxtest::kind_of;
using oxtest::shape_of;
using LD = long double;
static_assert(std::numeric_limits<LD>::digits >= 64, "the oracle needs int64 to be exact");

// ---- Decoding 16-bit floats by hand -------------------------------------------------------

LD decode_f16(uint16_t b) {
  const int e = (b >> 10) & 0x1f, m = b & 0x3ff;
  LD v;
  if (e == 0) {
    v = std::ldexp(LD(m), -24);  // subnormal: m * 2^-24
  } else if (e == 31) {
    v = m ? std::numeric_limits<LD>::quiet_NaN() : std::numeric_limits<LD>::infinity();
  } else {
    v = std::ldexp(LD(1024 + m), e - 25);  // (1 + m/2^10) * 2^(e-15)
  }
  return (b & 0x8000) ? -v : v;
}

LD decode_bf16(uint16_t b) {
  const int e = (b >> 7) & 0xff, m = b & 0x7f;
  LD v;
  if (e == 0) {
    v = std::ldexp(LD(m), -133);  // subnormal: m * 2^-133
  } else if (e == 255) {
    v = m ? std::numeric_limits<LD>::quiet_NaN() : std::numeric_limits<LD>::infinity();
  } else {
    v = std::ldexp(LD(128 + m), e - 134);  // (1 + m/2^7) * 2^(e-127)
  }
  return (b & 0x8000) ? -v : v;
}

TEST(Cast, HandDecodersAgreeWithKnownBitPatterns) {
  EXPECT_EQ(decode_f16(0x3C00), 1.0L);
  EXPECT_EQ(decode_f16(0xC100), -2.5L);
  EXPECT_EQ(decode_f16(0x7BFF), 65504.0L);
  EXPECT_EQ(decode_f16(0x0001), std::ldexp(1.0L, -24));
  EXPECT_EQ(decode_f16(0x5CB2), 300.5L);
  EXPECT_TRUE(std::isinf(decode_f16(0xFC00)) && decode_f16(0xFC00) < 0);
  EXPECT_TRUE(std::isnan(decode_f16(0x7E00)));
  EXPECT_EQ(decode_bf16(0x3F80), 1.0L);
  EXPECT_EQ(decode_bf16(0x42FE), 127.0L);
  EXPECT_EQ(decode_bf16(0x4F00), 2147483648.0L);
  EXPECT_EQ(decode_bf16(0x3DCD), 0.10009765625L);
  EXPECT_EQ(decode_bf16(0x0001), std::ldexp(1.0L, -133));
  EXPECT_TRUE(std::isnan(decode_bf16(0x7FC0)));
}

// ---- The rounding oracle ------------------------------------------------------------------

struct FloatFormat {
  int digits;  // significand bits, the implicit one included
  int emin;    // exponent of the smallest normal number
  LD max;      // largest finite value
};

FloatFormat format_of(DType dt) {
  switch (dt) {
    case DType::F64:
      return {53, -1022, LD(DBL_MAX)};
    case DType::F32:
      return {24, -126, LD(FLT_MAX)};
    case DType::F16:
      return {11, -14, 65504.0L};
    case DType::BF16:
      return {8, -126, std::ldexp(LD(255), 120)};  // (2 - 2^-7) * 2^127
    default:
      ADD_FAILURE() << "not a float dtype";
      return {};
  }
}

// Round to nearest, ties to even, into `f` (subnormals and overflow to infinity included).
LD round_to(LD x, const FloatFormat& f) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e = 0;
  std::frexp(std::fabs(x), &e);  // |x| = m * 2^e with m in [0.5, 1): leading bit at 2^(e-1)
  const int quantum = std::max(e - 1, f.emin) - (f.digits - 1);
  const LD r = std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
  if (std::fabs(r) > f.max) return std::copysign(std::numeric_limits<LD>::infinity(), x);
  return r;
}

struct IntRange {
  LD lo, hi;
  int bits;
  bool is_signed;
};

IntRange range_of(DType dt) {
  switch (dt) {
    case DType::I64:
      return {-0x1p63L, 0x1p63L - 1, 64, true};
    case DType::I32:
      return {-0x1p31L, 0x1p31L - 1, 32, true};
    case DType::I16:
      return {-32768.0L, 32767.0L, 16, true};
    case DType::I8:
      return {-128.0L, 127.0L, 8, true};
    case DType::U8:
      return {0.0L, 255.0L, 8, false};
    default:
      ADD_FAILURE() << "not an integer dtype";
      return {};
  }
}

LD expected_conversion(LD x, DType src, DType dst) {
  if (src == dst) return x;
  if (dst == ox::kBool) return x != 0 ? 1 : 0;  // NaN != 0
  if (ox::is_floating(dst)) {
    if (dst == ox::kF16 || dst == ox::kBF16)
      return round_to(round_to(x, format_of(ox::kF32)), format_of(dst));
    return round_to(x, format_of(dst));
  }
  const IntRange r = range_of(dst);
  if (ox::is_floating(src)) {
    const int width = r.bits == 64 || !r.is_signed ? 64 : 32;
    const LD limit = std::ldexp(1.0L, width - 1);
    const LD t = std::trunc(x);
    x = std::isnan(x) || t < -limit || t >= limit ? -limit : t;  // then the int -> int rule
  }
  // Integer or bool source: keep the low `bits` bits, read them as the destination type.
  const uint64_t u = static_cast<uint64_t>(static_cast<int64_t>(x));
  if (r.bits == 64) return static_cast<LD>(static_cast<int64_t>(u));
  const uint64_t low = u & ((uint64_t{1} << r.bits) - 1);
  if (r.is_signed && low >= (uint64_t{1} << (r.bits - 1)))
    return LD(low) - std::ldexp(1.0L, r.bits);
  return LD(low);
}

TEST(Cast, OracleAgreesWithHandRoundedValues) {
  const FloatFormat h = format_of(ox::kF16), b = format_of(ox::kBF16), f = format_of(ox::kF32);
  EXPECT_EQ(round_to(2049, h), 2048);  // tie: to even
  EXPECT_EQ(round_to(2051, h), 2052);
  EXPECT_EQ(round_to(65519, h), 65504);
  EXPECT_TRUE(std::isinf(round_to(65520, h)));
  EXPECT_EQ(round_to(1.5L * std::ldexp(1.0L, -24), h), std::ldexp(1.0L, -23));
  EXPECT_EQ(round_to(std::ldexp(1.0L, -25), h), 0);
  EXPECT_EQ(round_to(257, b), 256);
  EXPECT_EQ(round_to(259, b), 260);
  EXPECT_EQ(round_to(255, b), 255);  // 8 significant bits: exact
  EXPECT_EQ(round_to(511, b), 512);  // tie: to even
  EXPECT_EQ(round_to(16777217, f), 16777216);
  EXPECT_EQ(expected_conversion(-1, ox::kI64, ox::kU8), 255);
  EXPECT_EQ(expected_conversion(128, ox::kI32, ox::kI8), -128);
  EXPECT_EQ(expected_conversion(-2.5L, ox::kF32, ox::kI8), -2);
  EXPECT_EQ(expected_conversion(-2.5L, ox::kF32, ox::kU8), 254);  // -2 as a byte
  EXPECT_EQ(expected_conversion(300.7L, ox::kF32, ox::kU8), 44);  // 300 mod 256
  EXPECT_EQ(expected_conversion(NAN, ox::kF32, ox::kI64), -0x1p63L);
  EXPECT_EQ(expected_conversion(1e10L, ox::kF32, ox::kI32), -0x1p31L);
  EXPECT_EQ(expected_conversion(40000, ox::kF32, ox::kI16), -25536);  // via i32, low 16 bits
  EXPECT_EQ(expected_conversion(1e10L, ox::kF32, ox::kI16), 0);       // INT32_MIN's low bits
}

// ---- Source values per dtype --------------------------------------------------------------

struct Source {
  ox::Tensor tensor;
  std::vector<LD> values;
};

template <class T>
Source typed_source(const std::vector<T>& v) {
  Source s{ox::tensor(v), {}};
  for (T x : v) s.values.push_back(static_cast<LD>(x));
  return s;
}

Source source(DType dt) {
  constexpr float fnan = std::numeric_limits<float>::quiet_NaN();
  constexpr float finf = std::numeric_limits<float>::infinity();
  constexpr int64_t i64min = std::numeric_limits<int64_t>::min();
  constexpr int64_t i64max = std::numeric_limits<int64_t>::max();
  switch (dt) {
    case DType::F32:
      return typed_source(std::vector<float>{0.f,
                                             -0.f,
                                             1.f,
                                             -1.f,
                                             0.5f,
                                             -0.5f,
                                             2.5f,
                                             -2.5f,
                                             0.1f,
                                             127.f,
                                             128.f,
                                             255.f,
                                             256.f,
                                             257.f,
                                             259.f,
                                             -128.f,
                                             -129.f,
                                             300.7f,
                                             2049.f,
                                             2051.f,
                                             32767.5f,
                                             40000.f,
                                             -40000.f,
                                             65519.f,
                                             65520.f,
                                             2147483520.f,
                                             2147483648.f,
                                             -2147483648.f,
                                             3e9f,
                                             1e10f,
                                             -1e10f,
                                             1e19f,
                                             -1e19f,
                                             3e38f,
                                             1.5f * 0x1p-24f,
                                             0x1p-25f,
                                             0.75f * 0x1p-24f,
                                             1e-45f,
                                             -1e-45f,
                                             finf,
                                             -finf,
                                             fnan});
    case DType::F64:
      return typed_source(std::vector<double>{0.0,
                                              -0.0,
                                              1.0,
                                              -1.0,
                                              0.5,
                                              -2.5,
                                              0.1,
                                              -0.1,
                                              127.0,
                                              128.0,
                                              255.0,
                                              255.5,
                                              256.0,
                                              -129.0,
                                              2049.0,
                                              65520.0,
                                              16777217.0,
                                              1.0 + 0x1p-11 + 0x1p-30,
                                              9007199254740994.0,
                                              4294967296.5,
                                              -4294967296.5,
                                              1e19,
                                              -1e19,
                                              1e300,
                                              -1e300,
                                              1e-310,
                                              0x1p-149,
                                              std::numeric_limits<double>::infinity(),
                                              -std::numeric_limits<double>::infinity(),
                                              std::numeric_limits<double>::quiet_NaN()});
    case DType::F16: {
      const std::vector<uint16_t> bits{
          0x0000, 0x8000, 0x3C00, 0xBC00, 0x3800, 0x4100, 0xC100, 0x57F0, 0x5800, 0x5BF8, 0x5C00,
          0x5CB2, 0xD808, 0x6800, 0x7BFF, 0xFBFF, 0x0001, 0x63D0, 0x3555, 0x7C00, 0xFC00, 0x7E00};
      std::vector<ox::Half> h;
      Source s;
      for (uint16_t b : bits) {
        h.push_back(ox::Half::from_bits(b));
        s.values.push_back(decode_f16(b));
      }
      s.tensor = ox::tensor(h);
      return s;
    }
    case DType::BF16: {
      const std::vector<uint16_t> bits{0x0000, 0x8000, 0x3F80, 0xBF80, 0x4020, 0xC020,
                                       0x42FE, 0x4300, 0x4380, 0xC301, 0x4F00, 0x5F00,
                                       0xDF00, 0x5015, 0x7F7F, 0xFF7F, 0x0001, 0x3DCD,
                                       0x477F, 0x4780, 0x7F80, 0xFF80, 0x7FC0};
      std::vector<ox::BFloat16> h;
      Source s;
      for (uint16_t b : bits) {
        h.push_back(ox::BFloat16::from_bits(b));
        s.values.push_back(decode_bf16(b));
      }
      s.tensor = ox::tensor(h);
      return s;
    }
    case DType::I64:
      return typed_source(std::vector<int64_t>{0,
                                               1,
                                               -1,
                                               127,
                                               128,
                                               255,
                                               256,
                                               257,
                                               -128,
                                               -129,
                                               2049,
                                               32767,
                                               32768,
                                               65535,
                                               65536,
                                               -32769,
                                               2147483647,
                                               2147483648,
                                               -2147483649,
                                               16777217,
                                               9007199254740993,
                                               i64max,
                                               i64min,
                                               0x123456789ABCDEF0,
                                               -0x123456789ABCDEF0});
    case DType::I32:
      return typed_source(std::vector<int32_t>{0, 1, -1, 127, 128, 255, 256, -129, 2049, 32768,
                                               65536, -32769, 2147483647, -2147483647 - 1, 16777217,
                                               0x12345678, -0x12345678});
    case DType::I16:
      return typed_source(std::vector<int16_t>{0, 1, -1, 127, 128, 255, 256, -129, 2049, 2051,
                                               32767, -32768, 0x1234});
    case DType::I8:
      return typed_source(std::vector<int8_t>{0, 1, -1, 127, -128, 100, -100});
    case DType::U8:
      return typed_source(std::vector<uint8_t>{0, 1, 127, 128, 200, 255});
    case DType::Bool: {
      Source s{ox::tensor(std::vector<bool>{false, true, true, false}), {0, 1, 1, 0}};
      return s;
    }
  }
  ADD_FAILURE() << "unknown dtype";
  return {};
}

// The tensor's values, read in its own dtype (a plain byte copy) and widened here.
std::vector<LD> read(const ox::Tensor& t) {
  std::vector<LD> out;
  auto widen = [&](const auto& v) {
    for (auto x : v) out.push_back(static_cast<LD>(x));
  };
  switch (t.dtype()) {
    case DType::F32:
      widen(t.to_vector<float>());
      break;
    case DType::F64:
      widen(t.to_vector<double>());
      break;
    case DType::I64:
      widen(t.to_vector<int64_t>());
      break;
    case DType::I32:
      widen(t.to_vector<int32_t>());
      break;
    case DType::I16:
      widen(t.to_vector<int16_t>());
      break;
    case DType::I8:
      widen(t.to_vector<int8_t>());
      break;
    case DType::U8:
      widen(t.to_vector<uint8_t>());
      break;
    case DType::Bool:
      widen(t.to_vector<bool>());
      break;
    case DType::F16:
      for (ox::Half h : t.to_vector<ox::Half>()) out.push_back(decode_f16(h.bits));
      break;
    case DType::BF16:
      for (ox::BFloat16 h : t.to_vector<ox::BFloat16>()) out.push_back(decode_bf16(h.bits));
      break;
  }
  return out;
}

// Exact equality; NaN matches NaN, and for float results the sign of zero must match too.
::testing::AssertionResult same_value(LD actual, LD expected, DType dt) {
  const bool ok = std::isnan(expected)
                      ? std::isnan(actual)
                      : actual == expected && (!ox::is_floating(dt) ||
                                               std::signbit(actual) == std::signbit(expected));
  if (ok) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << actual << ", expected " << expected;
}

std::string dtype_str(DType dt) { return std::string(ox::dtype_name(dt)); }

class CastPair : public ::testing::TestWithParam<std::tuple<DType, DType>> {};

TEST_P(CastPair, ConvertsEveryValueByTheDocumentedRules) {
  const auto [src_dt, dst_dt] = GetParam();
  const Source s = source(src_dt);
  ASSERT_EQ(s.tensor.dtype(), src_dt);
  const int64_t n = static_cast<int64_t>(s.values.size());
  ASSERT_EQ(s.tensor.numel(), n);
  std::vector<LD> expected;
  for (LD x : s.values) expected.push_back(expected_conversion(x, src_dt, dst_dt));

  // to(dtype) from a contiguous source.
  const ox::Tensor out = s.tensor.to(dst_dt);
  EXPECT_EQ(out.dtype(), dst_dt);
  EXPECT_EQ(shape_of(out), (std::vector<int64_t>{n}));
  EXPECT_TRUE(out.is_contiguous());
  EXPECT_EQ(out.is_same_storage(s.tensor), src_dt == dst_dt);
  std::vector<LD> got = read(out);
  ASSERT_EQ(got.size(), expected.size());
  for (int64_t i = 0; i < n; ++i)
    EXPECT_TRUE(same_value(got[i], expected[i], dst_dt))
        << "element " << i << " (source " << s.values[i] << ")";

  // From a negative-stride source: the same values, reversed.
  got = read(s.tensor.flip({0}).to(dst_dt));
  ASSERT_EQ(got.size(), expected.size());
  for (int64_t i = 0; i < n; ++i)
    EXPECT_TRUE(same_value(got[i], expected[n - 1 - i], dst_dt)) << "flipped element " << i;

  // copy_ into every other element of a zeroed destination; the gaps stay zero.
  ox::Tensor wide = ox::zeros({2 * n}, dst_dt);
  wide.slice(0, 0, INT64_MAX, 2).copy_(s.tensor);
  got = read(wide);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_TRUE(same_value(got[2 * i], expected[i], dst_dt)) << "strided element " << i;
    EXPECT_TRUE(same_value(got[2 * i + 1], 0, dst_dt)) << "gap " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Cast, CastPair,
                         ::testing::Combine(::testing::ValuesIn(ox::kAllDTypes),
                                            ::testing::ValuesIn(ox::kAllDTypes)),
                         [](const ::testing::TestParamInfo<std::tuple<DType, DType>>& info) {
                           return dtype_str(std::get<0>(info.param)) + "_to_" +
                                  dtype_str(std::get<1>(info.param));
                         });

TEST(Cast, ToTheSameDTypeIsTheSameTensor) {
  const ox::Tensor t = ox::arange(6).reshape({2, 3}).t();
  EXPECT_EQ(t.to(ox::kI64).impl(), t.impl());
  const ox::Tensor d = t.to(ox::kF64);  // keeps the shape, becomes contiguous
  EXPECT_EQ(shape_of(d), (std::vector<int64_t>{3, 2}));
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(ox::scalar_tensor(2.5).to(ox::kI32).item<int32_t>(), 2);
  EXPECT_EQ(ox::zeros({1, 0, 3}).to(ox::kF16).numel(), 0);
}

// ---- copy_ --------------------------------------------------------------------------------

TEST(Copy, BroadcastsAndConvertsTheSource) {
  ox::Tensor dst = ox::zeros({3, 4});
  const ox::Tensor col = ox::tensor({int64_t{10}, int64_t{20}, int64_t{30}}).reshape({3, 1});
  ox::Tensor& ret = dst.copy_(col);
  EXPECT_EQ(&ret, &dst);
  std::vector<float> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) expected.push_back(10.f * (i + 1));
  EXPECT_EQ(dst.to_vector<float>(), expected);
  EXPECT_EQ(dst.dtype(), ox::kF32);

  dst.copy_(ox::tensor({1.5, 2.5, 3.5, 4.5}, {.dtype = ox::kF64}));  // a row, broadcast down
  expected.clear();
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) expected.push_back(1.5f + j);
  EXPECT_EQ(dst.to_vector<float>(), expected);

  dst.copy_(ox::scalar_tensor(true));  // 0-d
  EXPECT_EQ(dst.to_vector<float>(), std::vector<float>(12, 1.f));
  dst.copy_(ox::tensor({{7}}));  // (1, 1)
  EXPECT_EQ(dst.to_vector<float>(), std::vector<float>(12, 7.f));

  EXPECT_EQ(kind_of([&] { dst.copy_(ox::zeros({3})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { dst.copy_(ox::zeros({4, 4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { dst.copy_(ox::zeros({1, 1, 4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { dst.copy_(ox::zeros({2, 3, 4})); }), ErrorKind::Shape);
  EXPECT_EQ(kind_of([&] { dst.copy_(ox::Tensor()); }), ErrorKind::Value);
  EXPECT_EQ(dst.to_vector<float>(), std::vector<float>(12, 7.f));  // untouched by the failures
}

TEST(Copy, IntoNonContiguousDestinations) {
  const ox::Tensor src = ox::arange(12).reshape({3, 4});  // src[i][j] = 4i + j
  {
    ox::Tensor base = ox::zeros({4, 3}, ox::kI32);
    base.t().copy_(src);  // base[j][i] = 4i + j
    std::vector<int32_t> expected;
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 3; ++i) expected.push_back(4 * i + j);
    EXPECT_EQ(base.to_vector<int32_t>(), expected);
  }
  {
    ox::Tensor base = ox::zeros({3, 4}, ox::kF64);
    base.flip({0, 1}).copy_(src);  // base[i][j] = src[2-i][3-j]
    std::vector<double> expected;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) expected.push_back(4 * (2 - i) + (3 - j));
    EXPECT_EQ(base.to_vector<double>(), expected);
  }
  {
    ox::Tensor base = ox::full({5, 6}, -1, ox::kI16);
    base.narrow(0, 1, 3).narrow(1, 2, 4).copy_(src);  // a window with an offset
    std::vector<int16_t> expected;
    for (int r = 0; r < 5; ++r)
      for (int c = 0; c < 6; ++c)
        expected.push_back(r >= 1 && r < 4 && c >= 2 ? int16_t(4 * (r - 1) + (c - 2)) : -1);
    EXPECT_EQ(base.to_vector<int16_t>(), expected);
  }
  {
    ox::Tensor base = ox::zeros({12}, ox::kU8);
    base.as_strided({3, 4}, {1, 3}).copy_(src);  // column-major: base[3j + i] = 4i + j
    std::vector<uint8_t> expected(12);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) expected[3 * j + i] = uint8_t(4 * i + j);
    EXPECT_EQ(base.to_vector<uint8_t>(), expected);
  }
}

TEST(Copy, OverlappingViewsOfOneStorage) {
  auto iota = [](int n) { return ox::arange(0, n, 1, {.dtype = ox::kF32}); };
  {
    ox::Tensor x = iota(10);
    x.copy_(x.flip({0}));
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  }
  {
    ox::Tensor x = iota(10);  // shift right by one, as memmove would
    x.narrow(0, 1, 9).copy_(x.narrow(0, 0, 9));
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 0, 1, 2, 3, 4, 5, 6, 7, 8}));
  }
  {
    ox::Tensor x = iota(10);  // shift left by one
    x.narrow(0, 0, 9).copy_(x.narrow(0, 1, 9));
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 9}));
  }
  {
    ox::Tensor a = iota(9).reshape({3, 3});  // in-place transpose
    a.copy_(a.t());
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  }
  {
    ox::Tensor x = iota(8);  // every element from its neighbour pair, overlapping by stride
    x.slice(0, 0, 8, 2).copy_(x.slice(0, 1, 8, 2));
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 1, 3, 3, 5, 5, 7, 7}));
  }
  {
    ox::Tensor a = iota(12).reshape({3, 4});  // a row broadcast over the whole tensor
    a.copy_(a.select(0, 1));
    std::vector<float> expected;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) expected.push_back(4.f + j);
    EXPECT_EQ(a.to_vector<float>(), expected);
  }
  {
    ox::Tensor x = iota(10);  // itself: unchanged
    x.copy_(x);
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
  {
    ox::Tensor x = iota(10);  // disjoint halves of one storage
    x.narrow(0, 0, 5).copy_(x.narrow(0, 5, 5));
    EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{5, 6, 7, 8, 9, 5, 6, 7, 8, 9}));
  }
}

TEST(Copy, ExpandedDestinationsAreRefused) {
  ox::Tensor e = ox::zeros({3, 1}).expand({3, 4});
  EXPECT_EQ(kind_of([&] { e.copy_(ox::ones({3, 4})); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { e.fill_(1); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { e.zero_(); }), ErrorKind::Value);
  ox::Tensor s = ox::zeros({4}).as_strided({4}, {0});
  EXPECT_EQ(kind_of([&] { s.fill_(2); }), ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { s.copy_(ox::ones({4})); }), ErrorKind::Value);
  // A stride-0 dim of size 1 overlaps nothing: allowed.
  ox::Tensor base = ox::zeros({3});
  ox::Tensor one = base.unsqueeze(0).expand({1, 3});
  one.fill_(4);
  EXPECT_EQ(base.to_vector<float>(), std::vector<float>(3, 4.f));
  ox::Tensor single = base.as_strided({1, 3}, {0, 1});
  single.copy_(ox::tensor({1.f, 2.f, 3.f}));
  EXPECT_EQ(base.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(Copy, FillConvertsTheScalar) {
  ox::Tensor base = ox::zeros({3, 4}, ox::kI32);
  base.t().narrow(0, 1, 2).fill_(2.9);  // columns 1 and 2; 2.9 truncates to 2
  std::vector<int32_t> expected;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) expected.push_back(j == 1 || j == 2 ? 2 : 0);
  EXPECT_EQ(base.to_vector<int32_t>(), expected);
  EXPECT_EQ(ox::zeros({2}, ox::kU8).fill_(255.9).to_vector<uint8_t>(),
            std::vector<uint8_t>(2, 255));  // truncates into range
  EXPECT_EQ(ox::zeros({2}, ox::kI8).fill_(-128.5).to_vector<int8_t>(),
            std::vector<int8_t>(2, -128));
  EXPECT_EQ(ox::zeros({2}, ox::kI16).fill_(true).to_vector<int16_t>(), std::vector<int16_t>(2, 1));
  EXPECT_EQ(ox::zeros({2}, ox::kBool).fill_(0.1).to_vector<bool>(), std::vector<bool>(2, true));
  EXPECT_EQ(ox::zeros({2}, ox::kF16).fill_(2049).to_vector<float>(),
            std::vector<float>(2, 2048.f));  // tie to even in f16
  EXPECT_EQ(ox::zeros({2}, ox::kBF16).fill_(259).to_vector<float>(),
            std::vector<float>(2, 260.f));  // tie to even in bf16
  EXPECT_EQ(ox::zeros({2}, ox::kI64).fill_(int64_t{1} << 62).to_vector<int64_t>(),
            std::vector<int64_t>(2, int64_t{1} << 62));
  ox::Tensor flipped = ox::zeros({5}, ox::kF64);
  flipped.flip({0}).narrow(0, 0, 2).fill_(0.5);  // the last two elements
  EXPECT_EQ(flipped.to_vector<double>(), (std::vector<double>{0, 0, 0, 0.5, 0.5}));
  ox::Tensor empty = ox::zeros({0, 3});
  empty.fill_(1);  // nothing to do, no error
  EXPECT_EQ(empty.numel(), 0);
}

// As PyTorch's fill: a value the dtype cannot hold is refused, not wrapped or saturated.
TEST(Copy, FillRefusesValuesThatOverflowTheDType) {
  const auto refused = [](ox::DType dt, const ox::Scalar& v) {
    try {
      ox::zeros({2}, dt).fill_(v);
    } catch (const ox::Error& e) {
      return e.kind() == ox::ErrorKind::Value;
    }
    return false;
  };
  EXPECT_TRUE(refused(ox::kU8, -1.5));
  EXPECT_TRUE(refused(ox::kU8, 256));
  EXPECT_TRUE(refused(ox::kU8, -1));
  EXPECT_TRUE(refused(ox::kI8, 1e6));
  EXPECT_TRUE(refused(ox::kI8, 128));
  EXPECT_TRUE(refused(ox::kI16, std::nan("")));
  EXPECT_TRUE(refused(ox::kI32, std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(refused(ox::kI64, 0x1p63));
  EXPECT_TRUE(refused(ox::kF16, 65536.0));
  EXPECT_TRUE(refused(ox::kF16, 100000));
  EXPECT_TRUE(refused(ox::kF32, 1e39));
  EXPECT_FALSE(refused(ox::kI64, -0x1p63));
  EXPECT_FALSE(refused(ox::kF16, 65504.0));
  EXPECT_FALSE(refused(ox::kF16, -std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(refused(ox::kF32, std::nan("")));
  EXPECT_FALSE(refused(ox::kBool, 1e300));
  EXPECT_FALSE(refused(ox::kU8, true));
}

// ---- Thread counts and sizes --------------------------------------------------------------

class ThreadCount {
 public:
  ThreadCount() : saved_(ox::get_num_threads()) {}
  ~ThreadCount() { ox::set_num_threads(saved_); }

 private:
  int saved_;
};

template <class T>
std::vector<unsigned char> bytes_of(const ox::Tensor& t) {
  const ox::Tensor c = t.cpu().contiguous();
  std::vector<unsigned char> out(c.nbytes());
  std::memcpy(out.data(), c.data_ptr<T>(), out.size());
  return out;
}

TEST(Copy, ResultsDoNotDependOnTheThreadCount) {
  const ThreadCount restore;
  constexpr int64_t R = 1029, C = 917;
  // src[i][j] = 1029 j + i: a transposed view of a contiguous (917, 1029) range.
  const ox::Tensor src = ox::arange(0, R * C, 1, {.dtype = ox::kF64}).reshape({C, R}).t();
  ASSERT_EQ(shape_of(src), (std::vector<int64_t>{R, C}));

  std::vector<unsigned char> f32[2], f16[2], flipped[2];
  for (int k = 0; k < 2; ++k) {
    ox::set_num_threads(k + 1);
    ASSERT_EQ(ox::get_num_threads(), k + 1);
    ox::Tensor a = ox::empty({R, C});
    a.copy_(src);
    f32[k] = bytes_of<float>(a);
    ox::Tensor b = ox::empty({C, R}, ox::kF16);  // written through a transposed view
    b.t().copy_(src);                            // most values overflow f16: inf
    f16[k] = bytes_of<ox::Half>(b);
    ox::Tensor c = ox::zeros({R + 2, C + 3}, ox::kI32);
    c.narrow(0, 1, R).narrow(1, 2, C).copy_(src.flip({0, 1}));
    flipped[k] = bytes_of<int32_t>(c);
    if (k == 0) {
      // The values themselves, by index arithmetic.
      const std::vector<float> av = a.to_vector<float>();
      const std::vector<int32_t> cv = c.to_vector<int32_t>();
      int64_t wrong = 0;
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < C; ++j) {
          wrong += av[i * C + j] != float(R * j + i);
          wrong += cv[(i + 1) * (C + 3) + (j + 2)] != int32_t(R * (C - 1 - j) + (R - 1 - i));
        }
      for (int64_t j = 0; j < C + 3; ++j) wrong += cv[j] != 0 || cv[(R + 1) * (C + 3) + j] != 0;
      EXPECT_EQ(wrong, 0);
    }
  }
  EXPECT_TRUE(f32[0] == f32[1]);
  EXPECT_TRUE(f16[0] == f16[1]);
  EXPECT_TRUE(flipped[0] == flipped[1]);
}

TEST(Copy, TailSizes) {
  for (const int64_t n : {int64_t{1}, int64_t{23}, int64_t{812}}) {
    SCOPED_TRACE(n);
    const ox::Tensor src = ox::arange(0, n, 1, {.dtype = ox::kF32});
    std::vector<double> up, down;
    std::vector<int8_t> wrapped;
    for (int64_t i = 0; i < n; ++i) {
      up.push_back(double(i));
      down.push_back(double(n - 1 - i));
      wrapped.push_back(static_cast<int8_t>(((i + 128) % 256) - 128));  // i mod 256, signed
    }
    EXPECT_EQ(src.to(ox::kF64).to_vector<double>(), up);
    EXPECT_EQ(src.flip({0}).to(ox::kF64).to_vector<double>(), down);
    EXPECT_EQ(src.flip({0}).contiguous().to_vector<double>(), down);
    EXPECT_EQ(src.to(ox::kF16).to_vector<double>(), up);  // exact: all below 2048
    EXPECT_EQ(src.to(ox::kBF16).to(ox::kF32).to_vector<double>().back(),
              double(expected_conversion(LD(n - 1), ox::kF32, ox::kBF16)));
    EXPECT_EQ(ox::arange(n).to(ox::kI8).to_vector<int8_t>(), wrapped);
    ox::Tensor wide = ox::full({2 * n + 1}, -1.0, ox::kF64);
    wide.slice(0, 1, INT64_MAX, 2).copy_(src);
    const std::vector<double> w = wide.to_vector<double>();
    for (int64_t i = 0; i < 2 * n + 1; ++i)
      EXPECT_EQ(w[i], i % 2 == 1 ? double((i - 1) / 2) : -1.0) << i;
    ox::Tensor same(ox::empty({n}));
    same.copy_(src);  // same dtype, contiguous: a plain byte copy
    EXPECT_EQ(same.to_vector<double>(), up);
  }
}

}  // namespace
