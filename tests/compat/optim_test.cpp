// torch::optim through the compatibility header, written as LibTorch code: options classes,
// updates against hand-computed ones, option access for learning-rate schedules, StepLR by its
// closed form, param groups, and torch::save / torch::load of a model and an optimizer.

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

// A parameter w with gradient g after loss = sum(g * w).
torch::Tensor param_with_grad(std::vector<float> w, const std::vector<float>& g) {
  auto p = torch::tensor(w).requires_grad_(true);
  (p * torch::tensor(g)).sum().backward();
  return p;
}

TEST(CompatOptimOptions, ChainedSettersAndGetters) {
  auto sgd = torch::optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-4).nesterov(true);
  EXPECT_DOUBLE_EQ(sgd.lr(), 0.1);
  EXPECT_DOUBLE_EQ(sgd.momentum(), 0.9);
  EXPECT_DOUBLE_EQ(sgd.weight_decay(), 1e-4);
  EXPECT_TRUE(sgd.nesterov());
  EXPECT_DOUBLE_EQ(sgd.dampening(), 0.0);
  auto adam = torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.999)).eps(1e-6);
  EXPECT_DOUBLE_EQ(std::get<0>(adam.betas()), 0.5);
  EXPECT_DOUBLE_EQ(std::get<1>(adam.betas()), 0.999);
  EXPECT_DOUBLE_EQ(adam.eps(), 1e-6);
  EXPECT_FALSE(adam.amsgrad());
  EXPECT_DOUBLE_EQ(torch::optim::AdamOptions().lr(), 1e-3);  // LibTorch's defaults
  EXPECT_DOUBLE_EQ(torch::optim::AdamWOptions().weight_decay(), 1e-2);
  EXPECT_DOUBLE_EQ(torch::optim::RMSpropOptions().alpha(), 0.99);
  EXPECT_DOUBLE_EQ(torch::optim::RMSpropOptions().lr(), 1e-2);
  EXPECT_DOUBLE_EQ(torch::optim::AdagradOptions().eps(), 1e-10);
  auto copy = adam;  // a value: changing the copy leaves the original
  copy.lr(5.0);
  EXPECT_DOUBLE_EQ(adam.lr(), 2e-4);
  EXPECT_DOUBLE_EQ(copy.get_lr(), 5.0);
}

TEST(CompatOptimUpdates, SgdMomentumNesterovByHand) {
  auto p = param_with_grad({1.0f, -2.0f}, {0.5f, 1.0f});
  torch::optim::SGD opt({p}, torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true));
  opt.step();
  // Step 1: buf = g; nesterov direction g + 0.9 * buf = 1.9 g.
  EXPECT_TRUE(torch::allclose(p, torch::tensor({1.0f - 0.1f * 1.9f * 0.5f, -2.0f - 0.1f * 1.9f})));
  // Step 2 with the same gradient: buf = 0.9 g + g = 1.9 g; direction g + 0.9 * 1.9 g = 2.71 g.
  opt.step();
  EXPECT_TRUE(torch::allclose(
      p, torch::tensor({1.0f - 0.1f * (1.9f + 2.71f) * 0.5f, -2.0f - 0.1f * (1.9f + 2.71f)})));
  opt.zero_grad();
  EXPECT_FALSE(p.grad().defined());
}

TEST(CompatOptimUpdates, AdamFirstStepAndOthers) {
  // Adam's first step moves each weight by lr * g / (|g| + eps') ~ lr * sign(g).
  auto p = param_with_grad({1.0f, 1.0f}, {0.3f, -2.0f});
  torch::optim::Adam adam({p}, torch::optim::AdamOptions(0.01).betas({0.5, 0.9}));
  adam.step();
  EXPECT_TRUE(torch::allclose(p, torch::tensor({0.99f, 1.01f}), 1e-6, 1e-6));
  // AdamW decays the weight by lr * wd before the Adam step.
  auto q = param_with_grad({2.0f}, {1.0f});
  torch::optim::AdamW adamw({q}, torch::optim::AdamWOptions(0.1).weight_decay(0.5));
  adamw.step();
  EXPECT_NEAR(q.item<float>(), 2.0 * (1 - 0.05) - 0.1, 1e-6);
  // RMSprop: v = (1 - alpha) g^2; step lr * g / (sqrt(v) + eps).
  auto r = param_with_grad({0.0f}, {2.0f});
  torch::optim::RMSprop rms({r}, torch::optim::RMSpropOptions(0.01).alpha(0.9));
  rms.step();
  EXPECT_NEAR(r.item<float>(), -0.01 * 2.0 / (std::sqrt(0.1 * 4.0) + 1e-8), 1e-6);
  // Adagrad: sum = g^2; step lr * g / (sqrt(sum) + eps) = lr * sign(g).
  auto s = param_with_grad({0.0f}, {-3.0f});
  torch::optim::Adagrad ada({s}, torch::optim::AdagradOptions(0.5));
  ada.step();
  EXPECT_NEAR(s.item<float>(), 0.5, 1e-6);
}

TEST(CompatOptimUpdates, ClosureIsCalledAndItsLossReturned) {
  auto p = torch::tensor({3.0f}).requires_grad_(true);
  torch::optim::SGD opt({p}, 0.25);
  torch::optim::Optimizer& base = opt;  // LibTorch's base-class interface
  auto loss = base.step([&] {
    base.zero_grad();
    auto l = (p * p).sum();
    l.backward();
    return l;
  });
  EXPECT_FLOAT_EQ(loss.item<float>(), 9.0f);
  EXPECT_FLOAT_EQ(p.item<float>(), 3.0f - 0.25f * 6.0f);
  EXPECT_EQ(base.size(), 1u);
}

TEST(CompatOptimSchedules, OptionAccessThroughParamGroups) {
  auto p = param_with_grad({1.0f}, {1.0f});
  torch::optim::Adam optimizer({p},
                               torch::optim::AdamOptions(2e-4).betas(std::make_tuple(0.5, 0.5)));
  ASSERT_EQ(optimizer.param_groups().size(), 1u);
  auto& options = static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[0].options());
  EXPECT_DOUBLE_EQ(options.lr(), 2e-4);
  EXPECT_DOUBLE_EQ(std::get<1>(options.betas()), 0.5);
  // LibTorch's idiom for a schedule: the next step uses the new rate.
  static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[0].options()).lr(0.1);
  EXPECT_DOUBLE_EQ(static_cast<ox::optim::Adam&>(optimizer).param_groups()[0].lr,
                   0.1);  // oxmera's group
  optimizer.step();
  EXPECT_NEAR(p.item<float>(), 1.0 - 0.1, 1e-6);
  // The generic form, over every group.
  for (auto& group : optimizer.param_groups()) group.options().set_lr(0.05);
  EXPECT_DOUBLE_EQ(options.get_lr(), 0.05);
  EXPECT_EQ(optimizer.param_groups()[0].params().size(), 1u);
  EXPECT_EQ(optimizer.param_groups()[0].params()[0].impl(), p.impl());

  // Param groups with their own options, as LibTorch.
  auto a = torch::zeros({2}).requires_grad_(true), b = torch::zeros({3}).requires_grad_(true);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<torch::Tensor>{a});
  groups.emplace_back(
      std::vector<torch::Tensor>{b},
      std::make_unique<torch::optim::SGDOptions>(torch::optim::SGDOptions(0.5).momentum(0.9)));
  torch::optim::SGD sgd(groups, torch::optim::SGDOptions(0.01));
  ASSERT_EQ(sgd.param_groups().size(), 2u);
  EXPECT_DOUBLE_EQ(sgd.param_groups()[0].options().get_lr(), 0.01);
  auto& second = static_cast<torch::optim::SGDOptions&>(sgd.param_groups()[1].options());
  EXPECT_DOUBLE_EQ(second.lr(), 0.5);
  EXPECT_DOUBLE_EQ(second.momentum(), 0.9);
  auto c = torch::zeros({1}).requires_grad_(true);
  sgd.add_param_group(torch::optim::OptimizerParamGroup({c}));
  ASSERT_EQ(sgd.param_groups().size(), 3u);
  EXPECT_DOUBLE_EQ(sgd.param_groups()[2].options().get_lr(), 0.01);
  EXPECT_DOUBLE_EQ(second.lr(), 0.5);  // still bound to group 1 after the groups grew
  second.lr(0.7);
  EXPECT_DOUBLE_EQ(static_cast<ox::optim::SGD&>(sgd).param_groups()[1].lr, 0.7);
}

TEST(CompatOptimSchedules, StepLrFollowsLibTorchsClosedForm) {
  auto p = param_with_grad({1.0f}, {1.0f});
  torch::optim::SGD optimizer({p}, torch::optim::SGDOptions(0.8));
  torch::optim::StepLR scheduler(optimizer, /*step_size=*/3, /*gamma=*/0.5);
  for (int k = 1; k <= 10; ++k) {
    scheduler.step();
    // LibTorch: after k calls, lr0 * gamma^floor((k - 1) / step_size).
    const double expected = 0.8 * std::pow(0.5, (k - 1) / 3);
    EXPECT_NEAR(optimizer.param_groups()[0].options().get_lr(), expected, 1e-15) << k;
  }
}

TEST(CompatOptimSaveLoad, ModelAndOptimizerRoundTrip) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("oxmera_compat_optim_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string model_path = (dir / "model.pt").string();
  const std::string opt_path = (dir / "optimizer.pt").string();

  torch::manual_seed(5);
  torch::nn::Sequential model(torch::nn::Linear(3, 4), torch::nn::Functional(torch::tanh),
                              torch::nn::Linear(4, 1));
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(0.01));
  auto x = torch::randn({8, 3}), y = torch::randn({8, 1});
  auto train_step = [&](torch::nn::Sequential& m, torch::optim::Adam& opt) {
    opt.zero_grad();
    auto loss = torch::mse_loss(m->forward(x), y);
    loss.backward();
    opt.step();
  };
  train_step(model, optimizer);
  static_cast<torch::optim::AdamOptions&>(optimizer.param_groups()[0].options()).lr(0.003);
  torch::save(model, model_path);
  torch::save(optimizer, opt_path);

  torch::nn::Sequential restored(torch::nn::Linear(3, 4), torch::nn::Functional(torch::tanh),
                                 torch::nn::Linear(4, 1));
  torch::optim::Adam restored_opt(restored->parameters(), torch::optim::AdamOptions(0.5));
  torch::load(restored, model_path);
  torch::optim::Optimizer& base = restored_opt;
  torch::load(base, opt_path);  // through LibTorch's base class
  EXPECT_DOUBLE_EQ(restored_opt.param_groups()[0].options().get_lr(), 0.003);
  auto a = model->parameters(), b = restored->parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i]));
  // Both continue identically (the moments and step count came back too).
  train_step(model, optimizer);
  train_step(restored, restored_opt);
  a = model->parameters();
  b = restored->parameters();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::equal(a[i], b[i])) << i;
  std::filesystem::remove_all(dir);
}

}  // namespace
