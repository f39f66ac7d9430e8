// The fused optimizer step against the op-composed path: the same bits, over several steps,
// for f32 and f64, every option, and any thread count.

#include <oxmera/runtime.h>

#include "backend/backend.h"
#include "optim/update.h"
#include "optim_test_util.h"

using namespace oxtest;
namespace optim = ox::optim;

namespace {

// Enough elements that the kernel splits over threads (kElementwiseGrain is 32768).
constexpr int64_t kSize = 40001;

struct StepsResult {
  std::vector<ox::Tensor> params;
  ox::TensorDict state;
};

// Four steps of `make(params)` over two parameters (one small, one large) from seed-fixed
// values and gradients; returns the parameters and the optimizer state.
template <class Make>
StepsResult run_steps(Make make, ox::DType dtype) {
  ox::manual_seed(7);
  std::vector<ox::Tensor> params = {ox::randn({3, 5}, {.dtype = dtype}),
                                    ox::randn({kSize}, {.dtype = dtype})};
  for (auto& p : params) p.requires_grad_();
  auto opt = make(params);
  for (int k = 0; k < 4; ++k) {
    for (auto& p : params) {
      ox::Tensor g = ox::randn(p.shape(), {.dtype = dtype});
      if (k == 2) g = ox::mul(g, 1e-3);  // a small step: exercises amsgrad's max
      const_cast<ox::Tensor&>(p).mutable_grad() = g;
    }
    opt->step();
  }
  return {params, opt->state_dict()};
}

void expect_same_bits(const StepsResult& a, const StepsResult& b, const std::string& what) {
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    if (a.params[i].dtype() == ox::kF32)
      EXPECT_TRUE(same_bits(a.params[i].to_vector<float>(), b.params[i].to_vector<float>()))
          << what << " param " << i;
    else
      EXPECT_TRUE(same_bits(a.params[i].to_vector<double>(), b.params[i].to_vector<double>()))
          << what << " param " << i;
  }
  ASSERT_EQ(a.state.keys(), b.state.keys()) << what;
  for (const auto& [key, t] : a.state.items()) {
    if (key.ends_with(".fused")) continue;  // the option the runs differ in
    const ox::Tensor u = b.state.at(key);
    EXPECT_TRUE(same_bits(t.to(ox::kF64).to_vector<double>(), u.to(ox::kF64).to_vector<double>()))
        << what << " " << key;
  }
}

}  // namespace

TEST(OptimFused, AdamMatchesUnfusedBitwise) {
  const std::vector<optim::AdamOptions> cases = {
      {.lr = 1e-2},
      {.lr = 1e-2, .weight_decay = 0.1},
      {.lr = 1e-2, .amsgrad = true},
      {.lr = 1e-2, .betas = {0.3, 0.9}, .eps = 1e-3, .maximize = true},  // lerp weight >= 0.5
      {.lr = 1e-2, .weight_decay = 0.1, .amsgrad = true, .maximize = true},
  };
  for (ox::DType dtype : {ox::kF32, ox::kF64}) {
    for (size_t c = 0; c < cases.size(); ++c) {
      for (bool decoupled : {false, true}) {
        const auto run = [&](bool fused) {
          return run_steps(
              [&](const std::vector<ox::Tensor>& ps) -> std::unique_ptr<optim::Optimizer> {
                const auto& o = cases[c];
                if (decoupled)
                  return std::make_unique<optim::AdamW>(
                      ps, optim::AdamWOptions{.lr = o.lr,
                                              .betas = o.betas,
                                              .eps = o.eps,
                                              .weight_decay = o.weight_decay,
                                              .amsgrad = o.amsgrad,
                                              .maximize = o.maximize,
                                              .fused = fused});
                optim::AdamOptions with = o;
                with.fused = fused;
                return std::make_unique<optim::Adam>(ps, with);
              },
              dtype);
        };
        expect_same_bits(run(true), run(false),
                         std::string(decoupled ? "AdamW" : "Adam") + " case " + std::to_string(c) +
                             " " + std::string(ox::dtype_name(dtype)));
      }
    }
  }
}

TEST(OptimFused, SGDMatchesUnfusedBitwise) {
  const std::vector<optim::SGDOptions> cases = {
      {.lr = 1e-2},
      {.lr = 1e-2, .momentum = 0.9},
      {.lr = 1e-2, .momentum = 0.9, .dampening = 0.25, .weight_decay = 0.1},
      {.lr = 1e-2, .momentum = 0.9, .nesterov = true},
      {.lr = 1e-2, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true, .maximize = true},
  };
  for (ox::DType dtype : {ox::kF32, ox::kF64}) {
    for (size_t c = 0; c < cases.size(); ++c) {
      const auto run = [&](bool fused) {
        return run_steps(
            [&](const std::vector<ox::Tensor>& ps) -> std::unique_ptr<optim::Optimizer> {
              optim::SGDOptions o = cases[c];
              o.fused = fused;
              return std::make_unique<optim::SGD>(ps, o);
            },
            dtype);
      };
      expect_same_bits(run(true), run(false),
                       "SGD case " + std::to_string(c) + " " + std::string(ox::dtype_name(dtype)));
    }
  }
}

TEST(OptimFused, SameBitsForAnyThreadCount) {
  const auto run = [] {
    return run_steps(
        [](const std::vector<ox::Tensor>& ps) -> std::unique_ptr<optim::Optimizer> {
          return std::make_unique<optim::AdamW>(ps,
                                                optim::AdamWOptions{.lr = 1e-2, .amsgrad = true});
        },
        ox::kF32);
  };
  const int threads = ox::get_num_threads();
  ox::set_num_threads(1);
  const StepsResult one = run();
  ox::set_num_threads(std::max(threads, 3));
  const StepsResult many = run();
  ox::set_num_threads(threads);
  expect_same_bits(one, many, "threads");
}

// The primitive itself (not only the optimizer's choice of path) against the composed ops.
TEST(OptimFused, PrimitiveMatchesComposedOps) {
  ox::manual_seed(3);
  const ox::Tensor p0 = ox::randn({kSize}), g = ox::randn({kSize});
  ox::Tensor m = ox::randn({kSize}).abs(), v = ox::randn({kSize}).abs();
  ox::Tensor p = p0.clone(), m1 = m.clone(), v1 = v.clone();
  const ox::OptimStepParams params{.maximize = false,
                                   .weight_decay = 0.05,
                                   .update_scale = -0.01 / (1 - 0.9 * 0.9),
                                   .lerp_weight = 0.1,
                                   .beta2 = 0.999,
                                   .one_minus_beta2 = 1 - 0.999,
                                   .bias_correction2_sqrt = std::sqrt(1 - 0.999 * 0.999),
                                   .eps = 1e-8};
  ox::optim::detail::fused_step(ox::OptimStepKind::Adam, p, g, m1, v1, {}, params);
  // The same update written with ops, as adam.cpp's unfused path.
  ox::Tensor q = p0.clone(), m2 = m.clone(), v2 = v.clone();
  const ox::Tensor gd = ox::add(g, q, 0.05);
  m2.add_(ox::sub(gd, m2), 0.1);
  v2.mul_(0.999);
  v2.add_(ox::mul(gd, gd), 1 - 0.999);
  q.add_(ox::div(m2, ox::add(ox::div(ox::sqrt(v2), std::sqrt(1 - 0.999 * 0.999)), 1e-8)),
         -0.01 / (1 - 0.9 * 0.9));
  EXPECT_TRUE(same_bits(p.to_vector<float>(), q.to_vector<float>()));
  EXPECT_TRUE(same_bits(m1.to_vector<float>(), m2.to_vector<float>()));
  EXPECT_TRUE(same_bits(v1.to_vector<float>(), v2.to_vector<float>()));
  EXPECT_FALSE(same_bits(p.to_vector<float>(), p0.to_vector<float>()));
}

// Layouts the kernel does not take go the composed way, with the same numbers.
TEST(OptimFused, NonContiguousFallsBack) {
  ox::manual_seed(5);
  const ox::Tensor base = ox::randn({6, 4});
  const ox::Tensor gbase = ox::randn({4, 6});
  ox::Tensor a = base.clone().requires_grad_();
  ox::Tensor b = base.clone().requires_grad_();
  optim::Adam fused({a}, {.lr = 0.1});
  optim::Adam unfused({b}, {.lr = 0.1, .fused = false});
  a.mutable_grad() = gbase.t();  // transposed: not contiguous
  b.mutable_grad() = gbase.t().contiguous();
  fused.step();
  unfused.step();
  EXPECT_TRUE(same_bits(a.to_vector<float>(), b.to_vector<float>()));
}
