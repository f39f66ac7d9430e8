// One test per error kind: the kind, and a message that names the op and its arguments.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <string>

#include "test_util.h"

namespace {

using oxtest::caught;
using oxtest::contains;

TEST(Error, MessageStartsWithOpInBrackets) {
  const ox::Error e = caught([] {
    OX_FAIL(Shape, "matmul", "shapes ", ox::Shape{2, 3}, " and ", ox::Shape{4, 5},
            " cannot be multiplied");
  });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Shape);
  EXPECT_STREQ(e.what(), "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied");
}

TEST(Error, IsARuntimeError) {
  try {
    ox::Device::parse("tpu");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("tpu"), std::string::npos);
  }
}

TEST(Error, ShapeKindNamesShapes) {
  const ox::Error e = caught([] { ox::zeros({2, 3}).view({4, 2}); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Shape);
  EXPECT_TRUE(contains(e, "[view]")) << e.what();
  EXPECT_TRUE(contains(e, "[4, 2]")) << e.what();
}

TEST(Error, DTypeKindNamesDTypes) {
  const ox::Error e = caught([] { ox::zeros({2}, ox::kF64).data_ptr<float>(); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::DType);
  EXPECT_TRUE(contains(e, "f64")) << e.what();
  EXPECT_TRUE(contains(e, "f32")) << e.what();
}

TEST(Error, DeviceKindNamesDevice) {
  const ox::Error e = caught([] { ox::zeros({2}).to(ox::Device::cuda(99)); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_TRUE(contains(e, "[to]")) << e.what();
  EXPECT_TRUE(contains(e, "cuda")) << e.what();
}

TEST(Error, IndexKindNamesIndexAndSize) {
  const ox::Error e = caught([] { ox::zeros({3, 4}).select(1, 4); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index);
  EXPECT_TRUE(contains(e, "index 4")) << e.what();
  EXPECT_TRUE(contains(e, "size 4")) << e.what();
}

TEST(Error, ValueKind) {
  const ox::Error e = caught([] { ox::arange(0, 10, 0); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(e, "[arange]")) << e.what();
}

TEST(Error, OutOfMemoryKindWhenMemoryRunsOut) {
  // 2^60 f32 elements: no overflow in the byte count, but no machine has 4 EiB.
  const ox::Error e = caught([] { ox::empty({int64_t{1} << 60}); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_TRUE(contains(e, "out of memory")) << e.what();
  EXPECT_TRUE(contains(e, "4611686018427387904 bytes")) << e.what();
  EXPECT_STREQ(ox::error_kind_name(e.kind()), "OutOfMemory");
}

TEST(Error, InternalKindFromAssert) {
  const ox::Error e = caught([] { OX_ASSERT(1 + 1 == 3, "arithmetic"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Internal);
  EXPECT_TRUE(contains(e, "1 + 1 == 3")) << e.what();
  EXPECT_TRUE(contains(e, "arithmetic")) << e.what();
}

// Empty, Io, Format and NotImplemented are raised by reductions, file readers and later
// backends; here the checking macro must carry each of them through unchanged.
TEST(Error, CheckMacroCarriesEveryKind) {
  const ox::ErrorKind kinds[] = {ox::ErrorKind::Empty, ox::ErrorKind::Io, ox::ErrorKind::Format,
                                 ox::ErrorKind::NotImplemented};
  const ox::Error empty = caught([] { OX_CHECK(false, Empty, "max", "empty extent"); });
  const ox::Error io = caught([] { OX_CHECK(false, Io, "load", "no such file"); });
  const ox::Error format = caught([] { OX_CHECK(false, Format, "load", "bad header"); });
  const ox::Error missing = caught([] { OX_CHECK(false, NotImplemented, "op", "later"); });
  const ox::Error got[] = {empty, io, format, missing};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i].kind(), kinds[i]);
    EXPECT_EQ(std::string(got[i].what()).front(), '[');
  }
  EXPECT_STREQ(ox::error_kind_name(ox::ErrorKind::Format), "Format");
}

}  // namespace
