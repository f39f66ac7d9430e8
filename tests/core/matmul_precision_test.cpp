// ox::set_float32_matmul_precision / get_float32_matmul_precision (oxmera/runtime.h).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <string>

#include "test_util.h"

namespace {

// Restores the setting a test changed.
class MatmulPrecision : public ::testing::Test {
 protected:
  void TearDown() override { ox::set_float32_matmul_precision(saved_); }
  std::string saved_ = ox::get_float32_matmul_precision();
};

TEST_F(MatmulPrecision, DefaultsToHighest) { EXPECT_EQ(saved_, "highest"); }

TEST_F(MatmulPrecision, TakesPyTorchsValues) {
  for (const char* p : {"high", "medium", "highest", "medium", "high"}) {
    ox::set_float32_matmul_precision(p);
    EXPECT_EQ(ox::get_float32_matmul_precision(), p);
  }
}

TEST_F(MatmulPrecision, RefusesOtherValuesNamingTheAcceptedOnes) {
  ox::set_float32_matmul_precision("medium");
  for (const char* bad : {"", "low", "HIGH", "highest ", "tf32"}) {
    const ox::Error e = oxtest::caught([&] { ox::set_float32_matmul_precision(bad); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << bad;
    EXPECT_TRUE(oxtest::contains(e, "\"highest\", \"high\" or \"medium\"")) << e.what();
    EXPECT_TRUE(oxtest::contains(e, "set_float32_matmul_precision")) << e.what();
    EXPECT_EQ(ox::get_float32_matmul_precision(), "medium") << "unchanged by " << bad;
  }
}

}  // namespace
