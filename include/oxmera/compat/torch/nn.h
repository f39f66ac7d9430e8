#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md): torch::nn — options classes
// (nn_options.h), layers and their holders (nn_modules.h), torch::nn::functional and
// torch::nn::init (nn_functional.h), and torch::nn::utils.

#include <vector>

#include "oxmera/compat/torch/core.h"
#include "oxmera/compat/torch/nn_functional.h"
#include "oxmera/compat/torch/nn_modules.h"
#include "oxmera/compat/torch/nn_options.h"

namespace torch::nn::utils {
// As LibTorch: the total norm as a double.
inline double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm,
                              double norm_type = 2.0, bool error_if_nonfinite = false) {
  return ox::nn::utils::clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)
      .item<double>();
}
inline void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  ox::nn::utils::clip_grad_value_(parameters, clip_value);
}
}  // namespace torch::nn::utils
