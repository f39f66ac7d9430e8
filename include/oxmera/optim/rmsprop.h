#pragma once
// RMSprop. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// RMSprop, as torch.optim.RMSprop.
struct RMSpropOptions {
  double lr = 1e-2;
  OX_NAMED_FIELDS_ONLY;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
  bool master_weights = false;  // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 8> names = {
      "lr", "alpha", "eps", "weight_decay", "momentum", "centered", "maximize", "master_weights"};
  auto tie() {
    return std::tie(lr, alpha, eps, weight_decay, momentum, centered, maximize, master_weights);
  }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for RMSprop: its parameters and the options that differ from the defaults.
struct RMSpropGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<double> alpha = std::nullopt;
  std::optional<double> eps = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> momentum = std::nullopt;
  std::optional<bool> centered = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() {
    return std::tie(lr, alpha, eps, weight_decay, momentum, centered, maximize, master_weights);
  }
};

class RMSprop : public GroupedOptimizer<RMSpropOptions, RMSpropGroupSpec> {
 public:
  explicit RMSprop(const std::vector<Tensor>& params, const RMSpropOptions& options = {});
  explicit RMSprop(const std::vector<RMSpropGroupSpec>& groups, const RMSpropOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "RMSprop"; }
};

}  // namespace ox::optim
