#pragma once
// Adamax. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// Adamax (Adam with the infinity norm), as torch.optim.Adamax.
struct AdamaxOptions {
  double lr = 2e-3;
  OX_NAMED_FIELDS_ONLY;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool maximize = false;
  bool master_weights = false;  // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 6> names = {
      "lr", "betas", "eps", "weight_decay", "maximize", "master_weights"};
  auto tie() { return std::tie(lr, betas, eps, weight_decay, maximize, master_weights); }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for Adamax: its parameters and the options that differ from the defaults.
struct AdamaxGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<Betas> betas = std::nullopt;
  std::optional<double> eps = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() { return std::tie(lr, betas, eps, weight_decay, maximize, master_weights); }
};

class Adamax : public GroupedOptimizer<AdamaxOptions, AdamaxGroupSpec> {
 public:
  explicit Adamax(const std::vector<Tensor>& params, const AdamaxOptions& options = {});
  explicit Adamax(const std::vector<AdamaxGroupSpec>& groups, const AdamaxOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "Adamax"; }
};

}  // namespace ox::optim
