#include "oxmera/nn/conv.h"

#include <cmath>
#include <ostream>

#include "oxmera/nn/init.h"

namespace ox::nn {

namespace {

void check_channels(const char* layer, int64_t in, int64_t out, int64_t groups) {
  OX_CHECK(in > 0 && out > 0, Value, layer, "channel counts must be positive, got ", in, " and ",
           out);
  OX_CHECK(groups > 0 && in % groups == 0 && out % groups == 0, Value, layer, "in_channels ", in,
           " and out_channels ", out, " must both be divisible by groups ", groups);
}

// PyTorch's default: kaiming_uniform_(a = √5) for the weight, U(±1/√fan_in) for the bias.
void reset_conv(const Tensor& weight, const Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const int64_t fan_in = init::calculate_fans(weight).fan_in;
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

const char* padding_name(PaddingMode mode) { return mode == PaddingMode::Same ? "same" : "valid"; }

}  // namespace

Conv1dImpl::Conv1dImpl(int64_t in, int64_t out, int64_t kernel, const Conv1dOptions& options)
    : Module("Conv1d"), in_channels(in), out_channels(out), kernel_size(kernel), options(options) {
  check_channels("Conv1d", in, out, options.groups);
  OX_CHECK(kernel > 0, Value, "Conv1d", "kernel_size must be positive, got ", kernel);
  weight = register_parameter("weight", empty({out, in / options.groups, kernel}));
  if (options.bias) bias = register_parameter("bias", empty({out}));
  reset_parameters();
}

void Conv1dImpl::reset_parameters() { reset_conv(weight, bias); }

Tensor Conv1dImpl::forward(const Tensor& input) const {
  check_input_dtype("Conv1d", input, weight);
  return conv1d(input, weight, bias,
                {.stride = options.stride,
                 .padding = options.padding,
                 .dilation = options.dilation,
                 .groups = options.groups});
}

void Conv1dImpl::pretty_print(std::ostream& os) const {
  os << "Conv1d(" << in_channels << ", " << out_channels << ", kernel_size=(" << kernel_size
     << ",), stride=(" << options.stride << ",)";
  if (options.padding.mode != PaddingMode::Explicit)
    os << ", padding=" << padding_name(options.padding.mode);
  else if (options.padding.value != 0)
    os << ", padding=(" << options.padding.value << ",)";
  if (options.dilation != 1) os << ", dilation=(" << options.dilation << ",)";
  if (options.groups != 1) os << ", groups=" << options.groups;
  if (!bias.defined()) os << ", bias=false";
  os << ")";
}

Conv2dImpl::Conv2dImpl(int64_t in, int64_t out, IntPair kernel, const Conv2dOptions& options)
    : Module("Conv2d"), in_channels(in), out_channels(out), kernel_size(kernel), options(options) {
  check_channels("Conv2d", in, out, options.groups);
  OX_CHECK(kernel.h > 0 && kernel.w > 0, Value, "Conv2d", "kernel_size must be positive, got ",
           kernel);
  weight = register_parameter("weight", empty({out, in / options.groups, kernel.h, kernel.w}));
  if (options.bias) bias = register_parameter("bias", empty({out}));
  reset_parameters();
}

void Conv2dImpl::reset_parameters() { reset_conv(weight, bias); }

Tensor Conv2dImpl::forward(const Tensor& input) const {
  check_input_dtype("Conv2d", input, weight);
  return conv2d(input, weight, bias,
                {.stride = options.stride,
                 .padding = options.padding,
                 .dilation = options.dilation,
                 .groups = options.groups});
}

void Conv2dImpl::pretty_print(std::ostream& os) const {
  os << "Conv2d(" << in_channels << ", " << out_channels << ", kernel_size=" << kernel_size
     << ", stride=" << options.stride;
  const IntPair& pad = options.padding.value;
  if (options.padding.mode != PaddingMode::Explicit)
    os << ", padding=" << padding_name(options.padding.mode);
  else if (pad.h != 0 || pad.w != 0)
    os << ", padding=" << pad;
  if (options.dilation.h != 1 || options.dilation.w != 1) os << ", dilation=" << options.dilation;
  if (options.groups != 1) os << ", groups=" << options.groups;
  if (!bias.defined()) os << ", bias=false";
  os << ")";
}

ConvTranspose2dImpl::ConvTranspose2dImpl(int64_t in, int64_t out, IntPair kernel,
                                         const ConvTranspose2dOptions& options)
    : Module("ConvTranspose2d"),
      in_channels(in),
      out_channels(out),
      kernel_size(kernel),
      options(options) {
  check_channels("ConvTranspose2d", in, out, options.groups);
  OX_CHECK(kernel.h > 0 && kernel.w > 0, Value, "ConvTranspose2d",
           "kernel_size must be positive, got ", kernel);
  weight = register_parameter("weight", empty({in, out / options.groups, kernel.h, kernel.w}));
  if (options.bias) bias = register_parameter("bias", empty({out}));
  reset_parameters();
}

void ConvTranspose2dImpl::reset_parameters() { reset_conv(weight, bias); }

Tensor ConvTranspose2dImpl::forward(const Tensor& input) const {
  check_input_dtype("ConvTranspose2d", input, weight);
  return conv_transpose2d(input, weight, bias,
                          {.stride = options.stride,
                           .padding = options.padding,
                           .output_padding = options.output_padding,
                           .groups = options.groups,
                           .dilation = options.dilation});
}

void ConvTranspose2dImpl::pretty_print(std::ostream& os) const {
  os << "ConvTranspose2d(" << in_channels << ", " << out_channels << ", kernel_size=" << kernel_size
     << ", stride=" << options.stride;
  if (options.padding.h != 0 || options.padding.w != 0) os << ", padding=" << options.padding;
  if (options.output_padding.h != 0 || options.output_padding.w != 0)
    os << ", output_padding=" << options.output_padding;
  if (options.groups != 1) os << ", groups=" << options.groups;
  if (!bias.defined()) os << ", bias=false";
  os << ")";
}

}  // namespace ox::nn
