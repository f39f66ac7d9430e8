#pragma once
// MaxPool2d, AvgPool2d, AdaptiveAvgPool2d (options as ops.h's pooling ops).

#include "oxmera/nn/module.h"
#include "oxmera/ops.h"

namespace ox::nn {

class MaxPool2dImpl : public Module {
 public:
  using Options = MaxPool2dOptions;
  explicit MaxPool2dImpl(IntPair kernel_size, const MaxPool2dOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  IntPair kernel_size;
  MaxPool2dOptions options;
};
OX_MODULE_WITH_SIGNATURE(MaxPool2d, (IntPair kernel, const MaxPool2dOptions& options = {}),
                         (kernel, options));

class AvgPool2dImpl : public Module {
 public:
  using Options = AvgPool2dOptions;
  explicit AvgPool2dImpl(IntPair kernel_size, const AvgPool2dOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  IntPair kernel_size;
  AvgPool2dOptions options;
};
OX_MODULE_WITH_SIGNATURE(AvgPool2d, (IntPair kernel, const AvgPool2dOptions& options = {}),
                         (kernel, options));

class AdaptiveAvgPool2dImpl : public Module {
 public:
  explicit AdaptiveAvgPool2dImpl(IntPair output_size);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  IntPair output_size;
};
OX_MODULE_WITH_SIGNATURE(AdaptiveAvgPool2d, (IntPair output_size), (output_size));

}  // namespace ox::nn
