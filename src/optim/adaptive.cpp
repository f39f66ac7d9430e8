// RMSprop, Adagrad and Adamax, as torch.optim's single-tensor paths, with public ops.

#include <cmath>

#include "optim/update.h"
#include "oxmera/autograd.h"
#include "oxmera/optim/adagrad.h"
#include "oxmera/optim/adamax.h"
#include "oxmera/optim/rmsprop.h"

namespace ox::optim {

using detail::check_nonnegative;

void RMSpropOptions::validate(const char* op) const {
  check_nonnegative(op, "learning rate", lr);
  check_nonnegative(op, "epsilon value", eps);
  check_nonnegative(op, "momentum value", momentum);
  check_nonnegative(op, "weight_decay value", weight_decay);
  check_nonnegative(op, "alpha value", alpha);
}

RMSprop::RMSprop(const std::vector<Tensor>& params, const RMSpropOptions& options)
    : RMSprop(std::vector<RMSpropGroupSpec>{{.params = params}}, options) {}
RMSprop::RMSprop(const std::vector<RMSpropGroupSpec>& groups, const RMSpropOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void RMSprop::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    detail::next_step(state);
    Tensor square_avg = detail::buffer(state, "square_avg", p);
    Tensor momentum_buffer =
        o.momentum > 0 ? detail::buffer(state, "momentum_buffer", p) : Tensor();
    Tensor grad_avg = o.centered ? detail::buffer(state, "grad_avg", p) : Tensor();
    const Tensor g = detail::effective_grad(p, o.maximize, o.weight_decay);
    detail::square_average_(square_avg, g, o.alpha);
    Tensor avg;
    if (o.centered) {
      detail::lerp_(grad_avg, g, 1 - o.alpha);
      avg = sqrt(sub(square_avg, mul(grad_avg, grad_avg)));
    } else {
      avg = sqrt(square_avg);
    }
    avg = add(avg, o.eps);
    Tensor& param = const_cast<Tensor&>(p);
    if (o.momentum > 0) {
      momentum_buffer.mul_(o.momentum);
      momentum_buffer.add_(div(g, avg));
      param.add_(momentum_buffer, -o.lr);
    } else {
      param.add_(div(g, avg), -o.lr);
    }
  });
}

void AdagradOptions::validate(const char* op) const {
  check_nonnegative(op, "learning rate", lr);
  check_nonnegative(op, "lr_decay value", lr_decay);
  check_nonnegative(op, "weight_decay value", weight_decay);
  check_nonnegative(op, "initial_accumulator_value", initial_accumulator_value);
  check_nonnegative(op, "epsilon value", eps);
}

Adagrad::Adagrad(const std::vector<Tensor>& params, const AdagradOptions& options)
    : Adagrad(std::vector<AdagradGroupSpec>{{.params = params}}, options) {}
Adagrad::Adagrad(const std::vector<AdagradGroupSpec>& groups, const AdagradOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void Adagrad::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    const double step = detail::next_step(state);
    Tensor sum = detail::buffer(state, "sum", p, o.initial_accumulator_value);
    const Tensor g = detail::effective_grad(p, o.maximize, o.weight_decay);
    const double clr = o.lr / (1 + (step - 1) * o.lr_decay);
    sum.add_(mul(g, g));
    const Tensor std = add(sqrt(sum), o.eps);
    const_cast<Tensor&>(p).add_(div(g, std), -clr);
  });
}

void AdamaxOptions::validate(const char* op) const {
  check_nonnegative(op, "learning rate", lr);
  check_nonnegative(op, "epsilon value", eps);
  detail::check_betas(op, betas);
  check_nonnegative(op, "weight_decay value", weight_decay);
}

Adamax::Adamax(const std::vector<Tensor>& params, const AdamaxOptions& options)
    : Adamax(std::vector<AdamaxGroupSpec>{{.params = params}}, options) {}
Adamax::Adamax(const std::vector<AdamaxGroupSpec>& groups, const AdamaxOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void Adamax::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    const double step = detail::next_step(state);
    Tensor exp_avg = detail::buffer(state, "exp_avg", p);
    Tensor exp_inf = detail::buffer(state, "exp_inf", p);
    const Tensor g = detail::effective_grad(p, o.maximize, o.weight_decay);
    detail::lerp_(exp_avg, g, 1 - o.betas[0]);
    exp_inf.mul_(o.betas[1]);
    exp_inf.copy_(maximum(exp_inf, add(abs(g), o.eps)));
    const double clr = o.lr / (1 - std::pow(o.betas[0], step));
    const_cast<Tensor&>(p).add_(div(exp_avg, exp_inf), -clr);
  });
}

}  // namespace ox::optim
