#pragma once
// Adagrad. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// Adagrad, as torch.optim.Adagrad.
struct AdagradOptions {
  double lr = 1e-2;
  OX_NAMED_FIELDS_ONLY;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
  bool master_weights = false;  // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 7> names = {
      "lr",  "lr_decay", "weight_decay",  "initial_accumulator_value",
      "eps", "maximize", "master_weights"};
  auto tie() {
    return std::tie(lr, lr_decay, weight_decay, initial_accumulator_value, eps, maximize,
                    master_weights);
  }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for Adagrad: its parameters and the options that differ from the defaults.
struct AdagradGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<double> lr_decay = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<double> initial_accumulator_value = std::nullopt;
  std::optional<double> eps = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() {
    return std::tie(lr, lr_decay, weight_decay, initial_accumulator_value, eps, maximize,
                    master_weights);
  }
};

class Adagrad : public GroupedOptimizer<AdagradOptions, AdagradGroupSpec> {
 public:
  explicit Adagrad(const std::vector<Tensor>& params, const AdagradOptions& options = {});
  explicit Adagrad(const std::vector<AdagradGroupSpec>& groups, const AdagradOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "Adagrad"; }
};

}  // namespace ox::optim
