// GradScaler: scaling, unscaling in f32 for 16-bit gradients, skipped steps on inf/NaN, the
// growth/backoff schedule, clipping after unscale_, every optimizer, the disabled identity,
// state_dict round trips and bad input. Expected values are powers of two, closed forms, or
// f32 products written here.

#include <oxmera/amp.h>

#include <bit>
#include <cmath>
#include <limits>

#include "all_optimizers.h"
#include "optim_test_util.h"

using namespace oxtest;
namespace optim = ox::optim;
using ox::amp::GradScaler;

namespace {

// f32 to the nearest bf16 (ties to even), as a float: finite inputs only.
float round_bf16(float x) {
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

std::vector<double> times(const std::vector<double>& v, double s) {
  std::vector<double> out = v;
  for (double& x : out) x *= s;
  return out;
}

// One iteration: the gradient `g` times the current scale (exact: the scale is a power of two),
// or with an inf/NaN in element 1, then step and update. Returns whether the optimizer stepped.
bool iteration(GradScaler& scaler, optim::Optimizer& opt, const ox::Tensor& p,
               std::vector<double> g, double poison = 0) {
  g = times(g, scaler.get_scale());
  if (poison != 0 || std::isnan(poison)) g[1] = poison;
  set_grad(p, g);
  const bool stepped = scaler.step(opt);
  scaler.update();
  return stepped;
}

std::map<std::string, std::vector<float>> snapshot(const optim::Optimizer& opt) {
  std::map<std::string, std::vector<float>> out;
  const ox::TensorDict dict = opt.state_dict();
  for (const auto& [key, value] : dict.items()) out[key] = value.to(ox::kF32).to_vector<float>();
  return out;
}

}  // namespace

TEST(GradScaler, ScaleMultipliesByTheScale) {
  GradScaler scaler;
  EXPECT_EQ(scaler.get_scale(), 65536.0);  // before any scale(): the initial value
  const ox::Tensor loss = ox::scalar_tensor(1.5, {.dtype = ox::kF32});
  EXPECT_EQ(scaler.scale(loss).item<double>(), 1.5 * 65536.0);

  GradScaler small({.init_scale = 1024.0});
  const ox::Tensor half_loss = ox::scalar_tensor(0.75, {.dtype = ox::kBF16});
  EXPECT_EQ(small.scale(half_loss).item<double>(), 0.75 * 1024.0);

  // Backward through the scaled loss: d(scale * sum(c * p))/dp = scale * c.
  GradScaler s({.init_scale = 8.0});
  ox::Tensor p = leaf({1.0, -2.0}, ox::kF32);
  const ox::Tensor c = ox::tensor(std::vector<double>{0.5, 3.0}, {.dtype = ox::kF32});
  s.scale(ox::sum(ox::mul(p, c))).backward();
  EXPECT_EQ(p.grad().to_vector<double>(), (std::vector<double>{4.0, 24.0}));
}

TEST(GradScaler, UnscaleDividesInF32ForEveryDtype) {
  const std::vector<double> g = {1.5, -0.75, 3.0, 100.0, 0.01};
  // Scale 3: 1/3 is inexact, so the f32 arithmetic (inv = f32(1/3), product rounded once) shows.
  for (ox::DType dt : {ox::kF32, ox::kBF16}) {
    GradScaler scaler({.init_scale = 3.0});
    ox::Tensor p = leaf(std::vector<double>(5, 1.0), dt);
    optim::SGD opt({p}, {.lr = 0.1});
    (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
    set_grad(p, g);
    const std::vector<float> before = p.grad().to_vector<float>();
    scaler.unscale_(opt);
    const float inv = static_cast<float>(1.0 / 3.0);
    std::vector<float> want(before.size());
    for (size_t i = 0; i < before.size(); ++i)
      want[i] = dt == ox::kF32 ? before[i] * inv : round_bf16(before[i] * inv);
    EXPECT_EQ(p.grad().dtype(), dt);
    EXPECT_TRUE(same_bits(p.grad().to_vector<float>(), want)) << ox::dtype_name(dt);
  }
  // f16 with a power-of-two scale: exact.
  GradScaler scaler({.init_scale = 1024.0});
  ox::Tensor p = leaf(std::vector<double>(3, 1.0), ox::kF16);
  optim::SGD opt({p}, {.lr = 0.1});
  (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
  set_grad(p, {1024.0, -512.0, 8.0});
  scaler.unscale_(opt);
  EXPECT_EQ(p.grad().dtype(), ox::kF16);
  EXPECT_EQ(p.grad().to_vector<double>(), (std::vector<double>{1.0, -0.5, 1.0 / 128}));
}

TEST(GradScaler, InfOrNaNSkipsTheStepAndBacksOff) {
  for (double poison :
       {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
        std::numeric_limits<double>::quiet_NaN()}) {
    GradScaler scaler({.init_scale = 1024.0, .growth_interval = 100});
    ox::Tensor p = leaf(kStart, ox::kF32), q = leaf({0.25, -4.0}, ox::kF32);
    optim::Adam opt({p, q}, {.lr = 0.1});
    (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
    set_grad(q, times({1.0, 2.0}, 1024.0));
    EXPECT_TRUE(iteration(scaler, opt, p, grad_at(1, 5)));  // a clean step makes state
    EXPECT_EQ(scaler.get_scale(), 1024.0);
    EXPECT_EQ(scaler.get_growth_tracker(), 1);

    const std::vector<float> p_before = p.to_vector<float>(), q_before = q.to_vector<float>();
    const auto state_before = snapshot(opt);
    set_grad(q, times({1.0, 2.0}, 1024.0));  // clean: the poison in p still skips everything
    EXPECT_FALSE(iteration(scaler, opt, p, grad_at(2, 5), poison)) << poison;
    EXPECT_TRUE(same_bits(p.to_vector<float>(), p_before)) << poison;
    EXPECT_TRUE(same_bits(q.to_vector<float>(), q_before)) << poison;
    const auto state_after = snapshot(opt);
    ASSERT_EQ(state_after.size(), state_before.size());
    for (const auto& [key, values] : state_before)
      EXPECT_TRUE(same_bits(state_after.at(key), values)) << key << " " << poison;
    EXPECT_EQ(scaler.get_scale(), 512.0);
    EXPECT_EQ(scaler.get_growth_tracker(), 0);
  }
}

TEST(GradScaler, GrowsAfterTheIntervalAndAnInfResetsTheTracker) {
  GradScaler scaler({.init_scale = 8.0, .growth_interval = 3});
  ox::Tensor p = leaf(kStart, ox::kF32);
  optim::SGD opt({p}, {.lr = 0.01});
  (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
  const auto expect = [&](double scale, int64_t tracker, const char* when) {
    EXPECT_EQ(scaler.get_scale(), scale) << when;
    EXPECT_EQ(scaler.get_growth_tracker(), tracker) << when;
  };
  const double inf = std::numeric_limits<double>::infinity();
  iteration(scaler, opt, p, grad_at(1, 5));
  expect(8, 1, "1 clean");
  iteration(scaler, opt, p, grad_at(2, 5));
  expect(8, 2, "2 clean");
  iteration(scaler, opt, p, grad_at(3, 5));
  expect(16, 0, "3 clean: grown");
  iteration(scaler, opt, p, grad_at(4, 5));
  expect(16, 1, "1 clean");
  iteration(scaler, opt, p, grad_at(5, 5), inf);
  expect(8, 0, "inf: backed off");
  iteration(scaler, opt, p, grad_at(6, 5));
  iteration(scaler, opt, p, grad_at(7, 5));
  expect(8, 2, "2 clean after the inf");
  iteration(scaler, opt, p, grad_at(8, 5));
  expect(16, 0, "3 clean after the inf: grown");

  // Custom factors, and update(new_scale).
  scaler.set_growth_factor(4.0);
  scaler.set_backoff_factor(0.25);
  iteration(scaler, opt, p, grad_at(9, 5), inf);
  expect(4, 0, "backoff 0.25");
  for (int k = 0; k < 3; ++k) iteration(scaler, opt, p, grad_at(10 + k, 5));
  expect(16, 0, "growth 4");
  set_grad(p, grad_at(13, 5));
  scaler.step(opt);
  scaler.update(100.0);
  expect(100, 0, "new_scale");
}

TEST(GradScaler, AGrowthThatOverflowsKeepsTheScale) {
  const double big = std::ldexp(1.0, 127);  // the largest power of two in f32
  GradScaler scaler({.init_scale = big, .growth_interval = 1});
  ox::Tensor p = leaf({1.0, 1.0}, ox::kF32);
  optim::SGD opt({p}, {.lr = 0.01});
  (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
  set_grad(p, {0.0, 0.0});
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(scaler.get_scale(), big);
  EXPECT_EQ(scaler.get_growth_tracker(), 0);
}

TEST(GradScaler, ClipGradNormAfterUnscaleSeesTheTrueNorm) {
  GradScaler scaler({.init_scale = 1024.0});
  ox::Tensor p = leaf({1.0, 1.0}, ox::kF32);
  optim::SGD opt({p}, {.lr = 1.0});
  (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
  set_grad(p, {3.0 * 1024, 4.0 * 1024});
  scaler.unscale_(opt);
  const ox::Tensor total = ox::nn::utils::clip_grad_norm_({p}, 1.0);
  EXPECT_EQ(total.item<double>(), 5.0);  // |(3, 4)|, not 5 * 1024
  const double coef = 1.0 / (5.0 + 1e-6);
  expect_close(p.grad().to_vector<double>(), {3 * coef, 4 * coef}, 1e-6, 1e-6, "clipped grad");
  EXPECT_TRUE(scaler.step(opt));  // no second unscale
  scaler.update();
  expect_close(p.to_vector<double>(), {1 - 3 * coef, 1 - 4 * coef}, 1e-6, 1e-6, "param");
}

TEST(GradScaler, EveryOptimizerStepsAsOnTheUnscaledGradients) {
  const double inf = std::numeric_limits<double>::infinity();
  for (const OptimizerMaker& maker : all_optimizers()) {
    // Direct: the true gradients of steps 1..4. Scaled: the same, times a power-of-two scale
    // (so unscaling is exact), with a poisoned iteration between steps 2 and 3.
    ox::Tensor direct = leaf(kStart, ox::kF32), scaled = leaf(kStart, ox::kF32);
    auto a = maker.make({direct}, false);
    auto b = maker.make({scaled}, false);
    GradScaler scaler({.init_scale = 256.0, .growth_interval = 2});
    (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
    for (int k = 1; k <= 4; ++k) {
      set_grad(direct, grad_at(k, 5));
      a->step();
      if (k == 3) {
        EXPECT_FALSE(iteration(scaler, *b, scaled, grad_at(k, 5), inf)) << maker.name;
      }
      EXPECT_TRUE(iteration(scaler, *b, scaled, grad_at(k, 5))) << maker.name;
    }
    EXPECT_TRUE(same_bits(direct.to_vector<float>(), scaled.to_vector<float>())) << maker.name;
    // 256 -> 512 (2 clean) -> 256 (inf) -> 512 (2 clean)
    EXPECT_EQ(scaler.get_scale(), 512.0) << maker.name;
  }
}

TEST(GradScaler, DisabledIsTheIdentity) {
  GradScaler scaler({.enabled = false});
  EXPECT_FALSE(scaler.is_enabled());
  const ox::Tensor loss = ox::scalar_tensor(1.5, {.dtype = ox::kF32});
  const ox::Tensor out = scaler.scale(loss);
  EXPECT_TRUE(out.is_same_storage(loss));
  EXPECT_EQ(out.item<double>(), 1.5);
  ox::Tensor p = leaf({1.0, 2.0}, ox::kF32);
  optim::SGD opt({p}, {.lr = 0.5});
  set_grad(p, {2.0, 4.0});
  scaler.unscale_(opt);
  scaler.unscale_(opt);  // no stage bookkeeping either
  EXPECT_EQ(p.grad().to_vector<double>(), (std::vector<double>{2.0, 4.0}));
  EXPECT_TRUE(scaler.step(opt));
  scaler.update();
  EXPECT_EQ(p.to_vector<double>(), (std::vector<double>{0.0, 0.0}));
  EXPECT_EQ(scaler.get_scale(), 1.0);
  EXPECT_TRUE(scaler.state_dict().empty());
  scaler.load_state_dict({});  // nothing to load into a disabled scaler
}

TEST(GradScaler, StateDictRoundTrip) {
  GradScaler scaler(
      {.init_scale = 64.0, .growth_factor = 3.0, .backoff_factor = 0.25, .growth_interval = 4});
  ox::Tensor p = leaf(kStart, ox::kF32);
  optim::SGD opt({p}, {.lr = 0.01});
  (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
  iteration(scaler, opt, p, grad_at(1, 5), std::numeric_limits<double>::infinity());
  iteration(scaler, opt, p, grad_at(2, 5));
  iteration(scaler, opt, p, grad_at(3, 5));
  ASSERT_EQ(scaler.get_scale(), 16.0);
  ASSERT_EQ(scaler.get_growth_tracker(), 2);

  const ox::TensorDict sd = scaler.state_dict();
  ASSERT_EQ(sd.size(), 5u);
  EXPECT_EQ(sd.at("scale").dtype(), ox::kF32);
  EXPECT_EQ(sd.at("scale").dim(), 0);
  EXPECT_EQ(sd.at("scale").item<double>(), 16.0);
  EXPECT_EQ(sd.at("growth_factor").item<double>(), 3.0);
  EXPECT_EQ(sd.at("backoff_factor").item<double>(), 0.25);
  EXPECT_EQ(sd.at("growth_interval").dtype(), ox::kI64);
  EXPECT_EQ(sd.at("growth_interval").item<int64_t>(), 4);
  EXPECT_EQ(sd.at("_growth_tracker").item<int64_t>(), 2);

  // Loaded before the first scale() (the usual resume) and after it.
  for (bool scaled_first : {false, true}) {
    GradScaler resumed;
    if (scaled_first) (void)resumed.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
    resumed.load_state_dict(sd);
    EXPECT_EQ(resumed.get_scale(), 16.0);
    EXPECT_EQ(resumed.get_growth_tracker(), 2);
    EXPECT_EQ(resumed.get_growth_factor(), 3.0);
    EXPECT_EQ(resumed.get_backoff_factor(), 0.25);
    EXPECT_EQ(resumed.get_growth_interval(), 4);
    (void)resumed.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
    ox::Tensor q = leaf(kStart, ox::kF32);
    optim::SGD opt_q({q}, {.lr = 0.01});
    iteration(resumed, opt_q, q, grad_at(4, 5));
    EXPECT_EQ(resumed.get_growth_tracker(), 3);
    iteration(resumed, opt_q, q, grad_at(5, 5));
    EXPECT_EQ(resumed.get_scale(), 48.0);  // grown on the 4th clean step, as the original would
    EXPECT_EQ(resumed.get_growth_tracker(), 0);
  }
}

TEST(GradScaler, BadInputIsAValueError) {
  const auto expect_value = [](auto&& f, const char* what) {
    const ox::Error e = caught(f);
    EXPECT_EQ(e.kind(), ox::ErrorKind::Value) << what;
    EXPECT_TRUE(contains(e, "GradScaler")) << what << ": " << e.what();
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_value([] { GradScaler s({.init_scale = 0.0}); }, "zero scale");
  expect_value([] { GradScaler s({.init_scale = -1.0}); }, "negative scale");
  expect_value([&] { GradScaler s({.init_scale = nan}); }, "NaN scale");
  expect_value([] { GradScaler s({.growth_factor = 1.0}); }, "growth 1");
  expect_value([] { GradScaler s({.growth_factor = 0.5}); }, "growth 0.5");
  expect_value([] { GradScaler s({.backoff_factor = 1.0}); }, "backoff 1");
  expect_value([] { GradScaler s({.backoff_factor = 0.0}); }, "backoff 0");
  expect_value([] { GradScaler s({.backoff_factor = -0.5}); }, "backoff < 0");
  expect_value([] { GradScaler s({.growth_interval = 0}); }, "interval 0");

  GradScaler scaler;
  ox::Tensor p = leaf({1.0, 2.0}, ox::kF32);
  optim::SGD opt({p}, {.lr = 0.1});
  set_grad(p, {1.0, 1.0});
  expect_value([&] { scaler.unscale_(opt); }, "unscale_ before scale");
  expect_value([&] { scaler.step(opt); }, "step before scale");
  expect_value([&] { scaler.scale(ox::tensor(std::vector<int64_t>{1}, {.dtype = ox::kI64})); },
               "integer loss");
  expect_value([&] { scaler.set_growth_factor(1.0); }, "set_growth_factor");
  expect_value([&] { scaler.set_backoff_factor(2.0); }, "set_backoff_factor");
  expect_value([&] { scaler.set_growth_interval(-1); }, "set_growth_interval");
  (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
  expect_value([&] { scaler.update(); }, "update with no inf checks");
  scaler.unscale_(opt);
  expect_value([&] { scaler.unscale_(opt); }, "unscale_ twice");
  scaler.step(opt);
  expect_value([&] { scaler.step(opt); }, "step twice");
  expect_value([&] { scaler.unscale_(opt); }, "unscale_ after step");
  expect_value([&] { scaler.update(0.0); }, "new_scale 0");
  scaler.update();
  scaler.unscale_(opt);  // a new iteration after update()

  expect_value([&] { scaler.load_state_dict({}); }, "empty state dict");
  ox::TensorDict bad = scaler.state_dict();
  bad.at("growth_factor") = ox::scalar_tensor(0.5, {.dtype = ox::kF64});
  const double scale_before = scaler.get_scale();
  expect_value([&] { scaler.load_state_dict(bad); }, "bad loaded factor");
  EXPECT_EQ(scaler.get_scale(), scale_before);
  EXPECT_EQ(scaler.get_growth_factor(), 2.0);
  ox::TensorDict unknown = scaler.state_dict();
  unknown.insert("extra", ox::scalar_tensor(1.0));
  expect_value([&] { scaler.load_state_dict(unknown); }, "unknown key");
}
