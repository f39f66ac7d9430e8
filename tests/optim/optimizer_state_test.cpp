// Parameter groups, zero_grad, state_dict round trips, and bad input with its ErrorKind.

#include <memory>

#include "optim_test_util.h"

using namespace oxtest;
namespace optim = ox::optim;

namespace {

// Steps `opt` with the gradients of steps first..last.
void feed(optim::Optimizer& opt, const std::vector<ox::Tensor>& params, int first, int last) {
  for (int k = first; k <= last; ++k) {
    for (size_t i = 0; i < params.size(); ++i)
      set_grad(params[i], grad_at(k + int(i), size_t(params[i].numel())));
    opt.step();
  }
}

// 5 straight steps against 3 steps, a state_dict, a fresh optimizer loading it, 2 more steps.
template <class Make>
void expect_resume_bitwise(Make make, const std::string& what) {
  std::vector<ox::Tensor> straight = {leaf(kStart, ox::kF32), leaf({0.25, -4.0}, ox::kF32)};
  auto a = make(straight);
  feed(*a, straight, 1, 5);

  std::vector<ox::Tensor> resumed = {leaf(kStart, ox::kF32), leaf({0.25, -4.0}, ox::kF32)};
  auto b = make(resumed);
  feed(*b, resumed, 1, 3);
  const ox::TensorDict saved = b->state_dict();
  std::vector<ox::Tensor> copies = {leaf(resumed[0].to_vector<double>(), ox::kF32),
                                    leaf(resumed[1].to_vector<double>(), ox::kF32)};
  auto c = make(copies);
  c->load_state_dict(saved);
  feed(*c, copies, 4, 5);
  for (size_t i = 0; i < straight.size(); ++i)
    EXPECT_TRUE(same_bits(straight[i].to_vector<float>(), copies[i].to_vector<float>()))
        << what << " param " << i;
}

}  // namespace

TEST(OptimGroups, PerGroupOptionsFallBackToDefaults) {
  ox::Tensor a = leaf({1.0, 2.0}), b = leaf({3.0});
  optim::SGD opt({optim::SGDGroupSpec{.params = {a}, .lr = 0.5},
                  optim::SGDGroupSpec{.params = {b}, .momentum = 0.9}},
                 {.lr = 0.1, .weight_decay = 0.01});
  ASSERT_EQ(opt.num_param_groups(), 2u);
  EXPECT_EQ(opt.param_groups()[0].lr, 0.5);
  EXPECT_EQ(opt.param_groups()[0].weight_decay, 0.01);
  EXPECT_EQ(opt.param_groups()[0].momentum, 0.0);
  EXPECT_EQ(opt.param_groups()[1].lr, 0.1);
  EXPECT_EQ(opt.param_groups()[1].momentum, 0.9);
  set_grad(a, {1.0, -1.0});
  set_grad(b, {2.0});
  opt.step();
  // p -= lr * (g + wd * p)
  expect_close(a.to_vector<double>(), {1 - 0.5 * (1 + 0.01), 2 - 0.5 * (-1 + 0.02)}, 1e-15, 1e-15,
               "group 0");
  expect_close(b.to_vector<double>(), {3 - 0.1 * (2 + 0.03)}, 1e-15, 1e-15, "group 1");

  // The rate is a plain, writable double, also through the generic accessors.
  opt.param_groups()[1].lr = 0.0;
  EXPECT_EQ(opt.get_lr(1), 0.0);
  opt.set_lr(0, 0.25);
  EXPECT_EQ(opt.param_groups()[0].lr, 0.25);
  const double b_before = b.to_vector<double>()[0];
  opt.step();
  EXPECT_EQ(b.to_vector<double>()[0], b_before);

  ox::Tensor c = leaf({5.0});
  opt.add_param_group({.params = {c}, .lr = 1e-4});
  ASSERT_EQ(opt.num_param_groups(), 3u);
  EXPECT_EQ(opt.param_groups()[2].lr, 1e-4);
  EXPECT_EQ(opt.param_groups()[2].weight_decay, 0.01);
  EXPECT_EQ(opt.parameters().size(), 3u);
}

TEST(OptimGroups, AdamGroupsResolveBetas) {
  ox::Tensor a = leaf({1.0}), b = leaf({2.0});
  optim::Adam opt({optim::AdamGroupSpec{.params = {a}},
                   optim::AdamGroupSpec{.params = {b}, .betas = optim::Betas{0.5, 0.6}}},
                  {.lr = 1e-2});
  EXPECT_EQ(opt.param_groups()[0].betas, (optim::Betas{0.9, 0.999}));
  EXPECT_EQ(opt.param_groups()[1].betas, (optim::Betas{0.5, 0.6}));
  EXPECT_EQ(opt.param_groups()[1].lr, 1e-2);
}

TEST(OptimGroups, ZeroGrad) {
  ox::Tensor a = leaf({1.0, 2.0});
  optim::SGD opt({a}, {.lr = 0.1});
  set_grad(a, {3.0, 4.0});
  opt.zero_grad(/*set_to_none=*/false);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().to_vector<double>(), (std::vector<double>{0.0, 0.0}));
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
}

TEST(OptimGroups, BadParameters) {
  ox::Tensor a = leaf({1.0}), b = leaf({2.0});
  EXPECT_EQ(
      kind_of([&] {
        optim::SGD opt({optim::SGDGroupSpec{.params = {a}}, optim::SGDGroupSpec{.params = {a}}});
      }),
      ox::ErrorKind::Value);
  optim::SGD opt({a});
  const ox::Error twice = caught([&] { opt.add_param_group({.params = {a}}); });
  EXPECT_EQ(twice.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(twice, "more than one parameter group")) << twice.what();
  EXPECT_EQ(kind_of([&] { opt.add_param_group({.params = {b, b}}); }), ox::ErrorKind::Value);
  const ox::Tensor non_leaf = ox::mul(b, 2.0);
  EXPECT_EQ(kind_of([&] { optim::SGD bad({non_leaf}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { optim::Adam bad({ox::tensor({1, 2})}); }), ox::ErrorKind::DType);
  EXPECT_EQ(kind_of([&] { optim::Adam bad(std::vector<ox::Tensor>{}); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { optim::Adam bad({ox::Tensor()}); }), ox::ErrorKind::Value);
  EXPECT_EQ(opt.num_param_groups(), 1u);  // the refused groups were not added
}

TEST(OptimGroups, BadOptions) {
  ox::Tensor a = leaf({1.0});
  const auto value_error = [](auto f) { EXPECT_EQ(kind_of(f), ox::ErrorKind::Value); };
  value_error([&] { optim::SGD o({a}, {.lr = -1}); });
  value_error([&] { optim::SGD o({a}, {.momentum = -0.1}); });
  value_error([&] { optim::SGD o({a}, {.weight_decay = -0.1}); });
  value_error([&] { optim::SGD o({a}, {.nesterov = true}); });
  value_error([&] { optim::SGD o({a}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); });
  value_error([&] { optim::Adam o({a}, {.lr = -1e-3}); });
  value_error([&] { optim::Adam o({a}, {.betas = {1.0, 0.999}}); });
  value_error([&] { optim::Adam o({a}, {.betas = {0.9, -0.1}}); });
  value_error([&] { optim::Adam o({a}, {.eps = -1}); });
  value_error([&] { optim::AdamW o({a}, {.weight_decay = -1}); });
  value_error([&] { optim::Adam o({a}, {.lr = std::nan("")}); });
  value_error([&] { optim::RMSprop o({a}, {.alpha = -0.5}); });
  value_error([&] { optim::RMSprop o({a}, {.momentum = -0.5}); });
  value_error([&] { optim::Adagrad o({a}, {.lr_decay = -0.5}); });
  value_error([&] { optim::Adagrad o({a}, {.initial_accumulator_value = -0.5}); });
  value_error([&] { optim::Adamax o({a}, {.betas = {0.9, 1.5}}); });
  value_error([&] { optim::NAdam o({a}, {.momentum_decay = -1}); });
  value_error([&] { optim::RAdam o({a}, {.eps = -1}); });
  value_error([&] { optim::Lion o({a}, {.betas = {0.9, 1.0}}); });
  // A group's own options are checked too.
  optim::Adam ok({a});
  value_error([&] { ok.add_param_group({.params = {leaf({2.0})}, .lr = -1.0}); });
}

TEST(OptimState, StateDictKeys) {
  ox::Tensor a = leaf({1.0, 2.0}), b = leaf({3.0});
  optim::Adam opt({optim::AdamGroupSpec{.params = {a}}, optim::AdamGroupSpec{.params = {b}}},
                  {.lr = 0.1, .amsgrad = true});
  set_grad(a, {1.0, 1.0});
  opt.step();
  const ox::TensorDict sd = opt.state_dict();
  for (const char* key : {"param_groups.0.lr", "param_groups.0.eps", "param_groups.1.lr",
                          "param_groups.0.weight_decay"}) {
    ASSERT_TRUE(sd.contains(key)) << key;
    EXPECT_EQ(sd.at(key).dtype(), ox::kF64) << key;
    EXPECT_EQ(sd.at(key).dim(), 0) << key;
  }
  EXPECT_EQ(sd.at("param_groups.0.lr").item<double>(), 0.1);
  EXPECT_EQ(sd.at("param_groups.0.betas").to_vector<double>(), (std::vector<double>{0.9, 0.999}));
  EXPECT_EQ(sd.at("param_groups.0.amsgrad").dtype(), ox::kBool);
  EXPECT_TRUE(sd.at("param_groups.0.amsgrad").item<bool>());
  EXPECT_EQ(sd.at("param_groups.1.params").to_vector<int64_t>(), (std::vector<int64_t>{1}));
  EXPECT_EQ(sd.at("state.0.step").item<double>(), 1.0);
  EXPECT_EQ(sd.at("state.0.step").dim(), 0);
  EXPECT_EQ(sd.at("state.0.exp_avg").shape(), a.shape());
  EXPECT_TRUE(sd.contains("state.0.exp_avg_sq"));
  EXPECT_TRUE(sd.contains("state.0.max_exp_avg_sq"));
  EXPECT_FALSE(sd.contains("state.1.exp_avg"));  // b had no gradient
}

TEST(OptimState, ResumeIsBitwise) {
  using Ptr = std::unique_ptr<optim::Optimizer>;
  using Ps = const std::vector<ox::Tensor>&;
  expect_resume_bitwise(
      [](Ps p) -> Ptr {
        return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 0.1, .amsgrad = true});
      },
      "Adam");
  expect_resume_bitwise(
      [](Ps p) -> Ptr {
        return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 0.1, .fused = false});
      },
      "AdamW unfused");
  expect_resume_bitwise(
      [](Ps p) -> Ptr {
        return std::make_unique<optim::SGD>(
            p, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .nesterov = true});
      },
      "SGD");
  expect_resume_bitwise(
      [](Ps p) -> Ptr { return std::make_unique<optim::NAdam>(p, optim::NAdamOptions{.lr = 0.1}); },
      "NAdam");
  expect_resume_bitwise(
      [](Ps p) -> Ptr {
        return std::make_unique<optim::Adagrad>(p,
                                                optim::AdagradOptions{.lr = 0.1, .lr_decay = 0.1});
      },
      "Adagrad");
  expect_resume_bitwise(
      [](Ps p) -> Ptr {
        return std::make_unique<optim::RMSprop>(
            p, optim::RMSpropOptions{.momentum = 0.5, .centered = true});
      },
      "RMSprop");
  expect_resume_bitwise(
      [](Ps p) -> Ptr { return std::make_unique<optim::RAdam>(p, optim::RAdamOptions{.lr = 0.1}); },
      "RAdam");
  expect_resume_bitwise(
      [](Ps p) -> Ptr {
        return std::make_unique<optim::Adamax>(p, optim::AdamaxOptions{.lr = 0.1});
      },
      "Adamax");
  expect_resume_bitwise(
      [](Ps p) -> Ptr { return std::make_unique<optim::Lion>(p, optim::LionOptions{.lr = 0.1}); },
      "Lion");
}

TEST(OptimState, LoadRestoresOptions) {
  ox::Tensor a = leaf({1.0});
  optim::Adam src({a}, {.lr = 0.5, .betas = {0.7, 0.8}, .amsgrad = true, .fused = false});
  ox::Tensor b = leaf({1.0});
  optim::Adam dst({b}, {.lr = 0.1});
  dst.load_state_dict(src.state_dict());
  EXPECT_EQ(dst.param_groups()[0].lr, 0.5);
  EXPECT_EQ(dst.param_groups()[0].betas, (optim::Betas{0.7, 0.8}));
  EXPECT_TRUE(dst.param_groups()[0].amsgrad);
  EXPECT_EQ(dst.param_groups()[0].fused, std::optional<bool>(false));
}

TEST(OptimState, LoadMismatches) {
  ox::Tensor a = leaf({1.0, 2.0}), b = leaf({3.0});
  optim::Adam src({optim::AdamGroupSpec{.params = {a}}, optim::AdamGroupSpec{.params = {b}}});
  set_grad(a, {1.0, 1.0});
  set_grad(b, {1.0});
  src.step();
  const ox::TensorDict sd = src.state_dict();

  ox::Tensor c = leaf({1.0, 2.0}), d = leaf({3.0});
  optim::Adam one_group({c, d});
  const ox::Error groups = caught([&] { one_group.load_state_dict(sd); });
  EXPECT_EQ(groups.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(groups, "2 parameter groups")) << groups.what();

  ox::Tensor e = leaf({1.0, 2.0}), f = leaf({3.0}), h = leaf({4.0});
  optim::Adam three_params(
      {optim::AdamGroupSpec{.params = {e}}, optim::AdamGroupSpec{.params = {f, h}}});
  EXPECT_EQ(kind_of([&] { three_params.load_state_dict(sd); }), ox::ErrorKind::Value);

  ox::Tensor wrong = leaf({1.0, 2.0, 3.0}), k = leaf({3.0});
  optim::Adam shapes(
      {optim::AdamGroupSpec{.params = {wrong}}, optim::AdamGroupSpec{.params = {k}}});
  const ox::Error shape = caught([&] { shapes.load_state_dict(sd); });
  EXPECT_EQ(shape.kind(), ox::ErrorKind::Shape);
  EXPECT_TRUE(contains(shape, "state.0.exp_avg")) << shape.what();
  EXPECT_TRUE(shapes.state(0).empty());  // nothing loaded

  ox::TensorDict missing = sd;
  missing.erase("param_groups.1.eps");
  ox::Tensor m = leaf({1.0, 2.0}), n = leaf({3.0});
  optim::Adam fresh({optim::AdamGroupSpec{.params = {m}}, optim::AdamGroupSpec{.params = {n}}});
  EXPECT_EQ(kind_of([&] { fresh.load_state_dict(missing); }), ox::ErrorKind::Value);
  ox::TensorDict bad_option = sd;
  bad_option.insert_or_assign("param_groups.0.lr", ox::scalar_tensor(0.5, {.dtype = ox::kF64}));
  bad_option.insert_or_assign("param_groups.1.lr", ox::scalar_tensor(-1.0, {.dtype = ox::kF64}));
  const double lr_before = fresh.param_groups()[0].lr;
  EXPECT_EQ(kind_of([&] { fresh.load_state_dict(bad_option); }), ox::ErrorKind::Value);
  EXPECT_EQ(fresh.param_groups()[0].lr, lr_before);  // no group changed
  EXPECT_TRUE(fresh.state(0).empty());
  ox::TensorDict unknown = sd;
  unknown.insert("weird", ox::zeros({2}));
  EXPECT_EQ(kind_of([&] { fresh.load_state_dict(unknown); }), ox::ErrorKind::Value);
  // An option another optimizer kind has (SGD's momentum) is not Adam's.
  ox::TensorDict foreign = sd;
  foreign.insert("param_groups.0.momentum", ox::scalar_tensor(0.9, {.dtype = ox::kF64}));
  const ox::Error foreign_error = caught([&] { fresh.load_state_dict(foreign); });
  EXPECT_EQ(foreign_error.kind(), ox::ErrorKind::Value);
  EXPECT_TRUE(contains(foreign_error, "param_groups.0.momentum")) << foreign_error.what();
}

TEST(OptimizerState, StateFollowsItsParameterAfterModuleTo) {
  ox::nn::Linear fc(3, 2);
  optim::Adam adam(fc->parameters(), {.lr = 0.1});
  const ox::Tensor x = ox::ones({4, 3});
  fc(x).sum().backward();
  adam.step();
  fc->to(ox::kF64);
  adam.zero_grad();
  fc(x.to(ox::kF64)).sum().backward();
  adam.step();  // the f32 moments are converted, the fused or unfused step runs in f64
  EXPECT_EQ(adam.state(0).buffers.at("exp_avg").dtype(), ox::kF64);
  EXPECT_EQ(fc->weight.dtype(), ox::kF64);
}
