// Float to integer conversion of NaN, infinities and out-of-range values gives what PyTorch
// gives on x86 (CVTTSS2SI/CVTTSD2SI): truncation toward zero, else the minimum of the
// instruction's width (64-bit for i64 and u8, 32-bit for i32/i16/i8) cut to the destination's
// low bits. The expected values below are written out by hand from that rule.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "test_util.h"

namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();

const std::vector<double> kInputs = {kNan,  kInf,   -kInf, 1e19, -1e19, 9.2e18, -9.2e18, 3e9, -3e9,
                                     40000, -40000, 300.7, -1.5, 200,   -2.5,   0.0,     -0.0};

template <class T>
std::vector<T> converted(ox::DType from, ox::DType to) {
  return ox::tensor(kInputs).to(from).to(to).to_vector<T>();
}

TEST(FloatToInt, I64GivesInt64MinForNanInfAndOutOfRange) {
  const std::vector<int64_t> expected = {kI64Min,
                                         kI64Min,
                                         kI64Min,
                                         kI64Min,
                                         kI64Min,
                                         9200000000000000000,
                                         -9200000000000000000,
                                         3000000000,
                                         -3000000000,
                                         40000,
                                         -40000,
                                         300,
                                         -1,
                                         200,
                                         -2,
                                         0,
                                         0};
  EXPECT_EQ(converted<int64_t>(ox::kF64, ox::kI64), expected);
  // From f32 the finite values are first rounded to f32: 9.2e18 becomes 9200000267938955264.
  std::vector<int64_t> from_f32 = expected;
  from_f32[5] = 9200000267938955264;
  from_f32[6] = -9200000267938955264;
  EXPECT_EQ(converted<int64_t>(ox::kF32, ox::kI64), from_f32);
  // 16-bit floats: NaN and infinities (1e19 and 3e9 overflow f16 to inf).
  for (ox::DType half : {ox::kF16, ox::kBF16}) {
    const std::vector<int64_t> v =
        ox::tensor({kNan, kInf, -kInf}).to(half).to(ox::kI64).to_vector<int64_t>();
    EXPECT_EQ(v, (std::vector<int64_t>{kI64Min, kI64Min, kI64Min}));
  }
}

TEST(FloatToInt, NarrowerTypesGoThroughTheirInstructionWidth) {
  const std::vector<int32_t> i32 = {kI32Min, kI32Min, kI32Min, kI32Min, kI32Min, kI32Min,
                                    kI32Min, kI32Min, kI32Min, 40000,   -40000,  300,
                                    -1,      200,     -2,      0,       0};
  EXPECT_EQ(converted<int32_t>(ox::kF64, ox::kI32), i32);
  // i16 and i8: the i32 result's low bits (INT32_MIN's are 0; 40000 wraps to -25536).
  const std::vector<int16_t> i16 = {0,      0,     0,   0,  0,   0,  0, 0, 0,
                                    -25536, 25536, 300, -1, 200, -2, 0, 0};
  EXPECT_EQ(converted<int16_t>(ox::kF64, ox::kI16), i16);
  const std::vector<int8_t> i8 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 64, -64, 44, -1, -56, -2, 0, 0};
  EXPECT_EQ(converted<int8_t>(ox::kF64, ox::kI8), i8);
  // u8: the i64 result's low byte (3e9 = 0xB2D05E00 -> 0x00; 9.2e18 = 8984375e9 * 1024 -> 0x00).
  const std::vector<uint8_t> u8 = {0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 192, 44, 255, 200, 254, 0, 0};
  EXPECT_EQ(converted<uint8_t>(ox::kF64, ox::kU8), u8);
}

TEST(FloatToInt, EveryLayoutAndThreadCountGivesTheSameValues) {
  // A long tensor of the special values in a pattern, converted contiguous, strided and
  // flipped, at 1 and 2 threads: each element's value depends on that element alone.
  std::vector<double> values;
  for (int i = 0; i < 5003; ++i) values.push_back(kInputs[(i * 7) % kInputs.size()]);
  const ox::Tensor x = ox::tensor(values);
  std::vector<int64_t> expected;
  for (double v : values) {
    const double t = std::trunc(v);
    expected.push_back(std::isnan(v) || t < -0x1p63 || t >= 0x1p63 ? kI64Min
                                                                   : static_cast<int64_t>(t));
  }
  const int saved = ox::get_num_threads();
  for (int threads : {1, 2}) {
    ox::set_num_threads(threads);
    EXPECT_EQ(x.to(ox::kI64).to_vector<int64_t>(), expected);
    EXPECT_EQ(x.to(ox::kF32).to(ox::kI64).to_vector<int64_t>(),
              x.to(ox::kF32).to(ox::kF64).to(ox::kI64).to_vector<int64_t>());
    const std::vector<int64_t> flipped = x.flip({0}).to(ox::kI64).flip({0}).to_vector<int64_t>();
    EXPECT_EQ(flipped, expected);
    const std::vector<int64_t> strided = x.slice(0, 1, 5003, 3).to(ox::kI64).to_vector<int64_t>();
    for (size_t i = 0; i < strided.size(); ++i) ASSERT_EQ(strided[i], expected[1 + 3 * i]) << i;
  }
  ox::set_num_threads(saved);
}

}  // namespace
