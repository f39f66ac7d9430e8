// SGD, as torch.optim.SGD's single-tensor path (and the fused primitive, the same bits).

#include "oxmera/optim/sgd.h"

#include "optim/update.h"
#include "oxmera/autograd.h"

namespace ox::optim {

void SGDOptions::validate(const char* op) const {
  detail::check_nonnegative(op, "learning rate", lr);
  detail::check_nonnegative(op, "momentum value", momentum);
  detail::check_nonnegative(op, "weight_decay value", weight_decay);
  OX_CHECK(!nesterov || (momentum > 0 && dampening == 0), Value, op,
           "Nesterov momentum requires a momentum and zero dampening; got momentum ", momentum,
           " and dampening ", dampening);
}

SGD::SGD(const std::vector<Tensor>& params, const SGDOptions& options)
    : SGD(std::vector<SGDGroupSpec>{{.params = params}}, options) {}
SGD::SGD(const std::vector<SGDGroupSpec>& groups, const SGDOptions& options)
    : GroupedOptimizer(options) {
  init(groups);
}

void SGD::step() {
  NoGradGuard no_grad;
  for_each_param_with_grad([](const Group& o, const Tensor& p, ParamState& state) {
    const Tensor grad = p.grad();
    const bool has_buffer = state.buffers.contains("momentum_buffer");
    if (o.fused.value_or(true) && detail::can_fuse(p, grad)) {
      const OptimStepParams params{.maximize = o.maximize,
                                   .weight_decay = o.weight_decay,
                                   .update_scale = -o.lr,
                                   .momentum = o.momentum,
                                   .one_minus_dampening = 1.0 - o.dampening,
                                   .nesterov = o.nesterov,
                                   .init_buffer = !has_buffer};
      const Tensor buf = o.momentum != 0 ? detail::buffer(state, "momentum_buffer", p) : Tensor();
      detail::fused_step(OptimStepKind::Sgd, p, grad, buf, {}, {}, params);
      return;
    }
    Tensor d = detail::effective_grad(p, o.maximize, o.weight_decay);
    if (o.momentum != 0) {
      Tensor buf = detail::buffer(state, "momentum_buffer", p);
      if (!has_buffer) {
        buf.copy_(d);
      } else {
        buf.mul_(o.momentum);
        buf.add_(d, 1.0 - o.dampening);
      }
      d = o.nesterov ? add(d, buf, o.momentum) : buf;
    }
    const_cast<Tensor&>(p).add_(d, -o.lr);
  });
}

}  // namespace ox::optim
