// Learning-rate schedules against their closed forms, written out here.

#include <cmath>
#include <numbers>

#include "optim_test_util.h"

using namespace oxtest;
namespace optim = ox::optim;

namespace {

constexpr double kPi = std::numbers::pi;

// The rate of group 0 after construction and after each of `steps` steps.
std::vector<double> sequence(optim::LRScheduler& s, optim::Optimizer& opt, int steps) {
  std::vector<double> out = {opt.get_lr(0)};
  EXPECT_EQ(s.get_last_lr()[0], opt.get_lr(0));
  for (int i = 0; i < steps; ++i) {
    s.step();
    out.push_back(opt.get_lr(0));
    EXPECT_EQ(s.get_last_lr()[0], opt.get_lr(0));
  }
  return out;
}

struct Fixture {
  ox::Tensor p = leaf({1.0});
  optim::SGD opt{std::vector<ox::Tensor>{p}, optim::SGDOptions{.lr = 0.1}};
};

}  // namespace

TEST(Scheduler, StepLR) {
  Fixture f;
  optim::StepLR s(f.opt, 3, 0.5);
  std::vector<double> want;
  for (int e = 0; e <= 15; ++e) want.push_back(0.1 * std::pow(0.5, e / 3));
  expect_close(sequence(s, f.opt, 15), want, 1e-15, 1e-14, "StepLR");
  EXPECT_EQ(kind_of([&] { optim::StepLR bad(f.opt, 0); }), ox::ErrorKind::Value);
}

TEST(Scheduler, MultiStepLR) {
  Fixture f;
  optim::MultiStepLR s(f.opt, {2, 5, 6}, 0.1);
  const std::vector<double> want = {0.1, 0.1, 0.01, 0.01, 0.01, 1e-3, 1e-4, 1e-4, 1e-4};
  expect_close(sequence(s, f.opt, 8), want, 1e-15, 1e-13, "MultiStepLR");
  Fixture f2;
  optim::MultiStepLR unsorted(f2.opt, {6, 2, 5}, 0.1);  // PyTorch takes any order
  expect_close(sequence(unsorted, f2.opt, 8), want, 1e-15, 1e-13, "MultiStepLR unsorted");
}

TEST(Scheduler, ExponentialLR) {
  Fixture f;
  optim::ExponentialLR s(f.opt, 0.9);
  std::vector<double> want;
  double lr = 0.1;
  for (int e = 0; e <= 12; ++e, lr *= 0.9) want.push_back(lr);
  expect_close(sequence(s, f.opt, 12), want, 1e-15, 1e-13, "ExponentialLR");
}

TEST(Scheduler, CosineAnnealingLR) {
  Fixture f;
  optim::CosineAnnealingLR s(f.opt, 10, 0.01);
  std::vector<double> want;
  for (int e = 0; e <= 15; ++e) want.push_back(0.01 + 0.09 * (1 + std::cos(kPi * e / 10)) / 2);
  const std::vector<double> got = sequence(s, f.opt, 15);
  expect_close(got, want, 1e-15, 1e-13, "CosineAnnealingLR");
  EXPECT_NEAR(got[5], 0.055, 1e-15);  // halfway
  EXPECT_NEAR(got[10], 0.01, 1e-15);  // eta_min at T_max
}

TEST(Scheduler, LinearLR) {
  Fixture f;
  optim::LinearLR s(f.opt, {.start_factor = 0.25, .end_factor = 1.0, .total_iters = 4});
  const std::vector<double> want = {0.025, 0.04375, 0.0625, 0.08125, 0.1, 0.1, 0.1};
  expect_close(sequence(s, f.opt, 6), want, 1e-15, 1e-13, "LinearLR");
  EXPECT_EQ(kind_of([&] { optim::LinearLR bad(f.opt, {.start_factor = 0}); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { optim::LinearLR bad(f.opt, {.end_factor = 1.5}); }),
            ox::ErrorKind::Value);
}

TEST(Scheduler, OneCycleLRCos) {
  Fixture f;
  optim::OneCycleLR s(f.opt, {.max_lr = 1.0, .total_steps = 10});
  // initial 1/25 = 0.04 rising to 1 at step 2 (0.3 * 10 - 1), then down to 4e-6 at step 9.
  std::vector<double> want = {0.04, 0.04 + 0.96 * (1 - std::cos(kPi * 0.5)) / 2, 1.0};
  for (int t = 3; t <= 9; ++t)
    want.push_back(4e-6 + (1 - 4e-6) * (1 + std::cos(kPi * (t - 2) / 7.0)) / 2);
  expect_close(sequence(s, f.opt, 9), want, 1e-15, 1e-12, "OneCycleLR cos");
  // The usual loop steps the schedule total_steps times; PyTorch refuses only the step after.
  s.step();
  EXPECT_EQ(s.last_epoch(), 10);
  EXPECT_EQ(kind_of([&] { s.step(); }), ox::ErrorKind::Value);
  EXPECT_EQ(s.last_epoch(), 10);  // a refused step changes nothing
}

TEST(Scheduler, OneCycleLRLinearThreePhase) {
  Fixture f;
  optim::OneCycleLR s(f.opt, {.max_lr = 1.0,
                              .total_steps = 10,
                              .pct_start = 0.3,
                              .anneal_strategy = "linear",
                              .div_factor = 10,
                              .final_div_factor = 100,
                              .three_phase = true});
  // 0.1 -> 1 over steps 0..2, 1 -> 0.1 over 2..4, 0.1 -> 0.001 over 4..9.
  std::vector<double> want = {0.1, 0.55, 1.0, 0.55, 0.1};
  for (int t = 5; t <= 9; ++t) want.push_back(0.1 + (0.001 - 0.1) * (t - 4) / 5.0);
  expect_close(sequence(s, f.opt, 9), want, 1e-15, 1e-12, "OneCycleLR linear three_phase");
  EXPECT_EQ(kind_of([&] { optim::OneCycleLR bad(f.opt, {.max_lr = 1, .total_steps = 0}); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] {
              optim::OneCycleLR bad(f.opt,
                                    {.max_lr = 1, .total_steps = 5, .anneal_strategy = "exp"});
            }),
            ox::ErrorKind::Value);
}

TEST(Scheduler, OneCycleLRCyclesMomentum) {
  ox::Tensor a = leaf({1.0});
  optim::SGD sgd({a}, {.lr = 0.1, .momentum = 0.9});
  optim::OneCycleLR s(sgd, {.max_lr = 1.0, .total_steps = 10});
  // max_momentum 0.95 down to base 0.85 over steps 0..2, back up to 0.95 at step 9 (cos).
  std::vector<double> want = {0.95, 0.9, 0.85};
  for (int t = 3; t <= 9; ++t)
    want.push_back(0.95 + (0.85 - 0.95) * (1 + std::cos(kPi * (t - 2) / 7.0)) / 2);
  std::vector<double> got = {sgd.param_groups()[0].momentum};
  for (int t = 1; t <= 9; ++t) {
    s.step();
    got.push_back(sgd.param_groups()[0].momentum);
  }
  expect_close(got, want, 1e-15, 1e-13, "OneCycleLR momentum");

  ox::Tensor b = leaf({1.0});
  optim::Adam adam({b}, {.betas = {0.5, 0.6}});
  optim::OneCycleLR t(adam, {.max_lr = 1.0, .total_steps = 10, .anneal_strategy = "linear"});
  EXPECT_EQ(adam.param_groups()[0].betas, (optim::Betas{0.95, 0.6}));
  t.step();
  EXPECT_NEAR(adam.param_groups()[0].betas[0], 0.9, 1e-15);
  EXPECT_EQ(adam.param_groups()[0].betas[1], 0.6);

  ox::Tensor c = leaf({1.0});
  optim::Adagrad adagrad({c});
  EXPECT_EQ(kind_of([&] { optim::OneCycleLR bad(adagrad, {.max_lr = 1.0, .total_steps = 10}); }),
            ox::ErrorKind::Value);
  optim::OneCycleLR fine(adagrad, {.max_lr = 1.0, .total_steps = 10, .cycle_momentum = false});
  EXPECT_NEAR(adagrad.get_lr(0), 0.04, 1e-15);
  EXPECT_EQ(kind_of([&] { adagrad.set_momentum(0, 0.9); }), ox::ErrorKind::Value);
}

TEST(Scheduler, WarmupCosineLR) {
  Fixture f;
  optim::WarmupCosineLR s(f.opt, {.warmup_steps = 4, .total_steps = 12, .min_lr = 0.001});
  std::vector<double> want = {0.0, 0.025, 0.05, 0.075};
  for (int e = 4; e <= 14; ++e) {
    const double p = std::min(1.0, (e - 4) / 8.0);
    want.push_back(0.001 + 0.099 * (1 + std::cos(kPi * p)) / 2);
  }
  const std::vector<double> got = sequence(s, f.opt, 14);
  expect_close(got, want, 1e-15, 1e-13, "WarmupCosineLR");
  EXPECT_NEAR(got[4], 0.1, 1e-15);
  EXPECT_NEAR(got[12], 0.001, 1e-15);
  EXPECT_EQ(
      kind_of([&] { optim::WarmupCosineLR bad(f.opt, {.warmup_steps = 5, .total_steps = 5}); }),
      ox::ErrorKind::Value);
}

TEST(Scheduler, LambdaLR) {
  Fixture f;
  optim::LambdaLR s(f.opt, [](int64_t e) { return 1.0 / double(e + 1); });
  std::vector<double> want;
  for (int e = 0; e <= 10; ++e) want.push_back(0.1 / (e + 1));
  expect_close(sequence(s, f.opt, 10), want, 1e-15, 1e-13, "LambdaLR");
}

TEST(Scheduler, EveryGroupFollowsItsBase) {
  ox::Tensor a = leaf({1.0}), b = leaf({2.0});
  optim::Adam opt({optim::AdamGroupSpec{.params = {a}, .lr = 1.0},
                   optim::AdamGroupSpec{.params = {b}, .lr = 0.5}});
  optim::StepLR s(opt, 1, 0.5);
  s.step();
  s.step();
  EXPECT_EQ(opt.param_groups()[0].lr, 0.25);
  EXPECT_EQ(opt.param_groups()[1].lr, 0.125);
  EXPECT_EQ(s.get_last_lr(), (std::vector<double>{0.25, 0.125}));
}

TEST(Scheduler, StateDictResumes) {
  Fixture f;
  optim::CosineAnnealingLR s(f.opt, 10);
  for (int i = 0; i < 4; ++i) s.step();
  const ox::TensorDict sd = s.state_dict();
  EXPECT_EQ(sd.at("last_epoch").item<int64_t>(), 4);
  EXPECT_EQ(sd.at("base_lrs").to_vector<double>(), (std::vector<double>{0.1}));

  Fixture g;
  optim::CosineAnnealingLR t(g.opt, 10);
  t.load_state_dict(sd);
  EXPECT_EQ(t.last_epoch(), 4);
  for (int i = 0; i < 3; ++i) {
    s.step();
    t.step();
    EXPECT_EQ(s.get_last_lr(), t.get_last_lr());
  }
  ox::Tensor a = leaf({1.0}), b = leaf({2.0});
  optim::SGD two({optim::SGDGroupSpec{.params = {a}}, optim::SGDGroupSpec{.params = {b}}});
  optim::CosineAnnealingLR u(two, 10);
  EXPECT_EQ(kind_of([&] { u.load_state_dict(sd); }), ox::ErrorKind::Value);
}

TEST(Scheduler, ReduceLROnPlateauMin) {
  Fixture f;
  optim::ReduceLROnPlateau s(f.opt, {.factor = 0.5, .patience = 2, .cooldown = 1, .min_lr = 0.02});
  // Metrics: improve, then stall. Bad epochs count 1, 2, 3 > patience -> halve at epoch 5; the
  // cooldown epoch resets the count; three more bad epochs halve again (to 0.025), then min_lr.
  const std::vector<double> metrics = {1.0,  0.9,  0.95, 0.95, 0.95, 0.95, 0.95,
                                       0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95};
  const std::vector<double> want = {0.1,  0.1,   0.1,   0.1,   0.05,  0.05, 0.05,
                                    0.05, 0.025, 0.025, 0.025, 0.025, 0.02, 0.02};
  for (size_t i = 0; i < metrics.size(); ++i) {
    s.step(metrics[i]);
    EXPECT_NEAR(f.opt.get_lr(0), want[i], 1e-15) << "epoch " << i;
  }
  EXPECT_EQ(s.best(), 0.9);
}

TEST(Scheduler, ReduceLROnPlateauThresholds) {
  Fixture f;
  // max mode, absolute threshold 0.1: 1.05 is not better than 1.0 + 0.1.
  optim::ReduceLROnPlateau s(
      f.opt,
      {.mode = "max", .factor = 0.1, .patience = 0, .threshold = 0.1, .threshold_mode = "abs"});
  s.step(1.0);
  EXPECT_NEAR(f.opt.get_lr(0), 0.1, 1e-15);
  s.step(1.05);
  EXPECT_NEAR(f.opt.get_lr(0), 0.01, 1e-15);
  s.step(1.2);
  EXPECT_NEAR(f.opt.get_lr(0), 0.01, 1e-15);
  EXPECT_EQ(s.best(), 1.2);
  // min mode, relative: 0.99995 is not below 1 * (1 - 1e-4).
  Fixture g;
  optim::ReduceLROnPlateau r(g.opt, {.patience = 0});
  r.step(1.0);
  r.step(0.99995);
  EXPECT_NEAR(g.opt.get_lr(0), 0.01, 1e-15);
  const ox::TensorDict sd = r.state_dict();
  EXPECT_EQ(sd.at("best").item<double>(), 1.0);
  Fixture h;
  optim::ReduceLROnPlateau q(h.opt, {.patience = 0});
  q.load_state_dict(sd);
  EXPECT_EQ(q.best(), 1.0);
  EXPECT_EQ(kind_of([&] { optim::ReduceLROnPlateau bad(f.opt, {.factor = 1.0}); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { optim::ReduceLROnPlateau bad(f.opt, {.mode = "up"}); }),
            ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([&] { optim::ReduceLROnPlateau bad(f.opt, {.threshold_mode = "x"}); }),
            ox::ErrorKind::Value);
}
