#pragma once
// Learning-rate schedulers, as torch.optim.lr_scheduler: each step() moves to the next epoch
// (or batch) and writes every group's rate into the optimizer, computed from the closed form
// of the schedule (so a resumed schedule is exact). The constructor sets epoch 0's rates.

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "oxmera/optim/optimizer.h"
#include "oxmera/ordered_dict.h"

namespace ox::optim {

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // The next epoch: last_epoch() + 1, and its rates into the optimizer.
  void step();
  // The rates of the current epoch, one per group.
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }

  // "last_epoch" (0-d i64), "base_lrs" and "last_lr" (1-d f64, one per group). Loading checks
  // the group count (Value error) and restores the position; the optimizer's rates come back
  // with the optimizer's own load_state_dict.
  virtual TensorDict state_dict() const;
  virtual void load_state_dict(const TensorDict& dict);

 protected:
  // base_lrs are the groups' rates now.
  explicit LRScheduler(Optimizer& optimizer);
  // The rate of `group` at `epoch`.
  virtual double lr_at(size_t group, int64_t epoch) const = 0;
  // Moves to epoch 0; each concrete constructor calls it last.
  void start() { step(); }
  // Runs after each step has written the rates (OneCycleLR cycles momentum here).
  virtual void after_step(int64_t epoch) { (void)epoch; }
  virtual const char* name() const = 0;

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;

 private:
  int64_t last_epoch_ = -1;
  std::vector<double> last_lr_;
};

// base_lr * gamma^(epoch / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  const char* name() const override { return "StepLR"; }

 private:
  int64_t step_size_;
  double gamma_;
};

// base_lr * gamma^(number of milestones <= epoch); milestones increasing.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  const char* name() const override { return "MultiStepLR"; }

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

// base_lr * gamma^epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  const char* name() const override { return "ExponentialLR"; }

 private:
  double gamma_;
};

// eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2 (SGDR without restarts).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  const char* name() const override { return "CosineAnnealingLR"; }

 private:
  int64_t t_max_;
  double eta_min_;
};

// base_lr * (start + (end - start) * min(epoch, total_iters) / total_iters).
struct LinearLROptions {
  OX_NAMED_FIELDS_ONLY;
  double start_factor = 1.0 / 3;  // in (0, 1]
  double end_factor = 1.0;        // in [0, 1]
  int64_t total_iters = 5;        // > 0
};
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, const LinearLROptions& options = {});

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  const char* name() const override { return "LinearLR"; }

 private:
  LinearLROptions options_;
};

// The 1cycle policy (Smith & Topin), stepped once per batch: from max_lr / div_factor up to
// max_lr over the first pct_start of total_steps, then down to initial / final_div_factor
// (three_phase: back to the initial rate first, then down). Every group takes the same rates;
// the optimizer's own rates are ignored. With cycle_momentum (PyTorch's default) the momentum
// (beta1 for the Adam family) moves the opposite way, max_momentum -> base_momentum -> back
// (three_phase: then held), with the same annealing; an optimizer without momentum is then a
// Value error. Stepping past total_steps is a Value error.
struct OneCycleLROptions {
  OX_NAMED_FIELDS_ONLY;
  double max_lr = 0;
  int64_t total_steps = 0;              // > 0
  double pct_start = 0.3;               // in [0, 1]
  std::string anneal_strategy = "cos";  // "cos" or "linear"
  double div_factor = 25;
  double final_div_factor = 1e4;
  bool three_phase = false;
  bool cycle_momentum = true;
  double base_momentum = 0.85;
  double max_momentum = 0.95;
};
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  void after_step(int64_t epoch) override;
  const char* name() const override { return "OneCycleLR"; }

 private:
  struct Phase {
    double end_step, start_lr, end_lr, start_momentum, end_momentum;
  };
  // The phase holding `epoch` and how far into it (0 to 1).
  std::pair<const Phase*, double> locate(int64_t epoch) const;
  double anneal(double start, double end, double pct) const;
  OneCycleLROptions options_;
  std::vector<Phase> phases_;
};

// Linear warmup then cosine decay: base_lr * epoch / warmup_steps for epoch < warmup_steps, then
// min_lr + (base_lr - min_lr) * (1 + cos(pi * p)) / 2 with p = (epoch - warmup_steps) /
// (total_steps - warmup_steps), held at min_lr after total_steps.
struct WarmupCosineLROptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t warmup_steps = 0;
  int64_t total_steps = 0;  // > warmup_steps
  double min_lr = 0;
};
class WarmupCosineLR : public LRScheduler {
 public:
  WarmupCosineLR(Optimizer& optimizer, const WarmupCosineLROptions& options);

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  const char* name() const override { return "WarmupCosineLR"; }

 private:
  WarmupCosineLROptions options_;
};

// base_lr * lambda(epoch).
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lambda);

 protected:
  double lr_at(size_t group, int64_t epoch) const override;
  const char* name() const override { return "LambdaLR"; }

 private:
  std::function<double(int64_t)> lambda_;
};

// Multiplies the rates by `factor` (never below min_lr) when the metric given to step() has not
// improved for more than `patience` epochs, then waits `cooldown` epochs, as PyTorch's.
struct ReduceLROnPlateauOptions {
  OX_NAMED_FIELDS_ONLY;
  std::string mode = "min";  // "min" or "max": whether lower or higher metrics are better
  double factor = 0.1;       // < 1
  int64_t patience = 10;
  double threshold = 1e-4;
  std::string threshold_mode = "rel";  // "rel" or "abs"
  int64_t cooldown = 0;
  double min_lr = 0;
  double eps = 1e-8;  // a change smaller than this is not made
};
class ReduceLROnPlateau {
 public:
  explicit ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});
  void step(double metric);
  const std::vector<double>& get_last_lr() const { return last_lr_; }
  int64_t num_bad_epochs() const { return num_bad_epochs_; }
  double best() const { return best_; }
  // "best" (0-d f64), "num_bad_epochs", "cooldown_counter", "last_epoch" (0-d i64), "last_lr".
  TensorDict state_dict() const;
  void load_state_dict(const TensorDict& dict);

 private:
  bool is_better(double metric) const;

  Optimizer& optimizer_;
  ReduceLROnPlateauOptions options_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
  std::vector<double> last_lr_;
};

}  // namespace ox::optim
