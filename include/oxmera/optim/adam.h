#pragma once
// Adam and AdamW. Options are aggregates: `{.lr = 1e-3, .weight_decay = 0.1}`.

#include <array>
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "oxmera/optim/optimizer.h"

namespace ox::optim {

// Adam, as torch.optim.Adam (weight decay added to the gradient).
struct AdamOptions {
  double lr = 1e-3;
  OX_NAMED_FIELDS_ONLY;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  std::optional<bool> fused = std::nullopt;  // unset: fused where possible
  bool master_weights = false;               // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 8> names = {
      "lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "fused", "master_weights"};
  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, amsgrad, maximize, fused, master_weights);
  }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for Adam: its parameters and the options that differ from the defaults.
struct AdamGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<Betas> betas = std::nullopt;
  std::optional<double> eps = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<bool> amsgrad = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> fused = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, amsgrad, maximize, fused, master_weights);
  }
};

class Adam : public GroupedOptimizer<AdamOptions, AdamGroupSpec> {
 public:
  explicit Adam(const std::vector<Tensor>& params, const AdamOptions& options = {});
  explicit Adam(const std::vector<AdamGroupSpec>& groups, const AdamOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "Adam"; }
};

// AdamW, as torch.optim.AdamW (decoupled weight decay: param *= 1 - lr * weight_decay).
struct AdamWOptions {
  double lr = 1e-3;
  OX_NAMED_FIELDS_ONLY;
  Betas betas = {0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
  std::optional<bool> fused = std::nullopt;  // unset: fused where possible
  bool master_weights = false;               // f32 master copies of f16/bf16 parameters

  static constexpr std::array<std::string_view, 8> names = {
      "lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "fused", "master_weights"};
  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, amsgrad, maximize, fused, master_weights);
  }
  // A Value error naming the first bad option, as PyTorch validates.
  void validate(const char* op) const;
};
// A group for AdamW: its parameters and the options that differ from the defaults.
struct AdamWGroupSpec {
  std::vector<Tensor> params;
  std::optional<double> lr = std::nullopt;
  std::optional<Betas> betas = std::nullopt;
  std::optional<double> eps = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
  std::optional<bool> amsgrad = std::nullopt;
  std::optional<bool> maximize = std::nullopt;
  std::optional<bool> fused = std::nullopt;
  std::optional<bool> master_weights = std::nullopt;

  auto tie() {
    return std::tie(lr, betas, eps, weight_decay, amsgrad, maximize, fused, master_weights);
  }
};

class AdamW : public GroupedOptimizer<AdamWOptions, AdamWGroupSpec> {
 public:
  explicit AdamW(const std::vector<Tensor>& params, const AdamWOptions& options = {});
  explicit AdamW(const std::vector<AdamWGroupSpec>& groups, const AdamWOptions& options = {});
  void step() override;

 protected:
  const char* name() const override { return "AdamW"; }
};

}  // namespace ox::optim
