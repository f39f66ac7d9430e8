// `oxmera inspect` and `oxmera convert` on PyTorch checkpoints (tests/io/fixtures/pytorch), run
// as a user runs them.

#include <gtest/gtest.h>
#include <oxmera/io/pytorch.h>
#include <oxmera/oxmera.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/cli_run.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using oxtest::describe;
using oxtest::run_oxmera;

std::string fixture(const std::string& name) {
  return std::string(oxtest::kSourceDir) + "/tests/io/fixtures/pytorch/" + name;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class PytorchCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("oxmera-cli-pt-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PytorchCli, InspectListsACheckpoint) {
  const auto r = run_oxmera({"inspect", fixture("nested_zip.pt")}, dir_);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "PyTorch checkpoint (zip format), 12 tensors")) << r.out;
  EXPECT_TRUE(has(r.out, "model.1.num_batches_tracked  i64")) << r.out;
  EXPECT_TRUE(has(r.out, "epoch (int)")) << r.out;
  const auto legacy = run_oxmera({"inspect", "--stats", fixture("views_legacy.pt")}, dir_);
  ASSERT_EQ(legacy.code, 0) << describe(legacy);
  EXPECT_TRUE(has(legacy.out, "legacy format")) << legacy.out;
  EXPECT_TRUE(has(legacy.out, "offset 20 strides [1]")) << legacy.out;
  EXPECT_TRUE(has(legacy.out, "min 20  max 23")) << legacy.out;
}

TEST_F(PytorchCli, ConvertWritesTheSameTensors) {
  for (const std::string name : {"dtypes_zip.pt", "views_legacy.pt", "nested_zip.pt"}) {
    SCOPED_TRACE(name);
    const std::string out = (dir_ / "out.safetensors").string();
    const auto r = run_oxmera({"convert", fixture(name), out}, dir_);
    ASSERT_EQ(r.code, 0) << describe(r);
    const ox::TensorDict want = ox::load_pytorch(fixture(name));
    const ox::TensorDict got = ox::load_safetensors(out);
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [key, t] : want) {
      ASSERT_TRUE(got.contains(key)) << key;
      EXPECT_EQ(got.at(key).dtype(), t.dtype()) << key;
      EXPECT_EQ(got.at(key).shape(), t.shape()) << key;
      EXPECT_EQ(got.at(key).to(ox::kF64).reshape({-1}).to_vector<double>(),
                t.to(ox::kF64).reshape({-1}).to_vector<double>())
          << key;
    }
  }
}

TEST_F(PytorchCli, ConvertRefusesBadInput) {
  const std::string out = (dir_ / "out.safetensors").string();
  const auto big = run_oxmera({"convert", fixture("bigendian_zip.pt"), out}, dir_);
  EXPECT_EQ(big.code, 2) << describe(big);
  EXPECT_TRUE(has(big.err, "big-endian")) << big.err;
  EXPECT_FALSE(fs::exists(out));
  {
    std::ofstream evil(dir_ / "evil.pt", std::ios::binary);
    static const char kPickle[] =
        "\x80\x02"
        "cos\nsystem\n"
        "X\x02\x00\x00\x00id\x85R.";
    evil << std::string(kPickle, sizeof(kPickle) - 1);  // the embedded zeros included
  }
  const auto legacy = run_oxmera({"convert", (dir_ / "evil.pt").string(), out}, dir_);
  EXPECT_EQ(legacy.code, 2) << describe(legacy);
  EXPECT_FALSE(fs::exists(out));
  const auto same =
      run_oxmera({"convert", fixture("module_zip.pt"), fixture("module_zip.pt")}, dir_);
  EXPECT_EQ(same.code, 2) << describe(same);
}

}  // namespace
