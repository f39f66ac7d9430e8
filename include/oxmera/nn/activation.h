#pragma once
// Activation modules: each is its function of oxmera/nn/functional.h.

#include <string>

#include "oxmera/nn/module.h"
#include "oxmera/ops.h"

namespace ox::nn {

// An activation without settings: ReLU, SiLU, Mish, Tanh, Sigmoid.
#define OX_SIMPLE_ACTIVATION(Name, fn)                              \
  class Name##Impl : public Module {                                \
   public:                                                          \
    Name##Impl() : Module(#Name) {}                                 \
    Tensor forward(const Tensor& input) const { return fn(input); } \
  };                                                                \
  OX_MODULE(Name)
OX_SIMPLE_ACTIVATION(ReLU, ox::relu);
OX_SIMPLE_ACTIVATION(SiLU, ox::silu);
OX_SIMPLE_ACTIVATION(Mish, ox::mish);
OX_SIMPLE_ACTIVATION(Tanh, ox::tanh);
OX_SIMPLE_ACTIVATION(Sigmoid, ox::sigmoid);
#undef OX_SIMPLE_ACTIVATION

class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(double negative_slope = 0.01);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;
  double negative_slope;
};
OX_MODULE(LeakyReLU);

class ELUImpl : public Module {
 public:
  explicit ELUImpl(double alpha = 1.0);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;
  double alpha;
};
OX_MODULE(ELU);

class GELUImpl : public Module {
 public:
  explicit GELUImpl(std::string approximate = "none");  // "none" (erf) or "tanh"
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;
  std::string approximate;
};
OX_MODULE(GELU);

struct SoftplusOptions {
  OX_NAMED_FIELDS_ONLY;
  double beta = 1.0;
  double threshold = 20.0;
};
class SoftplusImpl : public Module {
 public:
  using Options = SoftplusOptions;
  explicit SoftplusImpl(const SoftplusOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;
  SoftplusOptions options;
};
OX_MODULE(Softplus);

class SoftmaxImpl : public Module {
 public:
  explicit SoftmaxImpl(int64_t dim);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;
  int64_t dim;
};
OX_MODULE(Softmax);

class LogSoftmaxImpl : public Module {
 public:
  explicit LogSoftmaxImpl(int64_t dim);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;
  int64_t dim;
};
OX_MODULE(LogSoftmax);

}  // namespace ox::nn
