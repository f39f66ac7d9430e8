#pragma once
// Identity, Linear, Bilinear, Flatten, Unflatten.

#include "oxmera/nn/module.h"

namespace ox::nn {

// Parameters are created in f32 on the CPU; module->to(...) converts them.
class IdentityImpl : public Module {
 public:
  IdentityImpl() : Module("Identity") {}
  Tensor forward(const Tensor& input) const { return input; }
};
OX_MODULE(Identity);

struct LinearOptions {
  OX_NAMED_FIELDS_ONLY;
  bool bias = true;
};
// y = x Wᵀ + b with W [out, in]; W and b ~ U(-1/√in, 1/√in), as PyTorch.
class LinearImpl : public Module {
 public:
  using Options = LinearOptions;
  LinearImpl(int64_t in_features, int64_t out_features, const LinearOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t in_features, out_features;
  Tensor weight, bias;  // bias undefined without one
};
OX_MODULE(Linear);

// y[o] = x1ᵀ W[o] x2 + b[o] with W [out, in1, in2]; W and b ~ U(-1/√in1, 1/√in1).
class BilinearImpl : public Module {
 public:
  using Options = LinearOptions;
  BilinearImpl(int64_t in1_features, int64_t in2_features, int64_t out_features,
               const LinearOptions& options = {});
  Tensor forward(const Tensor& input1, const Tensor& input2) const;
  void reset_parameters();
  void pretty_print(std::ostream& os) const override;

  int64_t in1_features, in2_features, out_features;
  Tensor weight, bias;
};
OX_MODULE(Bilinear);

struct FlattenOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t start_dim = 1;
  int64_t end_dim = -1;
};
class FlattenImpl : public Module {
 public:
  using Options = FlattenOptions;
  explicit FlattenImpl(const FlattenOptions& options = {});
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  FlattenOptions options;
};
OX_MODULE(Flatten);

class UnflattenImpl : public Module {
 public:
  UnflattenImpl(int64_t dim, Shape sizes);
  Tensor forward(const Tensor& input) const;
  void pretty_print(std::ostream& os) const override;

  int64_t dim;
  Shape sizes;
};
OX_MODULE(Unflatten);

}  // namespace ox::nn
