// Each optimizer's first steps against its published update, recomputed here in f64 loops.

#include <algorithm>
#include <cmath>
#include <functional>

#include "optim_test_util.h"

using namespace oxtest;
namespace optim = ox::optim;

namespace {

using RefStep =
    std::function<void(std::vector<double>& p, std::vector<double> g, RefState& s, int step)>;

// Runs `opt` and `ref` side by side for `steps` steps on kStart, comparing the parameter each
// step (f64 throughout: only rounding differs).
template <class Opt>
void compare(Opt& opt, const ox::Tensor& p, const RefStep& ref, int steps,
             const std::string& what) {
  std::vector<double> want = kStart;
  RefState state;
  for (int k = 1; k <= steps; ++k) {
    const std::vector<double> g = grad_at(k, kStart.size());
    set_grad(p, g);
    opt.step();
    ref(want, g, state, k);
    expect_close(p.to_vector<double>(), want, 1e-12, 1e-10, what + " step " + std::to_string(k));
  }
}

RefStep sgd_ref(double lr, double momentum, double dampening, double wd, bool nesterov,
                bool maximize) {
  return [=](std::vector<double>& p, std::vector<double> g, RefState& s, int) {
    const bool first = !s.count("buf");
    auto& buf = ref_buffer(s, "buf", p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      double d = maximize ? -g[i] : g[i];
      d += wd * p[i];
      if (momentum != 0) {
        buf[i] = first ? d : momentum * buf[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= lr * d;
    }
  };
}

RefStep adam_ref(double lr, double b1, double b2, double eps, double wd, bool amsgrad,
                 bool maximize, bool decoupled) {
  return [=](std::vector<double>& p, std::vector<double> g, RefState& s, int t) {
    auto& m = ref_buffer(s, "m", p.size());
    auto& v = ref_buffer(s, "v", p.size());
    auto& vmax = ref_buffer(s, "vmax", p.size());
    for (size_t i = 0; i < p.size(); ++i) {
      double gi = maximize ? -g[i] : g[i];
      if (decoupled)
        p[i] *= 1 - lr * wd;
      else
        gi += wd * p[i];
      m[i] = b1 * m[i] + (1 - b1) * gi;
      v[i] = b2 * v[i] + (1 - b2) * gi * gi;
      vmax[i] = std::max(vmax[i], v[i]);
      const double mhat = m[i] / (1 - std::pow(b1, t));
      const double vhat = (amsgrad ? vmax[i] : v[i]) / (1 - std::pow(b2, t));
      p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
  };
}

}  // namespace

TEST(OptimFormula, SGD) {
  struct Case {
    optim::SGDOptions o;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{.lr = 0.1}, "plain"},
      {{.lr = 0.1, .momentum = 0.9}, "momentum"},
      {{.lr = 0.1, .momentum = 0.9, .dampening = 0.3}, "dampening"},
      {{.lr = 0.1, .momentum = 0.9, .nesterov = true}, "nesterov"},
      {{.lr = 0.05, .momentum = 0.5, .weight_decay = 0.1, .maximize = true}, "wd maximize"},
  };
  for (const Case& c : cases) {
    for (bool fused : {true, false}) {
      ox::Tensor p = leaf(kStart);
      optim::SGDOptions o = c.o;
      o.fused = fused;
      optim::SGD opt({p}, o);
      compare(opt, p,
              sgd_ref(o.lr, o.momentum, o.dampening, o.weight_decay, o.nesterov, o.maximize), 3,
              std::string("SGD ") + c.what + (fused ? " fused" : " unfused"));
    }
  }
}

TEST(OptimFormula, AdamAndAdamW) {
  struct Case {
    optim::AdamOptions o;
    const char* what;
  };
  const std::vector<Case> cases = {
      {{.lr = 0.1}, "plain"},
      {{.lr = 0.1, .betas = {0.8, 0.9}, .eps = 1e-3}, "betas eps"},
      {{.lr = 0.1, .weight_decay = 0.1}, "weight decay"},
      {{.lr = 0.1, .amsgrad = true}, "amsgrad"},
      {{.lr = 0.1, .weight_decay = 0.2, .amsgrad = true, .maximize = true}, "all"},
  };
  for (const Case& c : cases) {
    for (bool fused : {true, false}) {
      const auto& o = c.o;
      const std::string tag = std::string(c.what) + (fused ? " fused" : " unfused");
      ox::Tensor p = leaf(kStart);
      optim::Adam adam({p}, {.lr = o.lr,
                             .betas = o.betas,
                             .eps = o.eps,
                             .weight_decay = o.weight_decay,
                             .amsgrad = o.amsgrad,
                             .maximize = o.maximize,
                             .fused = fused});
      compare(adam, p,
              adam_ref(o.lr, o.betas[0], o.betas[1], o.eps, o.weight_decay, o.amsgrad, o.maximize,
                       false),
              3, "Adam " + tag);
      ox::Tensor q = leaf(kStart);
      optim::AdamW adamw({q}, {.lr = o.lr,
                               .betas = o.betas,
                               .eps = o.eps,
                               .weight_decay = o.weight_decay,
                               .amsgrad = o.amsgrad,
                               .maximize = o.maximize,
                               .fused = fused});
      compare(adamw, q,
              adam_ref(o.lr, o.betas[0], o.betas[1], o.eps, o.weight_decay, o.amsgrad, o.maximize,
                       true),
              3, "AdamW " + tag);
    }
  }
  // AdamW's default weight decay is 1e-2.
  ox::Tensor q = leaf(kStart);
  optim::AdamW adamw({q}, {.lr = 0.1});
  EXPECT_EQ(adamw.param_groups()[0].weight_decay, 1e-2);
  compare(adamw, q, adam_ref(0.1, 0.9, 0.999, 1e-8, 1e-2, false, false, true), 3, "AdamW default");
}

TEST(OptimFormula, RMSprop) {
  const std::vector<optim::RMSpropOptions> cases = {
      {.lr = 0.01},
      {.lr = 0.01,
       .alpha = 0.9,
       .eps = 1e-3,
       .weight_decay = 0.1,
       .momentum = 0.9,
       .centered = true},
      {.lr = 0.02, .momentum = 0.5, .maximize = true},
      {.lr = 0.02, .centered = true},
  };
  for (const auto& o : cases) {
    ox::Tensor p = leaf(kStart);
    optim::RMSprop opt({p}, o);
    compare(
        opt, p,
        [&](std::vector<double>& x, std::vector<double> g, RefState& s, int) {
          auto& sq = ref_buffer(s, "sq", x.size());
          auto& ga = ref_buffer(s, "ga", x.size());
          auto& buf = ref_buffer(s, "buf", x.size());
          for (size_t i = 0; i < x.size(); ++i) {
            double gi = o.maximize ? -g[i] : g[i];
            gi += o.weight_decay * x[i];
            sq[i] = o.alpha * sq[i] + (1 - o.alpha) * gi * gi;
            double avg = sq[i];
            if (o.centered) {
              ga[i] = o.alpha * ga[i] + (1 - o.alpha) * gi;
              avg -= ga[i] * ga[i];
            }
            avg = std::sqrt(avg) + o.eps;
            if (o.momentum > 0) {
              buf[i] = o.momentum * buf[i] + gi / avg;
              x[i] -= o.lr * buf[i];
            } else {
              x[i] -= o.lr * gi / avg;
            }
          }
        },
        3, "RMSprop");
  }
}

TEST(OptimFormula, Adagrad) {
  const std::vector<optim::AdagradOptions> cases = {
      {.lr = 0.1},
      {.lr = 0.1,
       .lr_decay = 0.1,
       .weight_decay = 0.1,
       .initial_accumulator_value = 0.5,
       .eps = 1e-3},
      {.lr = 0.1, .maximize = true},
  };
  for (const auto& o : cases) {
    ox::Tensor p = leaf(kStart);
    optim::Adagrad opt({p}, o);
    compare(
        opt, p,
        [&](std::vector<double>& x, std::vector<double> g, RefState& s, int t) {
          auto& sum = ref_buffer(s, "sum", x.size(), o.initial_accumulator_value);
          const double clr = o.lr / (1 + (t - 1) * o.lr_decay);
          for (size_t i = 0; i < x.size(); ++i) {
            double gi = o.maximize ? -g[i] : g[i];
            gi += o.weight_decay * x[i];
            sum[i] += gi * gi;
            x[i] -= clr * gi / (std::sqrt(sum[i]) + o.eps);
          }
        },
        3, "Adagrad");
  }
}

TEST(OptimFormula, Adamax) {
  const std::vector<optim::AdamaxOptions> cases = {
      {.lr = 0.1},
      {.lr = 0.1, .betas = {0.8, 0.5}, .eps = 1e-2, .weight_decay = 0.1},
      {.lr = 0.1, .maximize = true},
  };
  for (const auto& o : cases) {
    ox::Tensor p = leaf(kStart);
    optim::Adamax opt({p}, o);
    compare(
        opt, p,
        [&](std::vector<double>& x, std::vector<double> g, RefState& s, int t) {
          auto& m = ref_buffer(s, "m", x.size());
          auto& u = ref_buffer(s, "u", x.size());
          for (size_t i = 0; i < x.size(); ++i) {
            double gi = o.maximize ? -g[i] : g[i];
            gi += o.weight_decay * x[i];
            m[i] = o.betas[0] * m[i] + (1 - o.betas[0]) * gi;
            u[i] = std::max(o.betas[1] * u[i], std::abs(gi) + o.eps);
            x[i] -= o.lr / (1 - std::pow(o.betas[0], t)) * m[i] / u[i];
          }
        },
        3, "Adamax");
  }
}

TEST(OptimFormula, NAdam) {
  const std::vector<optim::NAdamOptions> cases = {
      {.lr = 0.1},
      {.lr = 0.1, .weight_decay = 0.1},
      {.lr = 0.1,
       .betas = {0.8, 0.9},
       .weight_decay = 0.1,
       .momentum_decay = 0.01,
       .decoupled_weight_decay = true},
      {.lr = 0.1, .maximize = true},
  };
  for (const auto& o : cases) {
    ox::Tensor p = leaf(kStart);
    optim::NAdam opt({p}, o);
    double mu_product = 1;
    compare(
        opt, p,
        [&](std::vector<double>& x, std::vector<double> g, RefState& s, int t) {
          auto& m = ref_buffer(s, "m", x.size());
          auto& v = ref_buffer(s, "v", x.size());
          const auto [b1, b2] = o.betas;
          const double mu = b1 * (1 - 0.5 * std::pow(0.96, t * o.momentum_decay));
          const double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * o.momentum_decay));
          mu_product *= mu;
          for (size_t i = 0; i < x.size(); ++i) {
            double gi = o.maximize ? -g[i] : g[i];
            if (o.decoupled_weight_decay)
              x[i] *= 1 - o.lr * o.weight_decay;
            else
              gi += o.weight_decay * x[i];
            m[i] = b1 * m[i] + (1 - b1) * gi;
            v[i] = b2 * v[i] + (1 - b2) * gi * gi;
            const double denom = std::sqrt(v[i] / (1 - std::pow(b2, t))) + o.eps;
            x[i] -= o.lr * (1 - mu) / (1 - mu_product) * gi / denom;
            x[i] -= o.lr * mu_next / (1 - mu_product * mu_next) * m[i] / denom;
          }
        },
        3, "NAdam");
  }
}

TEST(OptimFormula, RAdam) {
  // beta2 = 0.9 makes rho_inf 19, so the rectified update starts at step 6 (rho_t > 5).
  const std::vector<optim::RAdamOptions> cases = {
      {.lr = 0.1},
      {.lr = 0.1, .betas = {0.8, 0.9}, .weight_decay = 0.1},
      {.lr = 0.1,
       .betas = {0.8, 0.9},
       .eps = 1e-3,
       .weight_decay = 0.1,
       .decoupled_weight_decay = true,
       .maximize = true},
  };
  for (const auto& o : cases) {
    ox::Tensor p = leaf(kStart);
    optim::RAdam opt({p}, o);
    compare(
        opt, p,
        [&](std::vector<double>& x, std::vector<double> g, RefState& s, int t) {
          auto& m = ref_buffer(s, "m", x.size());
          auto& v = ref_buffer(s, "v", x.size());
          const auto [b1, b2] = o.betas;
          const double rho_inf = 2 / (1 - b2) - 1;
          const double rho_t = rho_inf - 2 * t * std::pow(b2, t) / (1 - std::pow(b2, t));
          for (size_t i = 0; i < x.size(); ++i) {
            double gi = o.maximize ? -g[i] : g[i];
            if (o.decoupled_weight_decay)
              x[i] *= 1 - o.lr * o.weight_decay;
            else
              gi += o.weight_decay * x[i];
            m[i] = b1 * m[i] + (1 - b1) * gi;
            v[i] = b2 * v[i] + (1 - b2) * gi * gi;
            const double mhat = m[i] / (1 - std::pow(b1, t));
            if (rho_t > 5) {
              const double r = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf /
                                         ((rho_inf - 4) * (rho_inf - 2) * rho_t));
              const double l = std::sqrt(1 - std::pow(b2, t)) / (std::sqrt(v[i]) + o.eps);
              x[i] -= o.lr * mhat * r * l;
            } else {
              x[i] -= o.lr * mhat;
            }
          }
        },
        8, "RAdam");
  }
}

TEST(OptimFormula, Lion) {
  const std::vector<optim::LionOptions> cases = {
      {.lr = 0.01},
      {.lr = 0.01, .betas = {0.8, 0.95}, .weight_decay = 0.5},
      {.lr = 0.01, .maximize = true},
  };
  for (const auto& o : cases) {
    ox::Tensor p = leaf(kStart);
    optim::Lion opt({p}, o);
    compare(
        opt, p,
        [&](std::vector<double>& x, std::vector<double> g, RefState& s, int) {
          auto& m = ref_buffer(s, "m", x.size());
          const auto [b1, b2] = o.betas;
          for (size_t i = 0; i < x.size(); ++i) {
            const double gi = o.maximize ? -g[i] : g[i];
            const double c = b1 * m[i] + (1 - b1) * gi;
            const double sign = c > 0 ? 1 : c < 0 ? -1 : 0;
            x[i] = x[i] * (1 - o.lr * o.weight_decay) - o.lr * sign;
            m[i] = b2 * m[i] + (1 - b2) * gi;
          }
        },
        3, "Lion");
  }
}

TEST(OptimFormula, SkipsParamsWithoutGradAndKeepsTheHandle) {
  ox::Tensor a = leaf(kStart), b = leaf({1.0, 2.0});
  const auto* storage = a.storage().get();
  optim::Adam opt({a, b}, {.lr = 0.1});
  set_grad(a, grad_at(1, kStart.size()));
  opt.step();
  EXPECT_EQ(b.to_vector<double>(), (std::vector<double>{1.0, 2.0}));
  EXPECT_TRUE(opt.state(1).empty());
  EXPECT_FALSE(opt.state(0).empty());
  EXPECT_EQ(a.storage().get(), storage);  // updated in place
  EXPECT_TRUE(a.is_leaf());
  EXPECT_TRUE(a.requires_grad());
  EXPECT_NE(a.to_vector<double>(), kStart);
}

// f32 takes the fused path, f16 and bf16 the composed one; all follow the f64 formula within
// their precision.
TEST(OptimFormula, LowPrecisionParams) {
  const std::vector<std::pair<ox::DType, double>> dtypes = {
      {ox::kF32, 1e-5}, {ox::kF16, 1e-2}, {ox::kBF16, 5e-2}};
  for (const auto& [dtype, tol] : dtypes) {
    ox::Tensor p = leaf(kStart, dtype);
    optim::AdamW opt({p}, {.lr = 0.1, .weight_decay = 0.1, .amsgrad = true});
    std::vector<double> want = kStart;
    RefState state;
    const RefStep ref = adam_ref(0.1, 0.9, 0.999, 1e-8, 0.1, true, false, true);
    for (int k = 1; k <= 3; ++k) {
      const std::vector<double> g = grad_at(k, kStart.size());
      set_grad(p, g);
      opt.step();
      ref(want, g, state, k);
    }
    EXPECT_EQ(p.dtype(), dtype);
    expect_close(p.to_vector<double>(), want, tol, 0, std::string(ox::dtype_name(dtype)));
    EXPECT_EQ(opt.state_dict().at("state.0.exp_avg").dtype(), dtype);
  }
}
