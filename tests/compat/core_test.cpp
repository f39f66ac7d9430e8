// LibTorch code through the compatibility header: names of namespace torch/at/c10, dtypes,
// devices, options, losses with torch::Reduction, autograd, save/load, the macros. Written as a
// LibTorch user writes it; checked against closed forms.

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <cmath>
#include <filesystem>

#include "test_util.h"

namespace {

using namespace oxtest;

TEST(CompatCore, DtypeAndDeviceNamesAreOxmeras) {
  torch::Tensor x = torch::ones({2, 3}, torch::TensorOptions().dtype(torch::kFloat64));
  EXPECT_EQ(x.scalar_type(), torch::kDouble);
  EXPECT_EQ(x.dtype(), at::kDouble);
  EXPECT_EQ(torch::zeros(4, torch::kLong).dtype(), torch::kInt64);
  EXPECT_EQ(x.to(torch::kFloat).dtype(), torch::kFloat32);
  EXPECT_EQ(torch::kByte, ox::kU8);
  EXPECT_EQ(torch::kBFloat16, ox::kBF16);
  const torch::Device cpu(torch::kCPU);
  EXPECT_TRUE(cpu.is_cpu());
  EXPECT_EQ(torch::Device(torch::kCUDA), ox::Device::cuda(0));
  const torch::Device device = torch::cuda::is_available() ? torch::kCUDA : torch::kCPU;
  EXPECT_EQ(torch::ones(2).to(device).device().type(), device.type());
  c10::optional<int64_t> none = c10::nullopt;
  EXPECT_FALSE(none.has_value());
  const auto opts = torch::dtype(torch::kFloat32).requires_grad(true);
  EXPECT_TRUE(torch::randn({2, 2}, opts).requires_grad());
  EXPECT_TRUE(torch::zeros(3, torch::requires_grad()).requires_grad());
}

TEST(CompatCore, OpsAndTensorMethodsReadAsLibTorch) {
  torch::manual_seed(0);
  auto a = torch::tensor({1.0, 2.0, 3.0});  // the default dtype, as LibTorch
  EXPECT_EQ(a.dtype(), torch::kFloat);
  auto b = torch::arange(3).to(torch::kFloat);
  auto c = torch::relu(a - b * 2);  // [1, 0, 0]
  EXPECT_EQ(c.sum().item<float>(), 1.0f);
  EXPECT_EQ(c.sum().item().toFloat(), 1.0f);
  auto m = torch::flatten(torch::ones({2, 3, 4}), 1);
  EXPECT_EQ(m.sizes(), torch::IntArrayRef({2, 12}));
  EXPECT_EQ(torch::unsqueeze(a, 0).size(0), 1);
  EXPECT_EQ(torch::transpose(m, 0, 1).size(0), 12);
  auto [values, indices] = torch::max(torch::tensor({{1.0f, 5.0f}, {7.0f, 2.0f}}), 1);
  EXPECT_EQ(indices[0].item<int64_t>(), 1);
  EXPECT_EQ(values[1].item<float>(), 7.0f);
  using namespace torch::indexing;
  auto row = m.index({0, Slice(None, 3)});
  EXPECT_EQ(row.numel(), 3);
  EXPECT_EQ(torch::get_default_dtype(), torch::kFloat);
}

TEST(CompatCore, LossesTakeTorchReduction) {
  auto input = torch::tensor({{-1.0, -2.0}, {-3.0, -0.5}}, torch::kDouble);
  auto target = torch::tensor({0, 1});
  // nll: -(input[0][0] + input[1][1]) / 2 = 0.75; sum 1.5.
  EXPECT_DOUBLE_EQ(torch::nll_loss(input, target).item<double>(), 0.75);
  EXPECT_DOUBLE_EQ(torch::nll_loss(input, target, {}, torch::Reduction::Sum).item<double>(), 1.5);
  auto p = torch::tensor({0.25, 0.5}, torch::kDouble);
  auto y = torch::tensor({1.0, 0.0}, torch::kDouble);
  const double bce = -(std::log(0.25) + std::log(0.5));
  EXPECT_NEAR(torch::binary_cross_entropy(p, y, {}, torch::Reduction::Sum).item<double>(), bce,
              1e-12);
  // smooth_l1 with beta 1: |d| = 0.25 -> 0.5 * 0.0625; |d| = 2 -> 1.5.
  auto u = torch::tensor({0.25, 2.0}, torch::kDouble);
  auto z = torch::zeros(2, torch::kDouble);
  EXPECT_DOUBLE_EQ(torch::smooth_l1_loss(u, z, at::Reduction::Sum).item<double>(), 0.03125 + 1.5);
  EXPECT_DOUBLE_EQ(torch::mse_loss(u, z).item<double>(), (0.0625 + 4.0) / 2);
  EXPECT_EQ(kind_of([&] { torch::mse_loss(u, z, 7); }), ox::ErrorKind::Value);
}

// The official LibTorch autograd example's custom function: MulConstant, with the constant in
// saved_data and an undefined gradient for it.
struct MulConstant : public torch::autograd::Function<MulConstant> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor tensor,
                               double constant) {
    ctx->saved_data["constant"] = constant;
    return tensor * constant;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), torch::Tensor()};
  }
};

TEST(CompatCore, AutogradNamesAndGuards) {
  auto x = torch::randn({2, 2}, torch::requires_grad());
  auto y = MulConstant::apply(x, 5.5);
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), torch::full({2, 2}, 5.5)));
  {
    torch::NoGradGuard no_grad;
    EXPECT_FALSE((x * 2).requires_grad());
  }
  {
    torch::AutoGradMode off(false);
    EXPECT_FALSE(torch::is_grad_enabled());
  }
  EXPECT_TRUE(torch::is_grad_enabled());
  auto g = torch::autograd::grad({(x * x).sum()}, {x});
  EXPECT_TRUE(torch::allclose(g[0], 2 * x));
}

TEST(CompatCore, ChecksAndSaveLoad) {
  const ox::Error e = caught([] { TORCH_CHECK(1 + 1 == 3, "math is ", "broken: ", 2); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(e, "math is broken: 2")) << e.what();
  EXPECT_TRUE(contains(caught([] { TORCH_CHECK(false); }), "Expected false to be true"));
  EXPECT_EQ(kind_of([] { AT_ASSERT(2 < 1); }), ox::ErrorKind::Internal);

  const std::string path =
      (std::filesystem::temp_directory_path() / "oxmera-compat-core-tensor.pt").string();
  auto t = torch::arange(6).view({2, 3});
  torch::save(t, path);
  torch::Tensor back;
  torch::load(back, path);
  EXPECT_TRUE(torch::equal(back, t.cpu()));
  std::filesystem::remove(path);
}

}  // namespace

namespace {

TEST(CompatCore, TensorFromValuesTakesLibTorchsDtypes) {
  // As LibTorch 1.13 prints them: long, long, float, float, float, long, bool, unsigned char.
  EXPECT_EQ(torch::tensor({1, 2}).dtype(), torch::kLong);
  EXPECT_EQ(torch::tensor(5).dtype(), torch::kLong);
  EXPECT_EQ(torch::tensor({1.5}).dtype(), torch::kFloat);
  EXPECT_EQ(torch::tensor(std::vector<double>{1.5}).dtype(), torch::kFloat);
  EXPECT_EQ(torch::tensor(2.5).dtype(), torch::kFloat);
  EXPECT_EQ(torch::tensor(std::vector<int>{1}).dtype(), torch::kLong);
  EXPECT_EQ(torch::tensor({true}).dtype(), torch::kBool);
  EXPECT_EQ(torch::tensor({uint8_t(1)}).dtype(), torch::kByte);
  EXPECT_EQ(torch::tensor(2.5).dim(), 0);
  EXPECT_EQ(torch::tensor({1.5}, torch::kDouble).item<double>(), 1.5);
  EXPECT_EQ(torch::arange(0, 4, torch::kFloat).dtype(), torch::kFloat);
  EXPECT_EQ(torch::arange(0, 10, 5).numel(), 2);
  EXPECT_EQ(torch::randint(10, {3}).dtype(), torch::kLong);
  float buffer[4] = {1, 2, 3, 4};
  auto blob = torch::from_blob(buffer, {2, 2});
  EXPECT_EQ(blob[1][0].item<float>(), 3.0f);
  EXPECT_EQ(torch::from_blob(buffer, {2}, {2}).sum().item<float>(), 4.0f);  // strides {2}
}

}  // namespace
