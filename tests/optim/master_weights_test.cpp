// Master weights: a bf16 parameter stepped through an f32 master equals an f32 loop written
// here (the parameter the master rounded to bf16 each step), keeps updates bf16 alone loses,
// keeps its state in f32 through state_dict round trips; and 16-bit parameters work with every
// optimizer with or without masters.

#include <oxmera/amp.h>

#include <bit>
#include <cmath>
#include <optional>

#include "all_optimizers.h"
#include "optim_test_util.h"

using namespace oxtest;
namespace optim = ox::optim;

namespace {

// Exactly representable in bf16.
const std::vector<double> kBf16Start = {0.5, -1.25, 2.0, 0.0, -0.3125};

float round_bf16(float x) {  // to the nearest bf16, ties to even (finite inputs)
  uint32_t u = std::bit_cast<uint32_t>(x);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return std::bit_cast<float>(u & 0xFFFF0000u);
}

std::vector<float> to_floats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

std::vector<float> rounded_bf16(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = round_bf16(v[i]);
  return out;
}

ox::Tensor master_of(const optim::Optimizer& opt, size_t index) {
  const ox::Tensor* m = opt.state(index).buffers.find("master");
  return m ? *m : ox::Tensor();
}

// Sets the bf16 gradient of step k and returns it as the f32 values the master step sees.
std::vector<float> feed_grad(const ox::Tensor& p, int k) {
  set_grad(p, grad_at(k, size_t(p.numel())));
  return p.grad().to_vector<float>();
}

}  // namespace

TEST(MasterWeights, SgdMatchesAnF32Loop) {
  for (std::optional<bool> fused : {std::optional<bool>(), std::optional<bool>(false)}) {
    ox::Tensor p = leaf(kBf16Start, ox::kBF16);
    optim::SGD opt({p}, {.lr = 0.05, .momentum = 0.9, .fused = fused, .master_weights = true});
    // The kernel's order in f32, host scalars cast to f32 first.
    std::vector<float> x = to_floats(kBf16Start), b(x.size());
    const float lr = static_cast<float>(-0.05), momentum = 0.9f, one = 1.0f;
    for (int k = 1; k <= 6; ++k) {
      const std::vector<float> g = feed_grad(p, k);
      opt.step();
      for (size_t i = 0; i < x.size(); ++i) {
        b[i] = k == 1 ? g[i] : b[i] * momentum + one * g[i];
        x[i] = x[i] + lr * b[i];
      }
      ASSERT_EQ(p.dtype(), ox::kBF16);
      EXPECT_TRUE(same_bits(master_of(opt, 0).to_vector<float>(), x)) << "step " << k;
      EXPECT_TRUE(same_bits(p.to_vector<float>(), rounded_bf16(x))) << "step " << k;
      EXPECT_FALSE(master_of(opt, 0).grad().defined());  // the f32 gradient is not kept
    }
    const ox::Tensor* buf = opt.state(0).buffers.find("momentum_buffer");
    ASSERT_NE(buf, nullptr);
    EXPECT_EQ(buf->dtype(), ox::kF32);
    EXPECT_TRUE(same_bits(buf->to_vector<float>(), b));
  }
}

TEST(MasterWeights, AdamMatchesAnF32Loop) {
  for (std::optional<bool> fused : {std::optional<bool>(), std::optional<bool>(false)}) {
    ox::Tensor p = leaf(kBf16Start, ox::kBF16);
    optim::Adam opt({p}, {.lr = 0.01, .fused = fused, .master_weights = true});
    std::vector<float> x = to_floats(kBf16Start), m(x.size()), v(x.size());
    for (int k = 1; k <= 6; ++k) {
      const std::vector<float> g = feed_grad(p, k);
      opt.step();
      // torch.optim.Adam's single-tensor step, bias corrections in f64 then cast to f32.
      const double step_size = 0.01 / (1 - std::pow(0.9, k));
      const float update = static_cast<float>(-step_size);
      const float bc2_sqrt = static_cast<float>(std::sqrt(1 - std::pow(0.999, k)));
      const float w = static_cast<float>(1 - 0.9), beta2 = 0.999f;
      const float one_minus_beta2 = static_cast<float>(1 - 0.999), eps = 1e-8f;
      for (size_t i = 0; i < x.size(); ++i) {
        m[i] = m[i] + w * (g[i] - m[i]);
        v[i] = v[i] * beta2;
        v[i] = v[i] + one_minus_beta2 * (g[i] * g[i]);
        const float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
        x[i] = x[i] + update * (m[i] / denom);
      }
      EXPECT_TRUE(same_bits(master_of(opt, 0).to_vector<float>(), x)) << "step " << k;
      EXPECT_TRUE(same_bits(p.to_vector<float>(), rounded_bf16(x))) << "step " << k;
    }
    EXPECT_TRUE(same_bits(opt.state(0).buffers.at("exp_avg").to_vector<float>(), m));
    EXPECT_TRUE(same_bits(opt.state(0).buffers.at("exp_avg_sq").to_vector<float>(), v));
  }
}

TEST(MasterWeights, KeepUpdatesBelowHalfABf16Ulp) {
  // lr * grad = 1e-3 is below half of bf16's ulp at 1 (2^-8): bf16 alone never moves.
  const auto train = [](bool master_weights) {
    ox::Tensor p = leaf({1.0}, ox::kBF16);
    optim::SGD opt({p}, {.lr = 1e-3, .master_weights = master_weights});
    for (int k = 0; k < 10; ++k) {
      set_grad(p, {1.0});
      opt.step();
    }
    return p.to_vector<float>()[0];
  };
  EXPECT_EQ(train(false), 1.0f);
  float x = 1.0f;
  for (int k = 0; k < 10; ++k) x = x + static_cast<float>(-1e-3) * 1.0f;
  EXPECT_EQ(train(true), round_bf16(x));
  EXPECT_EQ(train(true), 0.98828125f);  // 1 - 0.01 = 0.99, nearest bf16 253/256
}

TEST(MasterWeights, StateDictHoldsTheF32MasterAndResumesBitwise) {
  ox::Tensor straight = leaf(kBf16Start, ox::kBF16);
  optim::AdamW a({straight}, {.lr = 0.02, .master_weights = true});
  for (int k = 1; k <= 3; ++k) {
    feed_grad(straight, k);
    a.step();
  }
  const ox::TensorDict sd = a.state_dict();
  ASSERT_TRUE(sd.contains("state.0.master"));
  EXPECT_EQ(sd.at("state.0.master").dtype(), ox::kF32);
  EXPECT_EQ(sd.at("state.0.exp_avg").dtype(), ox::kF32);
  EXPECT_EQ(sd.at("state.0.exp_avg_sq").dtype(), ox::kF32);
  EXPECT_EQ(sd.at("param_groups.0.master_weights").dtype(), ox::kBool);
  EXPECT_TRUE(sd.at("param_groups.0.master_weights").item<bool>());
  EXPECT_TRUE(same_bits(straight.to_vector<float>(),
                        rounded_bf16(sd.at("state.0.master").to_vector<float>())));

  // A copy of the parameter and the saved state (cloned: the dict holds the live buffers).
  ox::TensorDict saved;
  for (const auto& [key, value] : sd.items()) saved.insert(key, value.clone());
  ox::Tensor resumed = leaf(straight.to_vector<double>(), ox::kBF16);
  optim::AdamW b({resumed}, {.lr = 0.02, .master_weights = true});
  b.load_state_dict(saved);
  EXPECT_EQ(master_of(b, 0).dtype(), ox::kF32);
  EXPECT_EQ(b.state(0).buffers.at("exp_avg").dtype(), ox::kF32);  // not cast to bf16
  EXPECT_TRUE(same_bits(master_of(b, 0).to_vector<float>(), master_of(a, 0).to_vector<float>()));
  for (int k = 4; k <= 6; ++k) {
    feed_grad(straight, k);
    a.step();
    feed_grad(resumed, k);
    b.step();
  }
  EXPECT_TRUE(same_bits(straight.to_vector<float>(), resumed.to_vector<float>()));
  EXPECT_TRUE(same_bits(master_of(a, 0).to_vector<float>(), master_of(b, 0).to_vector<float>()));
}

TEST(MasterWeights, StateDictsWithoutTheFlagStillLoad) {
  ox::Tensor p = leaf(kBf16Start, ox::kBF16);
  optim::SGD opt({p}, {.lr = 0.1, .momentum = 0.9, .master_weights = true});
  ox::TensorDict old = opt.state_dict();
  ASSERT_TRUE(old.erase("param_groups.0.master_weights"));  // as written before the flag
  opt.load_state_dict(old);
  EXPECT_TRUE(opt.param_groups()[0].master_weights);  // the group keeps its own
}

TEST(MasterWeights, EveryOptimizerTakes16BitParameters) {
  for (const OptimizerMaker& maker : all_optimizers()) {
    for (ox::DType dt : {ox::kBF16, ox::kF16}) {
      for (bool master_weights : {false, true}) {
        const std::string what =
            maker.name + " " + std::string(ox::dtype_name(dt)) + (master_weights ? " master" : "");
        ox::Tensor p = leaf(kBf16Start, dt);
        auto opt = maker.make({p}, master_weights);
        for (int k = 1; k <= 3; ++k) {
          feed_grad(p, k);
          opt->step();
        }
        EXPECT_EQ(p.dtype(), dt) << what;
        EXPECT_NE(p.to_vector<double>(), kBf16Start) << what;
        for (double value : p.to_vector<double>()) EXPECT_TRUE(std::isfinite(value)) << what;
        const optim::ParamState& state = opt->state(0);
        EXPECT_EQ(state.buffers.contains("master"), master_weights) << what;
        for (const auto& [name, buffer] : state.buffers.items())
          EXPECT_EQ(buffer.dtype(), master_weights ? ox::kF32 : dt) << what << " " << name;
        if (master_weights) {
          const ox::Tensor master = master_of(*opt, 0);
          if (dt == ox::kBF16)
            EXPECT_TRUE(same_bits(p.to_vector<float>(), rounded_bf16(master.to_vector<float>())))
                << what;
          else  // f16: the library's own rounding, as the write back used
            EXPECT_TRUE(same_bits(p.to_vector<float>(), master.to(dt).to_vector<float>())) << what;
        }
      }
    }
  }
}

TEST(MasterWeights, F32ParametersGetNoMaster) {
  ox::Tensor with = leaf(kStart, ox::kF32), without = leaf(kStart, ox::kF32);
  optim::Adam a({with}, {.lr = 0.1, .master_weights = true});
  optim::Adam b({without}, {.lr = 0.1});
  for (int k = 1; k <= 3; ++k) {
    set_grad(with, grad_at(k, 5));
    set_grad(without, grad_at(k, 5));
    a.step();
    b.step();
  }
  EXPECT_FALSE(a.state(0).buffers.contains("master"));
  EXPECT_TRUE(same_bits(with.to_vector<float>(), without.to_vector<float>()));
}

TEST(MasterWeights, PerGroupAndWithTheGradScaler) {
  // Group 0 with masters, group 1 without; gradients scaled by 2^10 and unscaled in f32.
  ox::Tensor a = leaf(kBf16Start, ox::kBF16), b = leaf(kBf16Start, ox::kBF16);
  optim::SGD opt({optim::SGDGroupSpec{.params = {a}, .master_weights = true},
                  optim::SGDGroupSpec{.params = {b}}},
                 {.lr = 0.05});
  ox::amp::GradScaler scaler({.init_scale = 1024.0});
  (void)scaler.scale(ox::scalar_tensor(1.0, {.dtype = ox::kF32}));
  std::vector<float> x = to_floats(kBf16Start);
  for (int k = 1; k <= 3; ++k) {
    std::vector<double> g = grad_at(k, 5);
    for (double& v : g) v = double(round_bf16(float(v)));  // the bf16 gradient, then scaled
    std::vector<double> scaled = g;
    for (double& v : scaled) v *= 1024.0;
    set_grad(a, scaled);
    set_grad(b, scaled);
    EXPECT_TRUE(scaler.step(opt));
    scaler.update();
    for (size_t i = 0; i < x.size(); ++i) x[i] = x[i] + static_cast<float>(-0.05) * float(g[i]);
  }
  EXPECT_TRUE(same_bits(a.to_vector<float>(), rounded_bf16(x)));
  EXPECT_TRUE(opt.state(0).buffers.contains("master"));
  EXPECT_FALSE(opt.state(1).buffers.contains("master"));
}
