// load_pytorch on checkpoints written by torch 1.13 (tests/io/fixtures/pytorch, from
// scripts/make-pytorch-fixtures.py): both formats, every dtype, views sharing a storage, a
// module's state dict and a nested checkpoint. Expected values are the generator's closed forms,
// recomputed here.

#include <gtest/gtest.h>
#include <oxmera/io/pytorch.h>
#include <oxmera/oxmera.h>

#include <cmath>
#include <string>
#include <vector>

#include "io/io_test_util.h"
#include "io/pytorch_test_util.h"

namespace {

using oxtest::pt::fixture;

std::vector<double> values(const ox::Tensor& t) {
  return t.to(ox::kF64).reshape({-1}).to_vector<double>();
}

std::vector<double> arange(int n, double scale = 1, double shift = 0) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(i * scale + shift);
  return out;
}

void expect_tensor(const ox::TensorDict& d, const std::string& name, ox::DType dtype,
                   const ox::Shape& shape, const std::vector<double>& expected) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(d.contains(name));
  const ox::Tensor& t = d.at(name);
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_EQ(t.shape(), shape);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.device(), ox::Device::cpu());
  const std::vector<double> got = values(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "element " << i;
}

void check_dtypes(const std::string& file) {
  SCOPED_TRACE(file);
  const ox::TensorDict d = ox::load_pytorch(fixture(file));
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"f32", "f64", "f16", "bf16", "i64", "i32", "i16",
                                                "i8", "u8", "bool", "scalar", "empty"}));
  expect_tensor(d, "f32", ox::kF32, {2, 3}, arange(6, 0.5, -1));
  std::vector<double> thirds;
  for (int i = 0; i < 5; ++i) thirds.push_back(i / 3.0);
  expect_tensor(d, "f64", ox::kF64, {5}, thirds);
  expect_tensor(d, "f16", ox::kF16, {4}, arange(4, 0.25, -0.5));
  expect_tensor(d, "bf16", ox::kBF16, {4}, arange(4, 0.5, 1));
  EXPECT_EQ(
      d.at("i64").to_vector<int64_t>(),
      (std::vector<int64_t>{-2000000000000, -1000000000000, 0, 1000000000000, 2000000000000}));
  expect_tensor(d, "i32", ox::kI32, {5}, arange(5, 100000, -200000));
  expect_tensor(d, "i16", ox::kI16, {5}, arange(5, 1000, -2000));
  expect_tensor(d, "i8", ox::kI8, {6}, arange(6, 1, -3));
  expect_tensor(d, "u8", ox::kU8, {6}, arange(6, 1, 250));
  expect_tensor(d, "bool", ox::kBool, {5}, {1, 0, 1, 0, 1});
  expect_tensor(d, "scalar", ox::kF32, {}, {2.5});
  expect_tensor(d, "empty", ox::kF32, {0, 3}, {});
}

TEST(PytorchLoad, EveryDtypeZip) { check_dtypes("dtypes_zip.pt"); }
TEST(PytorchLoad, EveryDtypeLegacy) { check_dtypes("dtypes_legacy.pt"); }
TEST(PytorchLoad, EveryDtypeDeflated) { check_dtypes("deflate_zip.pt"); }

void check_views(const std::string& file) {
  SCOPED_TRACE(file);
  ox::TensorDict d = ox::load_pytorch(fixture(file));
  const auto base = [](int r, int c) { return double(r * 6 + c); };
  expect_tensor(d, "base", ox::kF32, {4, 6}, arange(24));
  expect_tensor(d, "row", ox::kF32, {6}, arange(6, 1, 6));
  std::vector<double> cols, t;
  for (int r = 0; r < 4; ++r)
    for (int c = 2; c < 4; ++c) cols.push_back(base(r, c));
  for (int c = 0; c < 6; ++c)
    for (int r = 0; r < 4; ++r) t.push_back(base(r, c));
  expect_tensor(d, "cols", ox::kF32, {4, 2}, cols);
  expect_tensor(d, "t", ox::kF32, {6, 4}, t);
  expect_tensor(d, "tail", ox::kF32, {4}, arange(4, 1, 20));
  // Each is its own tensor: writing one leaves the others as they were.
  d.at("row").fill_(-1);
  EXPECT_EQ(values(d.at("base"))[6], 6.0);
}

TEST(PytorchLoad, ViewsOfOneStorageZip) { check_views("views_zip.pt"); }
TEST(PytorchLoad, ViewsOfOneStorageLegacy) { check_views("views_legacy.pt"); }

TEST(PytorchLoad, InspectReportsStridesAndOffsets) {
  const ox::PytorchFileInfo info = ox::inspect_pytorch(fixture("views_zip.pt"));
  EXPECT_EQ(info.format, "zip");
  ASSERT_EQ(info.tensors.size(), 5u);
  EXPECT_EQ(info.storage_bytes, 24u * 4);
  for (const ox::PytorchTensorInfo& t : info.tensors) EXPECT_EQ(t.storage, info.tensors[0].storage);
  EXPECT_EQ(info.tensors[1].name, "row");
  EXPECT_EQ(info.tensors[1].storage_offset, 6);
  EXPECT_EQ(info.tensors[3].name, "t");
  EXPECT_EQ(info.tensors[3].strides, (ox::Strides{1, 6}));
  EXPECT_EQ(ox::inspect_pytorch(fixture("views_legacy.pt")).format, "legacy");
}

void check_module(const ox::TensorDict& d, const std::string& prefix) {
  // Computed in f32 as torch did: arange(12.) / 10 and arange(4.) * 0.1.
  std::vector<double> w, mean;
  for (int i = 0; i < 12; ++i) w.push_back(float(i) / 10.0f);
  for (int i = 0; i < 4; ++i) mean.push_back(float(i) * 0.1f);
  expect_tensor(d, prefix + "0.weight", ox::kF32, {4, 3}, w);
  expect_tensor(d, prefix + "0.bias", ox::kF32, {4}, arange(4, 1, -1));
  expect_tensor(d, prefix + "1.weight", ox::kF32, {4}, arange(4, 1, 1));
  expect_tensor(d, prefix + "1.bias", ox::kF32, {4}, arange(4, 0.25));
  expect_tensor(d, prefix + "1.running_mean", ox::kF32, {4}, mean);
  expect_tensor(d, prefix + "1.running_var", ox::kF32, {4}, arange(4, 1, 0.5));
  expect_tensor(d, prefix + "1.num_batches_tracked", ox::kI64, {}, {7});
}

TEST(PytorchLoad, ModuleStateDict) {
  for (const std::string file : {"module_zip.pt", "module_legacy.pt"}) {
    SCOPED_TRACE(file);
    const ox::TensorDict d = ox::load_pytorch(fixture(file));
    EXPECT_EQ(d.keys(), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias",
                                                  "1.running_mean", "1.running_var",
                                                  "1.num_batches_tracked"}));
    check_module(d, "");
  }
}

TEST(PytorchLoad, NestedCheckpointIsFlattened) {
  const ox::TensorDict d = ox::load_pytorch(fixture("nested_zip.pt"));
  EXPECT_EQ(d.keys(),
            (std::vector<std::string>{"model.0.weight", "model.0.bias", "model.1.weight",
                                      "model.1.bias", "model.1.running_mean", "model.1.running_var",
                                      "model.1.num_batches_tracked", "optimizer.state.0.step",
                                      "optimizer.state.0.exp_avg", "param", "list.0", "list.2"}));
  check_module(d, "model.");
  expect_tensor(d, "optimizer.state.0.step", ox::kF32, {}, {5});
  expect_tensor(d, "optimizer.state.0.exp_avg", ox::kF32, {4}, arange(4));
  expect_tensor(d, "param", ox::kF32, {3}, arange(3));
  expect_tensor(d, "list.0", ox::kF32, {2}, arange(2));
  expect_tensor(d, "list.2", ox::kI64, {3}, arange(3));
  const ox::PytorchFileInfo info = ox::inspect_pytorch(fixture("nested_zip.pt"));
  const auto skipped = [&](const std::string& s) {
    return std::find(info.skipped.begin(), info.skipped.end(), s) != info.skipped.end();
  };
  EXPECT_TRUE(skipped("epoch (int)"));
  EXPECT_TRUE(skipped("lr (float)"));
  EXPECT_TRUE(skipped("list.1 (str)"));
  EXPECT_TRUE(skipped("device (torch.device)"));
  EXPECT_TRUE(skipped("optimizer.param_groups.0.params.0 (int)"));
}

TEST(PytorchLoad, LoadsIntoAModule) {
  auto model = ox::nn::Sequential(ox::nn::Linear(3, 4), ox::nn::BatchNorm1d(4));
  model->load_state_dict(ox::load_pytorch(fixture("module_zip.pt")));
  EXPECT_EQ(values(model->state_dict().at("0.bias")), arange(4, 1, -1));
}

TEST(PytorchLoad, Zip64AndHandWrittenCheckpoints) {
  using namespace oxtest::pt;
  const std::string pickle = dict_pickle({{"w", tensor("0", 6, 1, {2, 2}, {1, 2})}});
  for (const bool zip64 : {false, true}) {
    SCOPED_TRACE(zip64);
    const auto dir = std::filesystem::temp_directory_path();
    const std::string path = (dir / ("oxmera-pt-zip64-" + std::to_string(zip64) + ".pt")).string();
    oxtest::write_file(path, checkpoint(pickle, {{"0", f32_arange(6)}}, zip64));
    const ox::TensorDict d = ox::load_pytorch(path);
    std::filesystem::remove(path);
    expect_tensor(d, "w", ox::kF32, {2, 2}, {1, 3, 2, 4});
  }
}

TEST(PytorchLoad, TellsFormats) {
  EXPECT_TRUE(ox::is_pytorch_file(fixture("dtypes_zip.pt")));
  EXPECT_TRUE(ox::is_pytorch_file(fixture("dtypes_legacy.pt")));
  const std::string path =
      (std::filesystem::temp_directory_path() / "oxmera-pt-tells.safetensors").string();
  ox::save_safetensors(path, {{"a", ox::zeros({2})}});
  EXPECT_FALSE(ox::is_pytorch_file(path));
  std::filesystem::remove(path);
}

}  // namespace
