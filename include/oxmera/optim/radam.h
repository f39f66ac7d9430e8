#pragma once
// RAdam. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// RAdam (rectified Adam), as torch.optim.RAdam.
struct RAdamOptions {
  double lr = 1e-3;
  OX_NAMED_FIELDS_ONLY;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // param *= 1 - lr * weight_decay instead of L2
  bool maximize = false;
  bool master_weights = false;  // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 7> names = {
      "lr", "betas", "eps", "weight_decay", "decoupled_weight_decay", "maximize", "master_weights"};
  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, decoupled_weight_decay, maximize, master_weights);
  }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for RAdam: its parameters and the options that differ from the defaults.
struct RAdamGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<Betas> betas = std::nullopt;
  std::optional<double> eps = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<bool> decoupled_weight_decay = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, decoupled_weight_decay, maximize, master_weights);
  }
};

class RAdam : public GroupedOptimizer<RAdamOptions, RAdamGroupSpec> {
 public:
  explicit RAdam(const std::vector<Tensor>& params, const RAdamOptions& options = {});
  explicit RAdam(const std::vector<RAdamGroupSpec>& groups, const RAdamOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "RAdam"; }
};

}  // namespace ox::optim
