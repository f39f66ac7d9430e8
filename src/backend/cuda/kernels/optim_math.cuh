#pragma once
// The per-element arithmetic of the fused optimizer steps (Backend::optim_step), shared by the
// CUDA kernels (kernels/optim.cu) and the host tests, which check it bit for bit against the CPU
// backend (src/backend/cpu/optim_step.cpp). Every expression is the CPU's, in its order and in
// the parameter's dtype, with each host scalar cast to it before (OptimScalars), and every
// operation rounded once (rounding.cuh: no FMA contraction on the device).

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels/rounding.cuh"
#include "core/host_device.h"

namespace ox::cuda::kernels {

// The step's scalars, already in the parameter's dtype T (f32 or f64), and its switches.
template <class T>
struct OptimScalars {
  T weight_decay, param_scale, update_scale;
  // Adam
  T lerp_weight, lerp_rest, beta2, one_minus_beta2, bias_correction2_sqrt, eps;
  // Sgd
  T momentum, one_minus_dampening;
  int32_t maximize;
  int32_t coupled_decay;  // Adam: weight decay added to the gradient; Sgd: weight_decay != 0
  int32_t decoupled;      // Adam: param *= param_scale first
  int32_t lerp_low;       // Adam: lerp_weight < 0.5
  int32_t amsgrad;
  int32_t use_momentum, nesterov, init_buffer;  // Sgd
};

// One element of Adam: updates param, exp_avg, exp_avg_sq and (amsgrad) max_exp_avg_sq at i.
template <class T>
OX_HOST_DEVICE inline void adam_element(T* param, const T* grad, T* exp_avg, T* exp_avg_sq,
                                        T* max_exp_avg_sq, int64_t i, const OptimScalars<T>& s) {
  T g = grad[i];
  if (s.maximize) g = -g;
  T x = param[i];
  if (s.coupled_decay) g = rn::add(g, rn::mul(s.weight_decay, x));
  if (s.decoupled) x = rn::mul(x, s.param_scale);
  T m = exp_avg[i];
  const T diff = rn::sub(g, m);
  m = s.lerp_low ? rn::add(m, rn::mul(s.lerp_weight, diff))
                 : rn::sub(g, rn::mul(s.lerp_rest, diff));
  T v = rn::mul(exp_avg_sq[i], s.beta2);
  v = rn::add(v, rn::mul(s.one_minus_beta2, rn::mul(g, g)));
  exp_avg[i] = m;
  exp_avg_sq[i] = v;
  if (s.amsgrad) {
    v = rn::nan_max(max_exp_avg_sq[i], v);
    max_exp_avg_sq[i] = v;
  }
  const T denom = rn::add(rn::div(rn::sqrt(v), s.bias_correction2_sqrt), s.eps);
  param[i] = rn::add(x, rn::mul(s.update_scale, rn::div(m, denom)));
}

// One element of SGD: updates param and (momentum) the momentum buffer at i.
template <class T>
OX_HOST_DEVICE inline void sgd_element(T* param, const T* grad, T* buffer, int64_t i,
                                       const OptimScalars<T>& s) {
  T d = grad[i];
  if (s.maximize) d = -d;
  const T x = param[i];
  if (s.coupled_decay) d = rn::add(d, rn::mul(s.weight_decay, x));
  if (s.use_momentum) {
    T b = d;
    if (!s.init_buffer) {
      b = rn::mul(buffer[i], s.momentum);
      b = rn::add(b, rn::mul(s.one_minus_dampening, d));
    }
    buffer[i] = b;
    d = s.nesterov ? rn::add(d, rn::mul(s.momentum, b)) : b;
  }
  param[i] = rn::add(x, rn::mul(s.update_scale, d));
}

}  // namespace ox::cuda::kernels
