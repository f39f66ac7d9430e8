#pragma once
// The host half of the CUDA optimizer step (optim.cpp, kernels/optim.cu): OptimStepParams cast
// to the parameter's dtype exactly where the CPU backend casts them (cpu/optim_step.cpp), packed
// as the kernels' OptimScalars argument. Plain C++, tested on the CPU (cuda_norm_test.cpp).

#include "backend/backend.h"
#include "backend/cuda/kernels/optim_math.cuh"

namespace ox::cuda::detail {

template <class T>
kernels::OptimScalars<T> optim_scalars(OptimStepKind kind, const OptimStepParams& p) {
  kernels::OptimScalars<T> s{};
  s.weight_decay = T(p.weight_decay);
  s.param_scale = T(p.param_scale);
  s.update_scale = T(p.update_scale);
  s.lerp_weight = T(p.lerp_weight);
  s.lerp_rest = T(1.0 - p.lerp_weight);
  s.beta2 = T(p.beta2);
  s.one_minus_beta2 = T(p.one_minus_beta2);
  s.bias_correction2_sqrt = T(p.bias_correction2_sqrt);
  s.eps = T(p.eps);
  s.momentum = T(p.momentum);
  s.one_minus_dampening = T(p.one_minus_dampening);
  s.maximize = p.maximize;
  if (kind == OptimStepKind::Adam) {
    s.coupled_decay = !p.decoupled && p.weight_decay != 0;
    s.decoupled = p.decoupled;
    s.lerp_low = p.lerp_weight < 0.5;
    s.amsgrad = p.amsgrad;
  } else {
    s.coupled_decay = p.weight_decay != 0;
    s.use_momentum = p.momentum != 0;
    s.nesterov = p.nesterov;
    s.init_buffer = p.init_buffer;
  }
  return s;
}

}  // namespace ox::cuda::detail
