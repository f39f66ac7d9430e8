#pragma once
// SGD. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// Stochastic gradient descent with momentum, as torch.optim.SGD.
struct SGDOptions {
  double lr = 1e-3;
  OX_NAMED_FIELDS_ONLY;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;  // L2, added to the gradient
  bool nesterov = false;    // needs momentum > 0 and dampening 0
  bool maximize = false;
  std::optional<bool> fused = std::nullopt;  // unset: fused where possible
  bool master_weights = false;               // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 8> names = {
      "lr",       "momentum", "dampening", "weight_decay",
      "nesterov", "maximize", "fused",     "master_weights"};
  auto tie() {
    return std::tie(lr, momentum, dampening, weight_decay, nesterov, maximize, fused,
                    master_weights);
  }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for SGD: its parameters and the options that differ from the defaults.
struct SGDGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<double> momentum = std::nullopt;
  std::optional<double> dampening = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<bool> nesterov = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> fused = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() {
    return std::tie(lr, momentum, dampening, weight_decay, nesterov, maximize, fused,
                    master_weights);
  }
};

class SGD : public GroupedOptimizer<SGDOptions, SGDGroupSpec> {
 public:
  explicit SGD(const std::vector<Tensor>& params, const SGDOptions& options = {});
  explicit SGD(const std::vector<SGDGroupSpec>& groups, const SGDOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "SGD"; }
};

}  // namespace ox::optim
