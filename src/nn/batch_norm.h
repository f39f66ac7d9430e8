#pragma once
// batch_norm with the momentum as a tensor, for BatchNorm's momentum None: the running
// statistics are then the average of every batch seen, a factor of 1 / (batches + 1) that stays
// on the device (PyTorch reads the count back to the host for it).

#include "oxmera/tensor.h"

namespace ox::nn::detail {

// As functional::batch_norm; `momentum` is 0-d, on the input's device.
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, bool training, const Tensor& momentum,
                  double eps);

}  // namespace ox::nn::detail
