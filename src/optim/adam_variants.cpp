// NAdam and RAdam, as torch.optim's single-tensor paths, and Lion (Chen et al. 2023), with
// public ops. Step counts and per-step scalars are host doubles.

#include <cmath>

#include "optim/update.h"
#include "oxmera/autograd.h"
#include "oxmera/optim/lion.h"
#include "oxmera/optim/nadam.h"
#include "oxmera/optim/radam.h"

namespace ox::optim {

using detail::check_nonnegative;

namespace {

// The gradient with weight decay applied either way: decoupled scales the parameter.
Tensor decayed_grad(const Tensor& p, bool maximize, double weight_decay, bool decoupled,
                    double lr) {
  if (decoupled && weight_decay != 0) {
    const_cast<Tensor&>(p).mul_(1 - lr * weight_decay);
    return detail::effective_grad(p, maximize, 0.0);
  }
  return detail::effective_grad(p, maximize, weight_decay);
}

}  // namespace

void NAdamOptions::validate(const char* op) const {
  check_nonnegative(op, "learning rate", lr);
  check_nonnegative(op, "epsilon value", eps);
  detail::check_betas(op, betas);
  check_nonnegative(op, "weight_decay value", weight_decay);
  check_nonnegative(op, "momentum_decay value", momentum_decay);
}

NAdam::NAdam(const std::vector<Tensor>& params, const NAdamOptions& options)
    : NAdam(std::vector<NAdamGroupSpec>{{.params = params}}, options) {}
NAdam::NAdam(const std::vector<NAdamGroupSpec>& groups, const NAdamOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void NAdam::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    const auto [beta1, beta2] = o.betas;
    const double step = detail::next_step(state);
    double* mu_product = state.scalars.find("mu_product");
    if (mu_product == nullptr) mu_product = &state.scalars.insert("mu_product", 1.0);
    Tensor exp_avg = detail::buffer(state, "exp_avg", p);
    Tensor exp_avg_sq = detail::buffer(state, "exp_avg_sq", p);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const Tensor g = decayed_grad(p, o.maximize, o.weight_decay, o.decoupled_weight_decay, o.lr);
    const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * o.momentum_decay));
    const double mu_next = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * o.momentum_decay));
    *mu_product *= mu;
    detail::lerp_(exp_avg, g, 1 - beta1);
    detail::square_average_(exp_avg_sq, g, beta2);
    const Tensor denom = add(sqrt(div(exp_avg_sq, bias_correction2)), o.eps);
    const double mu_product_next = *mu_product * mu_next;
    Tensor& param = const_cast<Tensor&>(p);
    param.add_(div(g, denom), -o.lr * (1. - mu) / (1. - *mu_product));
    param.add_(div(exp_avg, denom), -o.lr * mu_next / (1. - mu_product_next));
  });
}

void RAdamOptions::validate(const char* op) const {
  check_nonnegative(op, "learning rate", lr);
  check_nonnegative(op, "epsilon value", eps);
  detail::check_betas(op, betas);
  check_nonnegative(op, "weight_decay value", weight_decay);
}

RAdam::RAdam(const std::vector<Tensor>& params, const RAdamOptions& options)
    : RAdam(std::vector<RAdamGroupSpec>{{.params = params}}, options) {}
RAdam::RAdam(const std::vector<RAdamGroupSpec>& groups, const RAdamOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void RAdam::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    const auto [beta1, beta2] = o.betas;
    const double step = detail::next_step(state);
    Tensor exp_avg = detail::buffer(state, "exp_avg", p);
    Tensor exp_avg_sq = detail::buffer(state, "exp_avg_sq", p);
    const Tensor g = decayed_grad(p, o.maximize, o.weight_decay, o.decoupled_weight_decay, o.lr);
    detail::lerp_(exp_avg, g, 1 - beta1);
    detail::square_average_(exp_avg_sq, g, beta2);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const Tensor corrected = div(exp_avg, bias_correction1);
    // The length of the approximated simple moving average; the variance is tractable (and
    // the update adaptive) only beyond 5.
    const double rho_inf = 2 / (1 - beta2) - 1;
    const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
    Tensor& param = const_cast<Tensor&>(p);
    if (rho_t > 5.) {
      const double rect =
          std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      const Tensor adaptive_lr = div(std::sqrt(bias_correction2), add(sqrt(exp_avg_sq), o.eps));
      param.add_(mul(mul(mul(corrected, o.lr), adaptive_lr), rect), -1.0);
    } else {
      param.add_(mul(corrected, o.lr), -1.0);
    }
  });
}

void LionOptions::validate(const char* op) const {
  check_nonnegative(op, "learning rate", lr);
  detail::check_betas(op, betas);
  check_nonnegative(op, "weight_decay value", weight_decay);
}

Lion::Lion(const std::vector<Tensor>& params, const LionOptions& options)
    : Lion(std::vector<LionGroupSpec>{{.params = params}}, options) {}
Lion::Lion(const std::vector<LionGroupSpec>& groups, const LionOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void Lion::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    const auto [beta1, beta2] = o.betas;
    Tensor exp_avg = detail::buffer(state, "exp_avg", p);
    const Tensor g = o.maximize ? neg(p.grad()) : p.grad();
    Tensor& param = const_cast<Tensor&>(p);
    param.mul_(1 - o.lr * o.weight_decay);
    const Tensor update = sign(add(mul(exp_avg, beta1), g, 1 - beta1));
    param.add_(update, -o.lr);
    exp_avg.mul_(beta2);
    exp_avg.add_(g, 1 - beta2);
  });
}

}  // namespace ox::optim
