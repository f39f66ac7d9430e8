#pragma once
// NAdam. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// NAdam (Adam with Nesterov momentum), as torch.optim.NAdam.
struct NAdamOptions {
  double lr = 2e-3;
  OX_NAMED_FIELDS_ONLY;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum_decay = 4e-3;
  bool decoupled_weight_decay = false;  // param *= 1 - lr * weight_decay instead of L2
  bool maximize = false;
  bool master_weights = false;  // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 8> names = {
      "lr",           "betas",          "eps",
      "weight_decay", "momentum_decay", "decoupled_weight_decay",
      "maximize",     "master_weights"};
  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, momentum_decay, decoupled_weight_decay, maximize,
                    master_weights);
  }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for NAdam: its parameters and the options that differ from the defaults.
struct NAdamGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<Betas> betas = std::nullopt;
  std::optional<double> eps = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> momentum_decay = std::nullopt;
  std::optional<bool> decoupled_weight_decay = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, momentum_decay, decoupled_weight_decay, maximize,
                    master_weights);
  }
};

class NAdam : public GroupedOptimizer<NAdamOptions, NAdamGroupSpec> {
 public:
  explicit NAdam(const std::vector<Tensor>& params, const NAdamOptions& options = {});
  explicit NAdam(const std::vector<NAdamGroupSpec>& groups, const NAdamOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "NAdam"; }
};

}  // namespace ox::optim
