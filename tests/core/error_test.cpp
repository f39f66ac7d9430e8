#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

namespace {

// Runs `f` and returns the ox::Error it throws; fails the test when it throws nothing.
template <class F>
ox::Error caught(F&& f) {
  try {
    f();
  } catch (const ox::Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an ox::Error";
  return ox::Error(ox::ErrorKind::Internal, "none");
}

TEST(Error, MessageStartsWithOpInBrackets) {
  const ox::Error e = caught([] { OX_FAIL(Shape, "matmul", "shapes ", ox::Shape{2, 3}, " and ",
                                          ox::Shape{4, 5}, " cannot be multiplied"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Shape);
  EXPECT_STREQ(e.what(), "[matmul] shapes [2, 3] and [4, 5] cannot be multiplied");
}

}  // namespace
