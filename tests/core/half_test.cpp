// f16 and bf16 conversions, exhaustively over all 65,536 bit patterns of each, and float->16-bit
// rounding at every midpoint between neighbouring values and one float step either side of it.
// References: an IEEE decode written out in double, a round-to-nearest-even quantiser in double,
// and (for f16) the compiler's own _Float16 conversion.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "test_util.h"

#if defined(__FLT16_MANT_DIG__)
#define OX_TEST_HAVE_FLOAT16 1
#else
#define OX_TEST_HAVE_FLOAT16 0
#endif

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Collects mismatches of a long sweep and reports the first few, so one bug is one failure.
class Mismatches {
 public:
  void add(float x, uint32_t got, uint32_t want) {
    if (count_++ < 10) {
      char line[128];
      std::snprintf(line, sizeof line, "  input %a (bits 0x%08x): got 0x%04x, want 0x%04x\n",
                    static_cast<double>(x), std::bit_cast<uint32_t>(x), got, want);
      first_ += line;
    }
  }
  int count() const { return count_; }
  const std::string& first() const { return first_; }

 private:
  int count_ = 0;
  std::string first_;
};

uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }

// ---- f16 references --------------------------------------------------------------------------

bool half_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }

// IEEE binary16: sign * 2^(e-15) * (1 + m/1024); subnormals sign * 2^-14 * (m/1024).
double decode_half(uint16_t h) {
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 31) return m == 0 ? sign * kInf : std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(m / 1024.0, -14);
  return sign * std::ldexp(1.0 + m / 1024.0, e - 15);
}

// Encodes a double that is exactly a finite f16 value (or beyond 65504: infinity).
uint16_t encode_half(bool negative, double a) {
  const uint16_t sign = negative ? 0x8000u : 0u;
  if (a > 65504.0) return sign | 0x7c00u;
  if (a < 0x1p-14) return static_cast<uint16_t>(sign | static_cast<uint16_t>(a / 0x1p-24));
  int k = 0;
  const double f = std::frexp(a, &k);  // a = f * 2^k, f in [0.5, 1)
  const int e = k - 1 + 15;
  const int m = static_cast<int>((2.0 * f - 1.0) * 1024.0);
  return static_cast<uint16_t>(sign | (e << 10) | m);
}

// float -> f16 by the book: scale to units of the f16 spacing at that magnitude, round to the
// nearest integer with ties to even (nearbyint in the default mode), scale back.
uint16_t reference_float_to_half(float x) {
  const bool negative = std::signbit(x);
  const double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) return negative ? 0xfc00u : 0x7c00u;
  double quantum = 0x1p-24;  // the subnormal spacing
  if (a >= 0x1p-14) {
    int k = 0;
    std::frexp(a, &k);
    quantum = std::ldexp(1.0, k - 11);  // 11 significant bits
  }
  return encode_half(negative, std::nearbyint(a / quantum) * quantum);
}

#if OX_TEST_HAVE_FLOAT16
uint16_t compiler_float_to_half(float x) {
  const volatile float in = x;  // keep the conversion at run time
  return std::bit_cast<uint16_t>(static_cast<_Float16>(in));
}
#endif

// ---- bf16 references -------------------------------------------------------------------------

bool bf16_is_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

// bf16: 8 exponent bits (bias 127), 7 mantissa bits.
double decode_bf16(uint16_t b) {
  const double sign = (b & 0x8000u) ? -1.0 : 1.0;
  const int e = (b >> 7) & 0xff;
  const int m = b & 0x7f;
  if (e == 255) return m == 0 ? sign * kInf : std::numeric_limits<double>::quiet_NaN();
  if (e == 0) return sign * std::ldexp(m / 128.0, -126);
  return sign * std::ldexp(1.0 + m / 128.0, e - 127);
}

constexpr double kMaxBF16 = 0x1.fep127;  // 0x7f7f

uint16_t reference_float_to_bf16(float x) {
  const bool negative = std::signbit(x);
  const double a = std::fabs(static_cast<double>(x));
  const uint16_t sign = negative ? 0x8000u : 0u;
  if (std::isinf(a)) return sign | 0x7f80u;
  double quantum = 0x1p-133;  // the subnormal spacing (2^-126 / 128)
  if (a >= 0x1p-126) {
    int k = 0;
    std::frexp(a, &k);
    quantum = std::ldexp(1.0, k - 8);  // 8 significant bits
  }
  const double r = std::nearbyint(a / quantum) * quantum;
  if (r > kMaxBF16) return sign | 0x7f80u;
  // r is a bf16 value, hence a float whose low 16 bits are zero.
  return static_cast<uint16_t>(sign | (float_bits(static_cast<float>(r)) >> 16));
}

// The floats to try for each pair of neighbouring positive values lo < hi (hi may be the
// first value past the largest finite one): lo itself, the midpoint, and one float step
// either side of each. `expected` is filled with the answer a hand argument gives.
struct Probe {
  float x;
  uint16_t want;
};

void add_pair_probes(std::vector<Probe>& probes, uint16_t lo_bits, double lo, double hi) {
  const double mid_d = (lo + hi) / 2;
  const float mid = static_cast<float>(mid_d);
  ASSERT_EQ(static_cast<double>(mid), mid_d) << "midpoint not exact in float";
  const float lo_f = static_cast<float>(lo);
  const uint16_t hi_bits = static_cast<uint16_t>(lo_bits + 1);
  const uint16_t even = (lo_bits & 1u) ? hi_bits : lo_bits;
  probes.push_back({lo_f, lo_bits});
  probes.push_back({std::nextafter(lo_f, std::numeric_limits<float>::infinity()), lo_bits});
  probes.push_back({mid, even});
  probes.push_back({std::nextafter(mid, 0.0f), lo_bits});
  probes.push_back({std::nextafter(mid, std::numeric_limits<float>::infinity()), hi_bits});
}

// Every positive finite f16 value paired with the next one (65504 with 65536, the first value
// the exponent range cannot hold, so that the rounding to infinity is covered too), mirrored.
std::vector<Probe> half_probes() {
  std::vector<Probe> probes;
  for (uint32_t h = 0; h <= 0x7bffu; ++h) {
    const double lo = decode_half(static_cast<uint16_t>(h));
    const double hi = h == 0x7bffu ? 65536.0 : decode_half(static_cast<uint16_t>(h + 1));
    add_pair_probes(probes, static_cast<uint16_t>(h), lo, hi);
  }
  const size_t n = probes.size();
  for (size_t i = 0; i < n; ++i)
    probes.push_back({-probes[i].x, static_cast<uint16_t>(probes[i].want | 0x8000u)});
  return probes;
}

std::vector<Probe> bf16_probes() {
  std::vector<Probe> probes;
  for (uint32_t b = 0; b <= 0x7f7fu; ++b) {
    const double lo = decode_bf16(static_cast<uint16_t>(b));
    const double hi = b == 0x7f7fu ? 0x1p128 : decode_bf16(static_cast<uint16_t>(b + 1));
    add_pair_probes(probes, static_cast<uint16_t>(b), lo, hi);
  }
  const size_t n = probes.size();
  for (size_t i = 0; i < n; ++i)
    probes.push_back({-probes[i].x, static_cast<uint16_t>(probes[i].want | 0x8000u)});
  return probes;
}

// ---- Half: decoding --------------------------------------------------------------------------

TEST(Half, DecodesAllPatterns) {
  Mismatches bad;
  int nans = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    const float got = ox::Half::from_bits(h);
    if (half_is_nan(h)) {
      ++nans;
      if (!std::isnan(got) || std::signbit(got) != bool(h & 0x8000u))
        bad.add(got, h, 0x7e00u | (h & 0x8000u));
      continue;
    }
    const float want = static_cast<float>(decode_half(h));
    if (float_bits(got) != float_bits(want)) bad.add(got, float_bits(got), float_bits(want));
  }
  EXPECT_EQ(nans, 2 * 1023);
  EXPECT_EQ(bad.count(), 0) << bad.first();
}

TEST(Half, DecodesLandmarks) {
  EXPECT_EQ(float(ox::Half::from_bits(0x3c00)), 1.0f);
  EXPECT_EQ(float(ox::Half::from_bits(0xc000)), -2.0f);
  EXPECT_EQ(float(ox::Half::from_bits(0x7bff)), 65504.0f);
  EXPECT_EQ(float(ox::Half::from_bits(0x0400)), 0x1p-14f);
  EXPECT_EQ(float(ox::Half::from_bits(0x0001)), 0x1p-24f);
  EXPECT_EQ(float(ox::Half::from_bits(0x03ff)), 1023 * 0x1p-24f);
  EXPECT_EQ(float(ox::Half::from_bits(0x3555)), 0x1.554p-2f);
  EXPECT_EQ(float(ox::Half::from_bits(0x7c00)), std::numeric_limits<float>::infinity());
  EXPECT_EQ(float(ox::Half::from_bits(0xfc00)), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit(float(ox::Half::from_bits(0x8000))));
  EXPECT_EQ(float(ox::Half::from_bits(0x8000)), 0.0f);
  EXPECT_TRUE(std::isnan(float(ox::Half::from_bits(0x7e00))));
  EXPECT_TRUE(std::isnan(float(ox::Half::from_bits(0x7c01))));  // signalling pattern too
}

TEST(Half, ConstexprConversions) {
  static_assert(ox::Half(1.0f).bits == 0x3c00);
  static_assert(ox::Half(-2.0f).bits == 0xc000);
  static_assert(float(ox::Half::from_bits(0x3800)) == 0.5f);
  static_assert(ox::BFloat16(1.0f).bits == 0x3f80);
  static_assert(float(ox::BFloat16::from_bits(0xc040)) == -3.0f);
  static_assert(ox::Half().bits == 0 && ox::BFloat16().bits == 0);
  SUCCEED();
}

// ---- Half: encoding --------------------------------------------------------------------------

TEST(Half, RoundTripsEveryNonNaNPattern) {
  Mismatches bad;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    if (half_is_nan(h)) continue;
    const float f = ox::Half::from_bits(h);
    const uint16_t back = ox::Half(f).bits;
    if (back != h) bad.add(f, back, h);
  }
  EXPECT_EQ(bad.count(), 0) << bad.first();
}

TEST(Half, NaNStaysNaNWithItsSign) {
  Mismatches bad;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    if (!half_is_nan(h)) continue;
    const uint16_t back = ox::Half(float(ox::Half::from_bits(h))).bits;
    if (!half_is_nan(back) || (back & 0x8000u) != (h & 0x8000u)) bad.add(0, back, h);
  }
  // Float NaNs whose payload sits only in bits a plain truncation would drop.
  for (uint32_t bits : {0x7f800001u, 0x7fc00000u, 0x7f801fffu, 0x7fffffffu, 0xff800001u,
                        0xffc00000u, 0xffffffffu}) {
    const float nan = std::bit_cast<float>(bits);
    const uint16_t got = ox::Half(nan).bits;
    const uint16_t sign = (bits & 0x80000000u) ? 0x8000u : 0u;
    if (!half_is_nan(got) || (got & 0x8000u) != sign) bad.add(nan, got, 0x7e00u | sign);
  }
  EXPECT_EQ(bad.count(), 0) << bad.first();
}

TEST(Half, RoundsValuesMidpointsAndNeighboursToNearestEven) {
  const std::vector<Probe> probes = half_probes();
  ASSERT_EQ(probes.size(), 2u * 5u * 0x7c00u);
  Mismatches vs_hand, vs_reference;
  for (const Probe& p : probes) {
    const uint16_t got = ox::Half(p.x).bits;
    if (got != p.want) vs_hand.add(p.x, got, p.want);
    const uint16_t ref = reference_float_to_half(p.x);
    if (got != ref) vs_reference.add(p.x, got, ref);
  }
  EXPECT_EQ(vs_hand.count(), 0) << vs_hand.first();
  EXPECT_EQ(vs_reference.count(), 0) << vs_reference.first();
}

TEST(Half, MatchesCompilerFloat16OnAllProbes) {
#if OX_TEST_HAVE_FLOAT16
  Mismatches bad;
  for (const Probe& p : half_probes()) {
    const uint16_t got = ox::Half(p.x).bits;
    const uint16_t want = compiler_float_to_half(p.x);
    if (got != want) bad.add(p.x, got, want);
  }
  // The hand answers and _Float16 must agree too, or the probes themselves are wrong.
  int hand_disagrees = 0;
  for (const Probe& p : half_probes()) hand_disagrees += compiler_float_to_half(p.x) != p.want;
  EXPECT_EQ(hand_disagrees, 0);
  EXPECT_EQ(bad.count(), 0) << bad.first();
#else
  GTEST_SKIP() << "this compiler has no _Float16";
#endif
}

TEST(Half, MatchesReferencesAcrossAllFloatMagnitudes) {
  // Every 251st float bit pattern: all exponents, float subnormals, huge values, NaNs.
  Mismatches vs_reference, vs_compiler;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const uint16_t got = ox::Half(x).bits;
    if (std::isnan(x)) {
      if (!half_is_nan(got)) vs_reference.add(x, got, 0x7e00u);
      continue;
    }
    const uint16_t ref = reference_float_to_half(x);
    if (got != ref) vs_reference.add(x, got, ref);
#if OX_TEST_HAVE_FLOAT16
    const uint16_t cc = compiler_float_to_half(x);
    if (got != cc) vs_compiler.add(x, got, cc);
#endif
  }
  EXPECT_EQ(vs_reference.count(), 0) << vs_reference.first();
  EXPECT_EQ(vs_compiler.count(), 0) << vs_compiler.first();
}

TEST(Half, OverflowsToInfinityFrom65520) {
  EXPECT_EQ(ox::Half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(ox::Half(65519.99f).bits, 0x7bff);
  EXPECT_EQ(ox::Half(std::nextafter(65520.0f, 0.0f)).bits, 0x7bff);
  EXPECT_EQ(ox::Half(65520.0f).bits, 0x7c00);  // the tie goes to the even (infinite) side
  EXPECT_EQ(ox::Half(65536.0f).bits, 0x7c00);
  EXPECT_EQ(ox::Half(1e20f).bits, 0x7c00);
  EXPECT_EQ(ox::Half(FLT_MAX).bits, 0x7c00);
  EXPECT_EQ(ox::Half(std::numeric_limits<float>::infinity()).bits, 0x7c00);
  EXPECT_EQ(ox::Half(-65504.0f).bits, 0xfbff);
  EXPECT_EQ(ox::Half(-65519.99f).bits, 0xfbff);
  EXPECT_EQ(ox::Half(-65520.0f).bits, 0xfc00);
  EXPECT_EQ(ox::Half(-FLT_MAX).bits, 0xfc00);
  EXPECT_EQ(ox::Half(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
}

TEST(Half, UnderflowAndSubnormalRounding) {
  EXPECT_EQ(ox::Half(0.0f).bits, 0x0000);
  EXPECT_EQ(ox::Half(-0.0f).bits, 0x8000);
  EXPECT_EQ(ox::Half(0x1p-25f).bits, 0x0000);  // half the smallest subnormal: tie to 0
  EXPECT_EQ(ox::Half(-0x1p-25f).bits, 0x8000);
  EXPECT_EQ(ox::Half(std::nextafter(0x1p-25f, 1.0f)).bits, 0x0001);
  EXPECT_EQ(ox::Half(0x1p-26f).bits, 0x0000);
  EXPECT_EQ(ox::Half(FLT_TRUE_MIN).bits, 0x0000);
  EXPECT_EQ(ox::Half(-FLT_TRUE_MIN).bits, 0x8000);
  EXPECT_EQ(ox::Half(FLT_MIN).bits, 0x0000);
  EXPECT_EQ(ox::Half(3 * 0x1p-25f).bits, 0x0002);     // 1.5 ulp: tie to even (2)
  EXPECT_EQ(ox::Half(5 * 0x1p-25f).bits, 0x0002);     // 2.5 ulp: tie to even (2)
  EXPECT_EQ(ox::Half(2047 * 0x1p-25f).bits, 0x0400);  // 1023.5 ulp: carries into the normals
  EXPECT_EQ(ox::Half(0x1p-14f).bits, 0x0400);
  EXPECT_EQ(ox::Half(std::nextafter(0x1p-14f, 0.0f)).bits, 0x0400);
}

TEST(Half, NormalRoundingLandmarks) {
  EXPECT_EQ(ox::Half(1.0f + 0x1p-11f).bits, 0x3c00);      // tie, 1.0 is even
  EXPECT_EQ(ox::Half(1.0f + 3 * 0x1p-11f).bits, 0x3c02);  // tie, goes up to even
  EXPECT_EQ(ox::Half(std::nextafter(1.0f + 0x1p-11f, 2.0f)).bits, 0x3c01);
  EXPECT_EQ(ox::Half(2.0f - 0x1p-11f).bits, 0x4000);  // tie: 0x3fff is odd, so up to 2.0
  EXPECT_EQ(ox::Half(std::nextafter(2.0f - 0x1p-11f, 0.0f)).bits, 0x3fff);  // 2 - 2^-10
  EXPECT_EQ(ox::Half(0.1f).bits, 0x2e66);
  EXPECT_EQ(ox::Half(-3.14159265f).bits, 0xc248);
}

// ---- BFloat16 --------------------------------------------------------------------------------

TEST(BFloat16, DecodesAllPatternsAsTheHighHalfOfAFloat) {
  Mismatches bad;
  int nans = 0;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    const float got = ox::BFloat16::from_bits(b);
    if (float_bits(got) != i << 16) bad.add(got, float_bits(got), i << 16);
    if (bf16_is_nan(b)) {
      ++nans;
      if (!std::isnan(got)) bad.add(got, float_bits(got), i << 16);
      continue;
    }
    const float want = static_cast<float>(decode_bf16(b));
    if (float_bits(got) != float_bits(want)) bad.add(got, float_bits(got), float_bits(want));
  }
  EXPECT_EQ(nans, 2 * 127);
  EXPECT_EQ(bad.count(), 0) << bad.first();
}

TEST(BFloat16, RoundTripsEveryNonNaNPattern) {
  Mismatches bad;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    if (bf16_is_nan(b)) continue;
    const float f = ox::BFloat16::from_bits(b);
    const uint16_t back = ox::BFloat16(f).bits;
    if (back != b) bad.add(f, back, b);
  }
  EXPECT_EQ(bad.count(), 0) << bad.first();
}

TEST(BFloat16, NaNStaysQuietNaNWithItsSign) {
  Mismatches bad;
  for (uint32_t i = 0; i < 65536; ++i) {
    const uint16_t b = static_cast<uint16_t>(i);
    if (!bf16_is_nan(b)) continue;
    const uint16_t back = ox::BFloat16(float(ox::BFloat16::from_bits(b))).bits;
    if (!bf16_is_nan(back) || !(back & 0x40u) || (back & 0x8000u) != (b & 0x8000u))
      bad.add(0, back, b | 0x40u);
  }
  // Payload only in the low 16 bits: truncating would give infinity, rounding 0x7fffffff
  // would carry into the sign bit.
  for (uint32_t bits : {0x7f800001u, 0x7f80ffffu, 0x7fc00000u, 0x7fffffffu, 0xff800001u,
                        0xffc00000u, 0xffffffffu}) {
    const float nan = std::bit_cast<float>(bits);
    const uint16_t got = ox::BFloat16(nan).bits;
    const uint16_t sign = (bits & 0x80000000u) ? 0x8000u : 0u;
    if (!bf16_is_nan(got) || !(got & 0x40u) || (got & 0x8000u) != sign)
      bad.add(nan, got, 0x7fc0u | sign);
  }
  EXPECT_EQ(bad.count(), 0) << bad.first();
}

TEST(BFloat16, RoundsValuesMidpointsAndNeighboursToNearestEven) {
  const std::vector<Probe> probes = bf16_probes();
  ASSERT_EQ(probes.size(), 2u * 5u * 0x7f80u);
  Mismatches vs_hand, vs_reference, hand_vs_reference;
  for (const Probe& p : probes) {
    const uint16_t got = ox::BFloat16(p.x).bits;
    if (got != p.want) vs_hand.add(p.x, got, p.want);
    const uint16_t ref = reference_float_to_bf16(p.x);
    if (got != ref) vs_reference.add(p.x, got, ref);
    if (ref != p.want) hand_vs_reference.add(p.x, ref, p.want);  // checks the references
  }
  EXPECT_EQ(hand_vs_reference.count(), 0) << hand_vs_reference.first();
  EXPECT_EQ(vs_hand.count(), 0) << vs_hand.first();
  EXPECT_EQ(vs_reference.count(), 0) << vs_reference.first();
}

TEST(BFloat16, MatchesReferenceAcrossAllFloatMagnitudes) {
  Mismatches bad;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 251) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const uint16_t got = ox::BFloat16(x).bits;
    if (std::isnan(x)) {
      if (!bf16_is_nan(got)) bad.add(x, got, 0x7fc0u);
      continue;
    }
    const uint16_t ref = reference_float_to_bf16(x);
    if (got != ref) bad.add(x, got, ref);
  }
  EXPECT_EQ(bad.count(), 0) << bad.first();
}

TEST(BFloat16, OverflowsToInfinity) {
  EXPECT_EQ(ox::BFloat16(0x1.fep127f).bits, 0x7f7f);
  EXPECT_EQ(ox::BFloat16(std::bit_cast<float>(0x7f7f7fffu)).bits, 0x7f7f);
  EXPECT_EQ(ox::BFloat16(std::bit_cast<float>(0x7f7f8000u)).bits, 0x7f80);  // tie, odd -> up
  EXPECT_EQ(ox::BFloat16(FLT_MAX).bits, 0x7f80);
  EXPECT_EQ(ox::BFloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  EXPECT_EQ(ox::BFloat16(-FLT_MAX).bits, 0xff80);
  EXPECT_EQ(ox::BFloat16(-std::numeric_limits<float>::infinity()).bits, 0xff80);
  EXPECT_EQ(ox::BFloat16(std::bit_cast<float>(0xff7f7fffu)).bits, 0xff7f);
}

TEST(BFloat16, RoundingLandmarks) {
  EXPECT_EQ(ox::BFloat16(0.0f).bits, 0x0000);
  EXPECT_EQ(ox::BFloat16(-0.0f).bits, 0x8000);
  EXPECT_EQ(ox::BFloat16(1.0f + 0x1p-8f).bits, 0x3f80);      // tie, 1.0 is even
  EXPECT_EQ(ox::BFloat16(1.0f + 3 * 0x1p-8f).bits, 0x3f82);  // tie, up to even
  EXPECT_EQ(ox::BFloat16(std::nextafter(1.0f + 0x1p-8f, 2.0f)).bits, 0x3f81);
  EXPECT_EQ(ox::BFloat16(std::bit_cast<float>(0x3f7fffffu)).bits, 0x3f80);  // carries to 1.0
  EXPECT_EQ(ox::BFloat16(3.14159265f).bits, 0x4049);
  EXPECT_EQ(ox::BFloat16(FLT_TRUE_MIN).bits, 0x0000);   // far below the bf16 subnormal spacing
  EXPECT_EQ(ox::BFloat16(0x1p-134f).bits, 0x0000);      // half of 2^-133: tie to 0
  EXPECT_EQ(ox::BFloat16(3 * 0x1p-134f).bits, 0x0002);  // 1.5 subnormal steps: tie to 2
}

}  // namespace
