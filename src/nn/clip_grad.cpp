// Gradient clipping computed on the gradients' device: the clip coefficient stays a tensor.

#include "oxmera/nn/clip_grad.h"

#include <cmath>

#include "oxmera/autograd.h"
#include "oxmera/ops.h"

namespace ox::nn::utils {

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params)
    if (p.defined() && p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return zeros({});
  const DType dtype = grads[0].dtype();
  const Device device = grads[0].device();
  std::vector<Tensor> norms;
  norms.reserve(grads.size());
  for (const Tensor& g : grads) norms.push_back(norm(g, norm_type).to(device, dtype));
  const Tensor total = norm(stack(norms), norm_type);
  if (error_if_nonfinite) {
    OX_CHECK(isfinite(total).item<bool>(), Value, "clip_grad_norm_", "the total norm of order ",
             norm_type, " of ", grads.size(), " gradients is ", total.item<double>(),
             "; set error_if_nonfinite = false to clip anyway");
  }
  const Tensor clip_coef = clamp(div(max_norm, add(total, 1e-6)), std::nullopt, 1.0);
  for (Tensor& g : grads) g.mul_(clip_coef.to(g.device(), g.dtype()));
  return total;
}

void clip_grad_value_(const std::vector<Tensor>& params, double clip_value) {
  NoGradGuard no_grad;
  for (const Tensor& p : params) {
    if (!p.defined() || !p.grad().defined()) continue;
    Tensor g = p.grad();
    g.clamp_(-clip_value, clip_value);
  }
}

}  // namespace ox::nn::utils
