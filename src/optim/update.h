#pragma once
// Pieces shared by the optimizers' op-composed steps, and the door to the fused primitive.
// Each piece evaluates the same expressions, in the same order, as cpu/optim_step.cpp.

#include <string>

#include "backend/backend.h"
#include "oxmera/ops.h"
#include "oxmera/optim/optimizer.h"

namespace ox::optim::detail {

// The gradient as the update sees it: negated when maximizing, plus weight_decay * param (L2).
inline Tensor effective_grad(const Tensor& param, bool maximize, double weight_decay) {
  Tensor g = maximize ? neg(param.grad()) : param.grad();
  if (weight_decay != 0) g = add(g, param, weight_decay);
  return g;
}

// avg = lerp(avg, g, weight) in place, in PyTorch's two-sided form.
inline void lerp_(Tensor& avg, const Tensor& g, double weight) {
  const Tensor diff = sub(g, avg);
  if (weight < 0.5)
    avg.add_(diff, weight);
  else
    avg.copy_(sub(g, diff, 1.0 - weight));
}

// avg = avg * beta + (1 - beta) * g * g in place.
inline void square_average_(Tensor& avg, const Tensor& g, double beta) {
  avg.mul_(beta);
  avg.add_(mul(g, g), 1.0 - beta);
}

// The buffer `name` of a parameter's state, created (filled with `value`, contiguous, of the
// parameter's dtype and device) when missing. State follows its parameter: after
// module->to(...) the buffer is converted to the parameter's new dtype and device.
inline Tensor& buffer(ParamState& state, const std::string& name, const Tensor& param,
                      double value = 0) {
  if (Tensor* found = state.buffers.find(name)) {
    if (found->dtype() != param.dtype() || found->device() != param.device())
      *found = found->to(param.device(), param.dtype()).contiguous();
    return *found;
  }
  return state.buffers.insert(
      name, full(param.shape(), value, {.dtype = param.dtype(), .device = param.device()}));
}

// Increments and returns the step count.
inline double next_step(ParamState& state) {
  double* step = state.scalars.find("step");
  if (step == nullptr) step = &state.scalars.insert("step", 0.0);
  return *step += 1;
}

// Option checks, as PyTorch's constructors do them (NaN fails too).
inline void check_nonnegative(const char* op, const char* option, double value) {
  OX_CHECK(value >= 0, Value, op, "invalid ", option, " ", value, ": must be >= 0");
}
inline void check_betas(const char* op, const Betas& betas) {
  for (int i = 0; i < 2; ++i)
    OX_CHECK(betas[i] >= 0 && betas[i] < 1, Value, op, "invalid beta parameter at index ", i, ": ",
             betas[i], " is not in [0, 1)");
}

// Whether the fused primitive takes this parameter: f32 or f64, contiguous, its gradient of the
// same dtype, shape and device, contiguous too.
bool can_fuse(const Tensor& param, const Tensor& grad);
// Calls the backend's optim_step (undefined buffers pass as null) and bumps the versions of
// everything it wrote.
void fused_step(OptimStepKind kind, const Tensor& param, const Tensor& grad, const Tensor& buf1,
                const Tensor& buf2, const Tensor& buf3, const OptimStepParams& params);

}  // namespace ox::optim::detail
