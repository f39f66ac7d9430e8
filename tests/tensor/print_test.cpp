// Printing, PyTorch style. Every expected string is written out by hand from PyTorch's rules
// (torch/_tensor_str.py): one format per tensor chosen from its nonzero finite values —
// integer mode "1.", fixed "%.4f", or scientific "%.4e" when max/min > 1000, max > 1e8 or (not
// integer mode) min < 1e-4 — padded to the widest of those values; 80-column lines after an
// indent of len("tensor("); more than 1000 elements summarised to 3 at each edge with "...";
// the dtype named unless it is f32, i64 or bool (only f32 when the tensor is empty).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "test_util.h"

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Print, Integers) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::arange(6).reshape({2, 3}).str(), "tensor([[0, 1, 2],\n        [3, 4, 5]])");
  EXPECT_EQ(ox::tensor({int64_t{-1}, int64_t{10}}).str(), "tensor([-1, 10])");
  EXPECT_EQ(ox::tensor({int64_t{7}}).str(), "tensor([7])");
  EXPECT_EQ(ox::arange(12).reshape({2, 2, 3}).str(),
            "tensor([[[ 0,  1,  2],\n"
            "         [ 3,  4,  5]],\n"
            "\n"
            "        [[ 6,  7,  8],\n"
            "         [ 9, 10, 11]]])");
  EXPECT_EQ(ox::arange(4).reshape({1, 1, 2, 2}).str(),
            "tensor([[[[0, 1],\n"
            "          [2, 3]]]])");
}

TEST(Print, IntegerDTypesAreNamed) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::tensor(std::vector<int32_t>{1, 2}).str(), "tensor([1, 2], dtype=i32)");
  EXPECT_EQ(ox::tensor({int16_t{-300}, int16_t{4}}).str(), "tensor([-300,    4], dtype=i16)");
  EXPECT_EQ(ox::tensor({int8_t{-128}}).str(), "tensor([-128], dtype=i8)");
  EXPECT_EQ(ox::tensor({uint8_t{0}, uint8_t{255}}).str(), "tensor([  0, 255], dtype=u8)");
}

TEST(Print, ExtremeInt64ValuesAreExact) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  // Neither fits a double exactly; printing must not go through one.
  EXPECT_EQ(
      ox::tensor({std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}).str(),
      "tensor([ 9223372036854775807, -9223372036854775808])");
  EXPECT_EQ(ox::tensor({int64_t{9007199254740993}}).str(), "tensor([9007199254740993])");
}

TEST(Print, Bools) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::tensor({true, false}).str(), "tensor([ True, False])");
  EXPECT_EQ(ox::tensor({true, true}).str(), "tensor([True, True])");
  EXPECT_EQ(ox::scalar_tensor(false).str(), "tensor(False)");
}

TEST(Print, FixedPointFloats) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::tensor({1.5f, 2.f}).str(), "tensor([1.5000, 2.0000])");
  EXPECT_EQ(ox::tensor({-1.5f, 2.f, 30.25f}).str(), "tensor([-1.5000,  2.0000, 30.2500])");
  EXPECT_EQ(ox::tensor({0.f, 1.5f}).str(), "tensor([0.0000, 1.5000])");
  EXPECT_EQ(ox::tensor({{0.5f, -0.25f}, {100.125f, 3.f}}).str(),
            "tensor([[  0.5000,  -0.2500],\n        [100.1250,   3.0000]])");
  EXPECT_EQ(ox::tensor({0.1}, {.dtype = ox::kF64}).str(), "tensor([0.1000], dtype=f64)");
}

TEST(Print, IntegerValuedFloats) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::tensor({1.f, 2.f}).str(), "tensor([1., 2.])");
  EXPECT_EQ(ox::tensor({0.f, -3.f, 100.f}).str(), "tensor([  0.,  -3., 100.])");
  EXPECT_EQ(ox::tensor({1.f, 1000.f}).str(), "tensor([   1., 1000.])");  // ratio 1000: not more
  EXPECT_EQ(ox::zeros({3}).str(), "tensor([0., 0., 0.])");
  EXPECT_EQ(ox::ones({2, 2}).str(), "tensor([[1., 1.],\n        [1., 1.]])");
}

TEST(Print, ScientificWhenTheRangeIsWide) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::tensor({1e-5f, 1.f}).str(), "tensor([1.0000e-05, 1.0000e+00])");
  EXPECT_EQ(ox::tensor({-1e-5f, 1e5f}).str(), "tensor([-1.0000e-05,  1.0000e+05])");
  EXPECT_EQ(ox::tensor({5e-5f}).str(), "tensor([5.0000e-05])");                     // min < 1e-4
  EXPECT_EQ(ox::tensor({1.f, 1001.f}).str(), "tensor([1.0000e+00, 1.0010e+03])");   // ratio > 1000
  EXPECT_EQ(ox::tensor({1.f, 10000.f}).str(), "tensor([1.0000e+00, 1.0000e+04])");  // integers too
  EXPECT_EQ(ox::tensor({1e9f, 2e9f}).str(), "tensor([1.0000e+09, 2.0000e+09])");    // max > 1e8
  EXPECT_EQ(ox::tensor({0.f, 1e-5f, 1.f}).str(),
            "tensor([0.0000e+00, 1.0000e-05, 1.0000e+00])");  // zero takes the same format
  EXPECT_EQ(ox::tensor({1e-100, 1.0}, {.dtype = ox::kF64}).str(),
            "tensor([1.0000e-100,  1.0000e+00], dtype=f64)");
}

TEST(Print, NanAndInf) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::tensor({1.5f, kNan, kInf, -kInf}).str(),
            "tensor([1.5000,    nan,    inf,   -inf])");
  // The width comes from the finite values only; wider nan/inf are not padded.
  EXPECT_EQ(ox::tensor({1.f, kNan}).str(), "tensor([1., nan])");
  EXPECT_EQ(ox::tensor({kNan, 2.f, -kInf}).str(), "tensor([nan, 2., -inf])");
  EXPECT_EQ(ox::tensor({kNan, kNan}).str(), "tensor([nan, nan])");
  EXPECT_EQ(ox::tensor({0.f, kInf}).str(), "tensor([0., inf])");
  EXPECT_EQ(ox::tensor({1e-5f, kNan}).str(), "tensor([1.0000e-05,        nan])");
  EXPECT_EQ(ox::tensor({1.f, kNan}).to(ox::kF16).str(), "tensor([1., nan], dtype=f16)");
  EXPECT_EQ(ox::scalar_tensor(double(kNan)).str(), "tensor(nan)");
}

TEST(Print, DTypeSuffix) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::tensor({1.0, 2.5}, {.dtype = ox::kF64}).str(),
            "tensor([1.0000, 2.5000], dtype=f64)");
  EXPECT_EQ(ox::tensor({1.f, 2.f}).to(ox::kF16).str(), "tensor([1., 2.], dtype=f16)");
  EXPECT_EQ(ox::tensor({1.f, 0.5f}).to(ox::kBF16).str(), "tensor([1.0000, 0.5000], dtype=bf16)");
  EXPECT_EQ(ox::tensor({1.f, 2.f}).str(), "tensor([1., 2.])");
  EXPECT_EQ(ox::tensor({int64_t{1}}).str(), "tensor([1])");
  EXPECT_EQ(ox::tensor({true}).str(), "tensor([True])");
}

TEST(Print, ZeroDim) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::scalar_tensor(3).str(), "tensor(3)");
  EXPECT_EQ(ox::scalar_tensor(-3).str(), "tensor(-3)");
  EXPECT_EQ(ox::scalar_tensor(2.5).str(), "tensor(2.5000)");
  EXPECT_EQ(ox::scalar_tensor(2.0).str(), "tensor(2.)");
  EXPECT_EQ(ox::scalar_tensor(0.0).str(), "tensor(0.)");
  EXPECT_EQ(ox::scalar_tensor(1e-7).str(), "tensor(1.0000e-07)");
  EXPECT_EQ(ox::scalar_tensor(true).str(), "tensor(True)");
  EXPECT_EQ(ox::scalar_tensor(0.5, {.dtype = ox::kF64}).str(), "tensor(0.5000, dtype=f64)");
  EXPECT_EQ(ox::scalar_tensor(7, {.dtype = ox::kU8}).str(), "tensor(7, dtype=u8)");
}

TEST(Print, Empty) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::zeros({0}).str(), "tensor([])");
  EXPECT_EQ(ox::zeros({0, 3}).str(), "tensor([], size=[0, 3])");
  EXPECT_EQ(ox::zeros({0}, ox::kF64).str(), "tensor([], dtype=f64)");
  // With no values to show, i64 and bool are named too.
  EXPECT_EQ(ox::zeros({0}, ox::kI64).str(), "tensor([], dtype=i64)");
  EXPECT_EQ(ox::zeros({0}, ox::kBool).str(), "tensor([], dtype=bool)");
  EXPECT_EQ(ox::zeros({1, 0, 3}, ox::kI32).str(), "tensor([], size=[1, 0, 3], dtype=i32)");
}

TEST(Print, NonContiguousLayouts) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  const ox::Tensor a = ox::arange(6).reshape({2, 3});
  EXPECT_EQ(a.t().str(), "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
  EXPECT_EQ(a.flip({1}).str(), "tensor([[2, 1, 0],\n        [5, 4, 3]])");
  EXPECT_EQ(a.select(1, 2).str(), "tensor([2, 5])");
  EXPECT_EQ(a.select(0, 0).unsqueeze(0).expand({2, 3}).str(),
            "tensor([[0, 1, 2],\n        [0, 1, 2]])");
  EXPECT_EQ(a.narrow(1, 1, 2).str(), "tensor([[1, 2],\n        [4, 5]])");
  EXPECT_EQ(a.select(0, 1).select(0, 2).str(), "tensor(5)");
}

TEST(Print, LongRowsWrapAtEightyColumns) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  // Width 2 + ", " = 4 per item; (80 - 7) / 4 = 18 per line.
  EXPECT_EQ(ox::arange(30).str(),
            "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "        18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])");
  // Width 6 + 2 = 8 per item; 73 / 8 = 9 per line.
  EXPECT_EQ(ox::arange(0.0, 10.0, 0.5).str(),
            "tensor([0.0000, 0.5000, 1.0000, 1.5000, 2.0000, 2.5000, 3.0000, 3.5000, 4.0000,\n"
            "        4.5000, 5.0000, 5.5000, 6.0000, 6.5000, 7.0000, 7.5000, 8.0000, 8.5000,\n"
            "        9.0000, 9.5000])");
  // Inner rows are indented one more: (80 - 8) / 4 = 18 per line.
  EXPECT_EQ(ox::arange(40).reshape({2, 20}).str(),
            "tensor([[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,\n"
            "         18, 19],\n"
            "        [20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37,\n"
            "         38, 39]])");
}

TEST(Print, SummarizesAboveAThousandElements) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  EXPECT_EQ(ox::arange(2000).str(), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  EXPECT_EQ(ox::arange(1001).str(), "tensor([   0,    1,    2,  ...,  998,  999, 1000])");
  EXPECT_EQ(ox::arange(2000).reshape({40, 50}).str(),
            "tensor([[   0,    1,    2,  ...,   47,   48,   49],\n"
            "        [  50,   51,   52,  ...,   97,   98,   99],\n"
            "        [ 100,  101,  102,  ...,  147,  148,  149],\n"
            "        ...,\n"
            "        [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
            "        [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
            "        [1950, 1951, 1952,  ..., 1997, 1998, 1999]])");
  EXPECT_EQ(ox::arange(2002).reshape({1001, 2}).str(),
            "tensor([[   0,    1],\n"
            "        [   2,    3],\n"
            "        [   4,    5],\n"
            "        ...,\n"
            "        [1996, 1997],\n"
            "        [1998, 1999],\n"
            "        [2000, 2001]])");
  // " ..." counts as an item when lines wrap: 10 + 2 = 12 per item, 73 / 12 = 6 per line.
  EXPECT_EQ(ox::arange(0.0, 2e8, 1e5, {.dtype = ox::kF64}).str(),
            "tensor([0.0000e+00, 1.0000e+05, 2.0000e+05,  ..., 1.9970e+08, 1.9980e+08,\n"
            "        1.9990e+08], dtype=f64)");
  // The format comes from the shown values only: the hidden 1e6 does not make it scientific.
  ox::Tensor hidden = ox::ones({1500});
  hidden.narrow(0, 700, 1).fill_(1e6);
  EXPECT_EQ(hidden.str(), "tensor([1., 1., 1.,  ..., 1., 1., 1.])");
}

TEST(Print, SummarizedThreeDimsStaysShort) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  const std::string s = ox::zeros({20, 20, 20}).str();
  EXPECT_EQ(s.substr(0, s.find('\n')), "tensor([[[0., 0., 0.,  ..., 0., 0., 0.],");
  EXPECT_NE(s.find("\n\n        ...,\n\n"), std::string::npos);  // blocks of the outer dim cut
  EXPECT_NE(s.find("\n         ...,\n"), std::string::npos);     // rows of the middle dim cut
  EXPECT_LT(s.size(), 2500u);  // 8000 elements shown in full would take over 32000
  // 6 blocks of 7 lines (6 rows and "...") plus the "..." line between blocks; blank lines
  // separate the blocks.
  size_t lines = 1;
  for (char c : s) lines += c == '\n';
  EXPECT_EQ(lines, 6u * 7u + 1u + 6u);
  EXPECT_EQ(s.substr(s.size() - 42), "         [0., 0., 0.,  ..., 0., 0., 0.]]])");
}

TEST(Print, ExactlyAThousandIsNotSummarized) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  const std::string s = ox::arange(1000).str();
  EXPECT_EQ(s.find("..."), std::string::npos);
  EXPECT_NE(s.find(" 999])"), std::string::npos);
  EXPECT_EQ(s.substr(0, 14), "tensor([  0,  ");
}

TEST(Print, StreamAndStrAgree) {
  OXTEST_SKIP_ON_TEST_DEVICE("exact strings of CPU tensors; device printing: device_test.cpp");
  const ox::Tensor t = ox::tensor({{1.5f, 2.f}, {3.f, 4.f}});
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), t.str());
  std::ostringstream u;
  u << ox::Tensor();
  EXPECT_EQ(u.str(), "tensor(undefined)");
}

}  // namespace
