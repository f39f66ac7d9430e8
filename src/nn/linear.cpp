#include "oxmera/nn/linear.h"

#include <cmath>
#include <ostream>

#include "oxmera/nn/functional.h"
#include "oxmera/nn/init.h"

namespace ox::nn {

LinearImpl::LinearImpl(int64_t in, int64_t out, const LinearOptions& options)
    : Module("Linear"), in_features(in), out_features(out) {
  OX_CHECK(in >= 0 && out >= 0, Value, "Linear", "feature counts must be >= 0, got ", in, " and ",
           out);
  weight = register_parameter("weight", empty({out, in}));
  if (options.bias) bias = register_parameter("bias", empty({out}));
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0;
    init::uniform_(bias, -bound, bound);
  }
}

Tensor LinearImpl::forward(const Tensor& input) const {
  check_input_dtype("Linear", input, weight);
  return functional::linear(input, weight, bias);
}

void LinearImpl::pretty_print(std::ostream& os) const {
  os << "Linear(in_features=" << in_features << ", out_features=" << out_features
     << ", bias=" << (bias.defined() ? "true" : "false") << ")";
}

BilinearImpl::BilinearImpl(int64_t in1, int64_t in2, int64_t out, const LinearOptions& options)
    : Module("Bilinear"), in1_features(in1), in2_features(in2), out_features(out) {
  OX_CHECK(in1 >= 0 && in2 >= 0 && out >= 0, Value, "Bilinear", "feature counts must be >= 0, got ",
           in1, ", ", in2, " and ", out);
  weight = register_parameter("weight", empty({out, in1, in2}));
  if (options.bias) bias = register_parameter("bias", empty({out}));
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  const double bound = in1_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in1_features)) : 0;
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) const {
  check_input_dtype("Bilinear", input1, weight);
  check_input_dtype("Bilinear", input2, weight);
  return functional::bilinear(input1, input2, weight, bias);
}

void BilinearImpl::pretty_print(std::ostream& os) const {
  os << "Bilinear(in1_features=" << in1_features << ", in2_features=" << in2_features
     << ", out_features=" << out_features << ", bias=" << (bias.defined() ? "true" : "false")
     << ")";
}

FlattenImpl::FlattenImpl(const FlattenOptions& options) : Module("Flatten"), options(options) {}

Tensor FlattenImpl::forward(const Tensor& input) const {
  return input.flatten(options.start_dim, options.end_dim);
}

void FlattenImpl::pretty_print(std::ostream& os) const {
  os << "Flatten(start_dim=" << options.start_dim << ", end_dim=" << options.end_dim << ")";
}

UnflattenImpl::UnflattenImpl(int64_t dim, Shape sizes)
    : Module("Unflatten"), dim(dim), sizes(std::move(sizes)) {}

Tensor UnflattenImpl::forward(const Tensor& input) const { return input.unflatten(dim, sizes); }

void UnflattenImpl::pretty_print(std::ostream& os) const {
  os << "Unflatten(dim=" << dim << ", unflattened_size=" << sizes << ")";
}

}  // namespace ox::nn
