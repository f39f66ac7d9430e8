#include "oxmera/nn/pooling.h"

#include <ostream>

namespace ox::nn {

namespace {
std::ostream& print(std::ostream& os, const IntPair& p) {
  return p.h == p.w ? os << p.h : os << "(" << p.h << ", " << p.w << ")";
}
}  // namespace

MaxPool2dImpl::MaxPool2dImpl(IntPair kernel, const MaxPool2dOptions& options)
    : Module("MaxPool2d"), kernel_size(kernel), options(options) {}

Tensor MaxPool2dImpl::forward(const Tensor& input) const {
  return max_pool2d(input, kernel_size, options);
}

void MaxPool2dImpl::pretty_print(std::ostream& os) const {
  os << "MaxPool2d(kernel_size=";
  print(os, kernel_size) << ", stride=";
  print(os, options.stride.value.value_or(kernel_size)) << ", padding=";
  print(os, options.padding) << ", dilation=";
  print(os, options.dilation) << ", ceil_mode=" << (options.ceil_mode ? "true" : "false") << ")";
}

AvgPool2dImpl::AvgPool2dImpl(IntPair kernel, const AvgPool2dOptions& options)
    : Module("AvgPool2d"), kernel_size(kernel), options(options) {}

Tensor AvgPool2dImpl::forward(const Tensor& input) const {
  return avg_pool2d(input, kernel_size, options);
}

void AvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "AvgPool2d(kernel_size=";
  print(os, kernel_size) << ", stride=";
  print(os, options.stride.value.value_or(kernel_size)) << ", padding=";
  print(os, options.padding) << ")";
}

AdaptiveAvgPool2dImpl::AdaptiveAvgPool2dImpl(IntPair output_size)
    : Module("AdaptiveAvgPool2d"), output_size(output_size) {}

Tensor AdaptiveAvgPool2dImpl::forward(const Tensor& input) const {
  return adaptive_avg_pool2d(input, output_size);
}

void AdaptiveAvgPool2dImpl::pretty_print(std::ostream& os) const {
  os << "AdaptiveAvgPool2d(output_size=";
  print(os, output_size) << ")";
}

}  // namespace ox::nn
