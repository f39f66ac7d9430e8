#pragma once
// Dropout and Dropout2d: active in training mode only.

#include "oxmera/nn/module.h"

namespace ox::nn {

class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  double p;
};
OX_MODULE(Dropout);

// Zeroes whole channels of [N, C, H, W] (or [C, H, W]).
class Dropout2dImpl : public Module {
 public:
  explicit Dropout2dImpl(double p = 0.5);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  double p;
};
OX_MODULE(Dropout2d);

}  // namespace ox::nn
