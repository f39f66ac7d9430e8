#pragma once
// Lion. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): the sign of an
// interpolated momentum, with decoupled weight decay.
struct LionOptions {
  double lr = 1e-4;
  OX_NAMED_FIELDS_ONLY;
  Betas betas = {0.9, 0.99};
  double weight_decay = 0;
  bool maximize = false;
  bool master_weights = false;  // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 5> names = {"lr", "betas", "weight_decay",
                                                            "maximize", "master_weights"};
  auto tie() { return std::tie(lr, betas, weight_decay, maximize, master_weights); }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for Lion: its parameters and the options that differ from the defaults.
struct LionGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<Betas> betas = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() { return std::tie(lr, betas, weight_decay, maximize, master_weights); }
};

class Lion : public GroupedOptimizer<LionOptions, LionGroupSpec> {
 public:
  explicit Lion(const std::vector<Tensor>& params, const LionOptions& options = {});
  explicit Lion(const std::vector<LionGroupSpec>& groups, const LionOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "Lion"; }
};

}  // namespace ox::optim
