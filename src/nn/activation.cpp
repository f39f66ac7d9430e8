#include "oxmera/nn/activation.h"

#include <ostream>

namespace ox::nn {

LeakyReLUImpl::LeakyReLUImpl(double slope) : Module("LeakyReLU"), negative_slope(slope) {}
Tensor LeakyReLUImpl::forward(const Tensor& input) const {
  return leaky_relu(input, negative_slope);
}
void LeakyReLUImpl::pretty_print(std::ostream& os) const {
  os << "LeakyReLU(negative_slope=" << negative_slope << ")";
}

ELUImpl::ELUImpl(double alpha) : Module("ELU"), alpha(alpha) {}
Tensor ELUImpl::forward(const Tensor& input) const { return elu(input, alpha); }
void ELUImpl::pretty_print(std::ostream& os) const { os << "ELU(alpha=" << alpha << ")"; }

GELUImpl::GELUImpl(std::string approximate) : Module("GELU"), approximate(std::move(approximate)) {
  OX_CHECK(this->approximate == "none" || this->approximate == "tanh", Value, "GELU",
           "approximate must be 'none' or 'tanh', got '", this->approximate, "'");
}
Tensor GELUImpl::forward(const Tensor& input) const { return gelu(input, approximate); }
void GELUImpl::pretty_print(std::ostream& os) const {
  os << "GELU(approximate='" << approximate << "')";
}

SoftplusImpl::SoftplusImpl(const SoftplusOptions& options) : Module("Softplus"), options(options) {}
Tensor SoftplusImpl::forward(const Tensor& input) const {
  return softplus(input, options.beta, options.threshold);
}
void SoftplusImpl::pretty_print(std::ostream& os) const {
  os << "Softplus(beta=" << options.beta << ", threshold=" << options.threshold << ")";
}

SoftmaxImpl::SoftmaxImpl(int64_t dim) : Module("Softmax"), dim(dim) {}
Tensor SoftmaxImpl::forward(const Tensor& input) const { return softmax(input, dim); }
void SoftmaxImpl::pretty_print(std::ostream& os) const { os << "Softmax(dim=" << dim << ")"; }

LogSoftmaxImpl::LogSoftmaxImpl(int64_t dim) : Module("LogSoftmax"), dim(dim) {}
Tensor LogSoftmaxImpl::forward(const Tensor& input) const { return log_softmax(input, dim); }
void LogSoftmaxImpl::pretty_print(std::ostream& os) const { os << "LogSoftmax(dim=" << dim << ")"; }

}  // namespace ox::nn
