#include "oxmera/nn/dropout.h"

#include <ostream>

#include "oxmera/nn/functional.h"

namespace ox::nn {

DropoutImpl::DropoutImpl(double p) : Module("Dropout"), p(p) {
  OX_CHECK(p >= 0 && p <= 1, Value, "Dropout", "probability ", p, " is outside [0, 1]");
}

Tensor DropoutImpl::forward(const Tensor& input) const {
  return functional::dropout(input, p, is_training());
}

void DropoutImpl::pretty_print(std::ostream& os) const { os << "Dropout(p=" << p << ")"; }

Dropout2dImpl::Dropout2dImpl(double p) : Module("Dropout2d"), p(p) {
  OX_CHECK(p >= 0 && p <= 1, Value, "Dropout2d", "probability ", p, " is outside [0, 1]");
}

Tensor Dropout2dImpl::forward(const Tensor& input) const {
  return functional::dropout2d(input, p, is_training());
}

void Dropout2dImpl::pretty_print(std::ostream& os) const { os << "Dropout2d(p=" << p << ")"; }

}  // namespace ox::nn
