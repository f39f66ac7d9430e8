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

// Adam's scalars as the loop reads them: passed by value, so no store through param can alias
// them and they stay in registers.
template <class T>
struct AdamScalars {
  T weight_decay, param_scale, lerp_weight, lerp_rest, beta2, one_minus_beta2;
  T bias_correction2_sqrt, eps, update_scale;
  bool lerp_low, maximize, coupled_decay, decoupled;
};

// The flags select per element rather than branch and amsgrad is a template argument, so the
// loop has no control flow and the compiler vectorizes it (with -fno-math-errno for sqrt, set on
// this file in CMakeLists.txt). Vector sqrt, division and selects round as the scalar ones do:
// the bits are the same.
template <bool kAmsgrad, class T>
void adam_range(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq,
                int64_t begin, int64_t end, const AdamScalars<T> c) {
  for (int64_t i = begin; i < end; ++i) {
    T g = grad[i];
    g = c.maximize ? -g : g;
    T x = param[i];
    g = c.coupled_decay ? g + c.weight_decay * x : g;
    x = c.decoupled ? x * c.param_scale : x;
    T m = exp_avg[i];
    const T diff = g - m;
    m = c.lerp_low ? m + c.lerp_weight * diff : g - c.lerp_rest * diff;
    T v = exp_avg_sq[i] * c.beta2;
    v = v + c.one_minus_beta2 * (g * g);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    if constexpr (kAmsgrad) {
      v = nan_max(max_exp_avg_sq[i], v);
      max_exp_avg_sq[i] = v;
    }
    const T denom = std::sqrt(v) / c.bias_correction2_sqrt + c.eps;
    param[i] = x + c.update_scale * (m / denom);
  }
}

template <class T>
void adam_step(T* param, const T* grad, T* exp_avg, T* exp_avg_sq, T* max_exp_avg_sq, int64_t n,
               const OptimStepParams& p) {
  const AdamScalars<T> c{.weight_decay = T(p.weight_decay),
                         .param_scale = T(p.param_scale),
                         .lerp_weight = T(p.lerp_weight),
                         .lerp_rest = T(1.0 - p.lerp_weight),
                         .beta2 = T(p.beta2),
                         .one_minus_beta2 = T(p.one_minus_beta2),
                         .bias_correction2_sqrt = T(p.bias_correction2_sqrt),
                         .eps = T(p.eps),
                         .update_scale = T(p.update_scale),
                         .lerp_low = p.lerp_weight < 0.5,
                         .maximize = p.maximize,
                         .coupled_decay = !p.decoupled && p.weight_decay != 0,
                         .decoupled = p.decoupled};
  const bool amsgrad = p.amsgrad;
  parallel_for(0, n, kElementwiseGrain, [=](int64_t begin, int64_t end) {
    if (amsgrad)
      adam_range<true>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, begin, end, c);
    else
      adam_range<false>(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, begin, end, c);
  });
}

template <class T>
void sgd_step(T* param, const T* grad, T* buffer, int64_t n, const OptimStepParams& p) {
  const T weight_decay = T(p.weight_decay), momentum = T(p.momentum);
  const T one_minus_dampening = T(p.one_minus_dampening), update_scale = T(p.update_scale);
  const bool use_momentum = p.momentum != 0, maximize = p.maximize, decay = p.weight_decay != 0;
  const bool init_buffer = p.init_buffer, nesterov = p.nesterov;
  parallel_for(0, n, kElementwiseGrain, [=](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      T d = grad[i];
      d = maximize ? -d : d;
      const T x = param[i];
      d = decay ? d + weight_decay * x : d;
      if (use_momentum) {
        const T b = init_buffer ? d : buffer[i] * momentum + one_minus_dampening * d;
        buffer[i] = b;
        d = nesterov ? d + momentum * b : b;
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
