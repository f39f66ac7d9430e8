// Adam and AdamW, as torch.optim.Adam / AdamW's single-tensor, non-capturable path: the step
// count and bias corrections are host doubles. The fused primitive computes the same bits.

#include "oxmera/optim/adam.h"

#include <cmath>

#include "optim/update.h"
#include "oxmera/autograd.h"

namespace ox::optim {
namespace {

template <class Options>
void validate_adam(const Options& o, const char* op) {
  detail::check_nonnegative(op, "learning rate", o.lr);
  detail::check_nonnegative(op, "epsilon value", o.eps);
  detail::check_betas(op, o.betas);
  detail::check_nonnegative(op, "weight_decay value", o.weight_decay);
}

// One parameter's update; `decoupled` is AdamW's param *= 1 - lr * weight_decay.
template <class Group>
void adam_update(const Group& o, const Tensor& p, ParamState& state, bool decoupled) {
  const Tensor grad = p.grad();
  const auto [beta1, beta2] = o.betas;
  const double step = detail::next_step(state);
  const double bias_correction1 = 1 - std::pow(beta1, step);
  const double bias_correction2 = 1 - std::pow(beta2, step);
  const double step_size = o.lr / bias_correction1;
  const double bias_correction2_sqrt = std::sqrt(bias_correction2);
  // Handles, not references: creating a buffer may move the others.
  Tensor exp_avg = detail::buffer(state, "exp_avg", p);
  Tensor exp_avg_sq = detail::buffer(state, "exp_avg_sq", p);
  Tensor max_exp_avg_sq = o.amsgrad ? detail::buffer(state, "max_exp_avg_sq", p) : Tensor();

  if (o.fused.value_or(true) && detail::can_fuse(p, grad)) {
    const OptimStepParams params{.maximize = o.maximize,
                                 .weight_decay = o.weight_decay,
                                 .decoupled = decoupled,
                                 .param_scale = 1 - o.lr * o.weight_decay,
                                 .update_scale = -step_size,
                                 .lerp_weight = 1 - beta1,
                                 .beta2 = beta2,
                                 .one_minus_beta2 = 1 - beta2,
                                 .bias_correction2_sqrt = bias_correction2_sqrt,
                                 .eps = o.eps,
                                 .amsgrad = o.amsgrad};
    detail::fused_step(OptimStepKind::Adam, p, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, params);
    return;
  }
  Tensor& param = const_cast<Tensor&>(p);
  const Tensor g = detail::effective_grad(p, o.maximize, decoupled ? 0.0 : o.weight_decay);
  if (decoupled) param.mul_(1 - o.lr * o.weight_decay);
  detail::lerp_(exp_avg, g, 1 - beta1);
  detail::square_average_(exp_avg_sq, g, beta2);
  Tensor second = exp_avg_sq;
  if (o.amsgrad) {
    max_exp_avg_sq.copy_(maximum(max_exp_avg_sq, exp_avg_sq));
    second = max_exp_avg_sq;
  }
  const Tensor denom = add(div(sqrt(second), bias_correction2_sqrt), o.eps);
  param.add_(div(exp_avg, denom), -step_size);
}

}  // namespace

void AdamOptions::validate(const char* op) const { validate_adam(*this, op); }
void AdamWOptions::validate(const char* op) const { validate_adam(*this, op); }

Adam::Adam(const std::vector<Tensor>& params, const AdamOptions& options)
    : Adam(std::vector<AdamGroupSpec>{{.params = params}}, options) {}
Adam::Adam(const std::vector<AdamGroupSpec>& groups, const AdamOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}
AdamW::AdamW(const std::vector<Tensor>& params, const AdamWOptions& options)
    : AdamW(std::vector<AdamWGroupSpec>{{.params = params}}, options) {}
AdamW::AdamW(const std::vector<AdamWGroupSpec>& groups, const AdamWOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void Adam::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    adam_update(o, p, state, /*decoupled=*/false);
  });
}

void AdamW::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    adam_update(o, p, state, /*decoupled=*/true);
  });
}

}  // namespace ox::optim
