// ox::save / ox::load (torch::save / torch::load's forms) for modules, optimizers, tensors and
// lists of tensors, on safetensors files marked with what they hold.

#include <gtest/gtest.h>

#include <oxmera/oxmera.h>

#include "io/io_test_util.h"
#include "test_util.h"

namespace {

using namespace oxtest;

using ox::Tensor;
using Serialize = oxtest::ScratchDir;

TEST_F(Serialize, AModuleRoundTripsItsParametersAndBuffers) {
  ox::manual_seed(1);
  ox::nn::Sequential saved(ox::nn::Linear(3, 2), ox::nn::BatchNorm1d(2));
  saved->train();
  (void)saved->forward(ox::randn({4, 3}));  // moves the running statistics off their defaults
  ox::save(saved, path("model.pt"));        // a .pt name still writes safetensors

  ox::manual_seed(2);
  ox::nn::Sequential loaded(ox::nn::Linear(3, 2), ox::nn::BatchNorm1d(2));
  ox::load(loaded, path("model.pt"));
  const ox::TensorDict a = saved->state_dict(), b = loaded->state_dict();
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& key : a.keys()) EXPECT_TRUE(ox::equal(a[key], b[key])) << key;
  EXPECT_EQ(ox::SafetensorsFile::open(path("model.pt")).metadata().at("oxmera.kind"),
            "module Sequential");

  // Another architecture's file is refused by load_state_dict, naming the keys.
  ox::nn::Sequential other(ox::nn::Linear(3, 5));
  const ox::Error e = caught([&] { ox::load(other, path("model.pt")); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(e, "1.running_mean")) << e.what();
}

TEST_F(Serialize, AnOptimizerRoundTripsItsState) {
  const Tensor w = ox::ones(3, {.requires_grad = true});
  ox::optim::Adam adam({w}, {.lr = 0.1});
  (w * w).sum().backward();
  adam.step();
  ox::save(adam, path("adam.pt"));

  const Tensor w2 = ox::ones(3, {.requires_grad = true});
  ox::optim::Adam restored({w2}, {.lr = 0.5});
  ox::load(restored, path("adam.pt"));
  const ox::TensorDict a = adam.state_dict(), b = restored.state_dict();
  ASSERT_EQ(a.keys(), b.keys());
  for (const auto& key : a.keys()) EXPECT_TRUE(ox::equal(a[key], b[key])) << key;
  EXPECT_EQ(restored.get_lr(0), 0.1);
}

TEST_F(Serialize, TensorsAndListsRoundTripAndKindsAreChecked) {
  const Tensor t = ox::arange(6, {.dtype = ox::kF64}).view({2, 3}).t();  // not contiguous
  ox::save(t, path("t.pt"));
  Tensor back;
  ox::load(back, path("t.pt"));
  EXPECT_EQ(back.shape(), ox::Shape({3, 2}));
  EXPECT_EQ(back.dtype(), ox::kF64);
  EXPECT_TRUE(ox::equal(back, t.cpu()));

  const std::vector<Tensor> list = {ox::arange(3), ox::ones({2, 2}), ox::zeros(0)};
  ox::save(list, path("list.pt"));
  std::vector<Tensor> list_back;
  ox::load(list_back, path("list.pt"));
  ASSERT_EQ(list_back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(ox::equal(list_back[i], list[i].cpu())) << i;

  const ox::Error e = caught([&] { ox::load(back, path("list.pt")); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Format);
  EXPECT_TRUE(contains(e, "holds a tensors, not a tensor")) << e.what();
  EXPECT_EQ(kind_of([&] { ox::load(list_back, path("missing.pt")); }), ox::ErrorKind::Io);
  EXPECT_EQ(kind_of([&] { ox::save(Tensor(), path("u.pt")); }), ox::ErrorKind::Value);
}

}  // namespace
