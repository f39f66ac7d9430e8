#pragma once
// Gradient clipping, as torch.nn.utils.clip_grad_norm_ / clip_grad_value_.

#include <vector>

#include "oxmera/tensor.h"

namespace ox::nn::utils {

// Scales the gradients of `params` in place so that their total norm (the norm_type-norm of the
// per-gradient norms; inf: the largest |element|) is at most max_norm: each gradient is
// multiplied by min(max_norm / (total + 1e-6), 1), a 0-d tensor, so nothing is read back to the
// host (except for error_if_nonfinite, which reads the total once and throws a Value error when
// it is NaN or infinite). Parameters without gradients are skipped. Returns the total norm
// (0-d, of the first gradient's dtype; 0 when no parameter has a gradient).
Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2.0,
                       bool error_if_nonfinite = false);
// Clamps every gradient into [-clip_value, clip_value] in place.
void clip_grad_value_(const std::vector<Tensor>& params, double clip_value);

}  // namespace ox::nn::utils
