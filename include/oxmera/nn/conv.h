#pragma once
// Conv1d, Conv2d, ConvTranspose2d. Options are aggregates:
// `Conv2d(1, 32, 3, {.stride = 2, .padding = 1})`, `{.padding = "same"}`.

#include "oxmera/nn/module.h"
#include "oxmera/ops.h"

namespace ox::nn {

struct Conv1dOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t stride = 1;
  Conv1dPadding padding = 0;
  int64_t dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};
struct Conv2dOptions {
  OX_NAMED_FIELDS_ONLY;
  IntPair stride = 1;
  Conv2dPadding padding = 0;
  IntPair dilation = 1;
  int64_t groups = 1;
  bool bias = true;
};
struct ConvTranspose2dOptions {
  OX_NAMED_FIELDS_ONLY;
  IntPair stride = 1;
  IntPair padding = 0;
  IntPair output_padding = 0;
  int64_t groups = 1;
  bool bias = true;
  IntPair dilation = 1;
};

// Weights and biases ~ U(-1/√fan_in, 1/√fan_in), fan_in = in_channels / groups × kernel area,
// as PyTorch's kaiming_uniform_(a = √5).
class Conv1dImpl : public Module {
 public:
  using Options = Conv1dOptions;
  Conv1dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
             const Conv1dOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t in_channels, out_channels, kernel_size;
  Conv1dOptions options;
  Tensor weight, bias;  // weight [out, in / groups, k]
};
OX_MODULE(Conv1d);

class Conv2dImpl : public Module {
 public:
  using Options = Conv2dOptions;
  Conv2dImpl(int64_t in_channels, int64_t out_channels, IntPair kernel_size,
             const Conv2dOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t in_channels, out_channels;
  IntPair kernel_size;
  Conv2dOptions options;
  Tensor weight, bias;  // weight [out, in / groups, kh, kw]
};
OX_MODULE_WITH_SIGNATURE(Conv2d,
                         (int64_t in, int64_t out, IntPair kernel,
                          const Conv2dOptions& options = {}),
                         (in, out, kernel, options));

class ConvTranspose2dImpl : public Module {
 public:
  using Options = ConvTranspose2dOptions;
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, IntPair kernel_size,
                      const ConvTranspose2dOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t in_channels, out_channels;
  IntPair kernel_size;
  ConvTranspose2dOptions options;
  Tensor weight, bias;  // weight [in, out / groups, kh, kw]
};
OX_MODULE_WITH_SIGNATURE(ConvTranspose2d,
                         (int64_t in, int64_t out, IntPair kernel,
                          const ConvTranspose2dOptions& options = {}),
                         (in, out, kernel, options));

}  // namespace ox::nn
