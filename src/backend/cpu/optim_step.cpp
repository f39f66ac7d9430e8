// The fused optimizer steps: one pass over each parameter, the parameter and its state updated
// in one loop. Every expression is the one the op-composed path of src/optim evaluates, in the
// same order and in the parameter's dtype (each host scalar cast to it first), so both paths
// give the same bits; the elements are independent, so any split over threads does too.

#include <cmath>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/elementwise.h"

namespace ox::cpu {
namespace {

// BinaryOp::Maximum's rule: NaN propagates.
template <class T>
inline T nan_max(T x, T y) {
  if (x != x || y != y) return x + y;
  return x < y ? y : x;
}

template <class T>
void adam_step(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
               const OptimStepParams& p) {
  const T weight_decay = T(p.weight_decay), param_scale = T(p.param_scale);
  const T lerp_weight = T(p.lerp_weight), lerp_rest = T(1.0 - p.lerp_weight);
  const bool lerp_low = p.lerp_weight < 0.5;
  const T beta2 = T(p.beta2), one_minus_beta2 = T(p.one_minus_beta2);
  const T bias_correction2_sqrt = T(p.bias_correction2_sqrt), eps = T(p.eps);
  const T update_scale = T(p.update_scale);
  const bool coupled_decay = !p.decoupled && p.weight_decay != 0;
  parallel_for(0, n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T g = grad[i];
      if (p.maximize) g = -g;
      T x = param[i];
      if (coupled_decay) g = g + weight_decay * x;
      if (p.decoupled) x = x * param_scale;
      T m = exp_avg[i];
      const T diff = g - m;
      m = lerp_low ? m + lerp_weight * diff : g - lerp_rest * diff;
      T v = exp_avg_sq[i] * beta2;
      v = v + one_minus_beta2 * (g * g);
      exp_avg[i] = m;
      exp_avg_sq[i] = v;
      if (p.amsgrad) {
        v = nan_max(max_exp_avg_sq[i], v);
        max_exp_avg_sq[i] = v;
      }
      const T denom = std::sqrt(v) / bias_correction2_sqrt + eps;
      param[i] = x + update_scale * (m / denom);
    }
  });
}

template <class T>
void sgd_step(T* param, const T* grad, T* buffer, int64_t n, const OptimStepParams& p) {
  const T weight_decay = T(p.weight_decay), momentum = T(p.momentum);
  const T one_minus_dampening = T(p.one_minus_dampening), update_scale = T(p.update_scale);
  const bool use_momentum = p.momentum != 0;
  parallel_for(0, n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T d = grad[i];
      if (p.maximize) d = -d;
      const T x = param[i];
      if (p.weight_decay != 0) d = d + weight_decay * x;
      if (use_momentum) {
        T b = d;
        if (!p.init_buffer) {
          b = buffer[i] * momentum;
          b = b + one_minus_dampening * d;
        }
        buffer[i] = b;
        d = p.nesterov ? d + momentum * b : b;
      }
      param[i] = x + update_scale * d;
    }
  });
}

template <class T>
T* typed(const StridedArray& a) {
  return static_cast<T*>(a.data);
}

}  // namespace

void optim_step(OptimStepKind kind, const StridedArray& param, const StridedArray& grad,
                const StridedArray& buf1, const StridedArray& buf2, const StridedArray& buf3,
                const OptimStepParams& params) {
  const int64_t n = param.numel();
  if (n == 0) return;
  dispatch_floating(param.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (kind == OptimStepKind::Adam)
        adam_step<T>(typed<T>(param), typed<T>(grad), typed<T>(buf1), typed<T>(buf2),
                     typed<T>(buf3), n, params);
      else
        sgd_step<T>(typed<T>(param), typed<T>(grad), typed<T>(buf1), n, params);
    } else {
      OX_ASSERT(false, "optim_step takes f32 and f64, got ", param.dtype);
    }
  });
}

}  // namespace ox::cpu
