// Learning-rate schedulers: closed forms of torch.optim.lr_scheduler's schedules.

#include "oxmera/optim/scheduler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "oxmera/ops.h"

namespace ox::optim {
namespace {

Tensor f64_vector(const std::vector<double>& values) {
  return tensor(values, {static_cast<int64_t>(values.size())},
                {.dtype = kF64, .device = Device::cpu()});
}
Tensor i64_scalar(int64_t value) {
  return scalar_tensor(value, {.dtype = kI64, .device = Device::cpu()});
}

const Tensor& key(const TensorDict& dict, const std::string& name, const char* op) {
  return detail::find_key(dict, name, op);
}
double one_number(const TensorDict& dict, const std::string& name, const char* op) {
  const Tensor& t = key(dict, name, op);
  OX_CHECK(t.numel() == 1, Value, op, "'", name, "' must hold one number, got shape ", t.shape());
  return t.item<double>();
}
std::vector<double> per_group(const TensorDict& dict, const std::string& name, size_t groups,
                              const char* op) {
  const Tensor& t = key(dict, name, op);
  OX_CHECK(t.dim() == 1 && t.numel() == int64_t(groups), Value, op, "'", name, "' has shape ",
           t.shape(), " but the optimizer has ", groups, " parameter groups");
  return t.to_vector<double>();
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g)
    base_lrs_.push_back(optimizer.get_lr(g));
}

void LRScheduler::step() {
  const int64_t epoch = last_epoch_ + 1;
  std::vector<double> lrs(base_lrs_.size());
  for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = lr_at(g, epoch);
  // Written only once all are known, so a schedule that refuses the epoch changes nothing.
  last_epoch_ = epoch;
  for (size_t g = 0; g < lrs.size(); ++g) optimizer_.set_lr(g, lrs[g]);
  last_lr_ = std::move(lrs);
  after_step(last_epoch_);
}

TensorDict LRScheduler::state_dict() const {
  TensorDict out;
  out.insert("last_epoch", i64_scalar(last_epoch_));
  out.insert("base_lrs", f64_vector(base_lrs_));
  out.insert("last_lr", f64_vector(last_lr_));
  return out;
}

void LRScheduler::load_state_dict(const TensorDict& dict) {
  const double epoch = one_number(dict, "last_epoch", name());
  std::vector<double> base = per_group(dict, "base_lrs", base_lrs_.size(), name());
  std::vector<double> last = per_group(dict, "last_lr", base_lrs_.size(), name());
  last_epoch_ = static_cast<int64_t>(epoch);
  base_lrs_ = std::move(base);
  last_lr_ = std::move(last);
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  OX_CHECK(step_size > 0, Value, "StepLR", "step_size must be positive, got ", step_size);
  start();
}
double StepLR::lr_at(size_t group, int64_t epoch) const {
  return base_lrs_[group] * std::pow(gamma_, double(epoch / step_size_));
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());  // PyTorch takes them in any order
  start();
}
double MultiStepLR::lr_at(size_t group, int64_t epoch) const {
  const auto passed =
      std::upper_bound(milestones_.begin(), milestones_.end(), epoch) - milestones_.begin();
  return base_lrs_[group] * std::pow(gamma_, double(passed));
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {
  start();
}
double ExponentialLR::lr_at(size_t group, int64_t epoch) const {
  return base_lrs_[group] * std::pow(gamma_, double(epoch));
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  OX_CHECK(T_max > 0, Value, "CosineAnnealingLR", "T_max must be positive, got ", T_max);
  start();
}
double CosineAnnealingLR::lr_at(size_t group, int64_t epoch) const {
  return eta_min_ + (base_lrs_[group] - eta_min_) *
                        (1 + std::cos(std::numbers::pi * double(epoch) / double(t_max_))) / 2;
}

LinearLR::LinearLR(Optimizer& optimizer, const LinearLROptions& options)
    : LRScheduler(optimizer), options_(options) {
  OX_CHECK(options.start_factor > 0 && options.start_factor <= 1, Value, "LinearLR",
           "start_factor must be in (0, 1], got ", options.start_factor);
  OX_CHECK(options.end_factor >= 0 && options.end_factor <= 1, Value, "LinearLR",
           "end_factor must be in [0, 1], got ", options.end_factor);
  OX_CHECK(options.total_iters > 0, Value, "LinearLR", "total_iters must be positive, got ",
           options.total_iters);
  start();
}
double LinearLR::lr_at(size_t group, int64_t epoch) const {
  const double progress =
      double(std::min(epoch, options_.total_iters)) / double(options_.total_iters);
  return base_lrs_[group] *
         (options_.start_factor + (options_.end_factor - options_.start_factor) * progress);
}

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options)
    : LRScheduler(optimizer), options_(options) {
  const char* op = "OneCycleLR";
  OX_CHECK(options.total_steps > 0, Value, op, "total_steps must be positive, got ",
           options.total_steps);
  OX_CHECK(options.pct_start >= 0 && options.pct_start <= 1, Value, op,
           "pct_start must be in [0, 1], got ", options.pct_start);
  OX_CHECK(options.anneal_strategy == "cos" || options.anneal_strategy == "linear", Value, op,
           "anneal_strategy must be \"cos\" or \"linear\", got \"", options.anneal_strategy, "\"");
  OX_CHECK(options.max_lr > 0, Value, op, "max_lr must be positive, got ", options.max_lr);
  OX_CHECK(options.div_factor > 0 && options.final_div_factor > 0, Value, op,
           "div_factor and final_div_factor must be positive, got ", options.div_factor, " and ",
           options.final_div_factor);
  if (options.cycle_momentum)
    for (size_t g = 0; g < optimizer.num_param_groups(); ++g)
      OX_CHECK(optimizer.get_momentum(g).has_value(), Value, op,
               "the optimizer has no momentum or beta1 to cycle; set cycle_momentum = false");
  const double initial = options.max_lr / options.div_factor;
  const double minimum = initial / options.final_div_factor;
  const double warm_end = options.pct_start * double(options.total_steps) - 1;
  const double last = double(options.total_steps) - 1;
  const double high = options.max_momentum, low = options.base_momentum;
  if (options.three_phase)
    phases_ = {{warm_end, initial, options.max_lr, high, low},
               {2 * options.pct_start * double(options.total_steps) - 2, options.max_lr, initial,
                low, high},
               {last, initial, minimum, high, high}};
  else
    phases_ = {{warm_end, initial, options.max_lr, high, low},
               {last, options.max_lr, minimum, low, high}};
  for (double& lr : base_lrs_) lr = initial;
  start();
}

std::pair<const OneCycleLR::Phase*, double> OneCycleLR::locate(int64_t epoch) const {
  // As PyTorch: the schedule takes total_steps steps after the constructor's (the last one
  // continues the final phase's curve past its end).
  OX_CHECK(epoch <= options_.total_steps, Value, "OneCycleLR", "tried to step ", epoch,
           " times; the specified number of total steps is ", options_.total_steps);
  const double step = double(epoch);
  double start_step = 0;
  for (size_t i = 0; i < phases_.size(); ++i) {
    const Phase& phase = phases_[i];
    if (step <= phase.end_step || i + 1 == phases_.size())
      return {&phase, (step - start_step) / (phase.end_step - start_step)};
    start_step = phase.end_step;
  }
  return {&phases_.back(), 1.0};
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (options_.anneal_strategy == "cos")
    return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
  return (end - start) * pct + start;
}

double OneCycleLR::lr_at(size_t, int64_t epoch) const {
  const auto [phase, pct] = locate(epoch);
  return anneal(phase->start_lr, phase->end_lr, pct);
}

void OneCycleLR::after_step(int64_t epoch) {
  if (!options_.cycle_momentum) return;
  const auto [phase, pct] = locate(epoch);
  const double momentum = anneal(phase->start_momentum, phase->end_momentum, pct);
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) optimizer_.set_momentum(g, momentum);
}

WarmupCosineLR::WarmupCosineLR(Optimizer& optimizer, const WarmupCosineLROptions& options)
    : LRScheduler(optimizer), options_(options) {
  OX_CHECK(options.warmup_steps >= 0 && options.total_steps > options.warmup_steps, Value,
           "WarmupCosineLR", "need 0 <= warmup_steps < total_steps, got ", options.warmup_steps,
           " and ", options.total_steps);
  start();
}
double WarmupCosineLR::lr_at(size_t group, int64_t epoch) const {
  const double base = base_lrs_[group];
  if (epoch < options_.warmup_steps) return base * double(epoch) / double(options_.warmup_steps);
  const double progress = std::min(1.0, double(epoch - options_.warmup_steps) /
                                            double(options_.total_steps - options_.warmup_steps));
  return options_.min_lr +
         (base - options_.min_lr) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(int64_t)> lambda)
    : LRScheduler(optimizer), lambda_(std::move(lambda)) {
  OX_CHECK(bool(lambda_), Value, "LambdaLR", "the lambda is empty");
  start();
}
double LambdaLR::lr_at(size_t group, int64_t epoch) const {
  return base_lrs_[group] * lambda_(epoch);
}

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options)
    : optimizer_(optimizer), options_(options) {
  const char* op = "ReduceLROnPlateau";
  OX_CHECK(options.factor < 1, Value, op, "factor should be < 1.0, got ", options.factor);
  OX_CHECK(options.mode == "min" || options.mode == "max", Value, op,
           "mode must be \"min\" or \"max\", got \"", options.mode, "\"");
  OX_CHECK(options.threshold_mode == "rel" || options.threshold_mode == "abs", Value, op,
           "threshold_mode must be \"rel\" or \"abs\", got \"", options.threshold_mode, "\"");
  OX_CHECK(options.patience >= 0 && options.cooldown >= 0, Value, op,
           "patience and cooldown must be >= 0, got ", options.patience, " and ", options.cooldown);
  best_ = options.mode == "min" ? std::numeric_limits<double>::infinity()
                                : -std::numeric_limits<double>::infinity();
  for (size_t g = 0; g < optimizer.num_param_groups(); ++g) last_lr_.push_back(optimizer.get_lr(g));
}

bool ReduceLROnPlateau::is_better(double a) const {
  const bool rel = options_.threshold_mode == "rel";
  if (options_.mode == "min")
    return rel ? a < best_ * (1 - options_.threshold) : a < best_ - options_.threshold;
  return rel ? a > best_ * (options_.threshold + 1) : a > best_ + options_.threshold;
}

void ReduceLROnPlateau::step(double metric) {
  ++last_epoch_;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (cooldown_counter_ > 0) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ > options_.patience) {
    for (size_t g = 0; g < optimizer_.num_param_groups(); ++g) {
      const double old_lr = optimizer_.get_lr(g);
      const double new_lr = std::max(old_lr * options_.factor, options_.min_lr);
      if (old_lr - new_lr > options_.eps) optimizer_.set_lr(g, new_lr);
    }
    cooldown_counter_ = options_.cooldown;
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (size_t g = 0; g < optimizer_.num_param_groups(); ++g)
    last_lr_.push_back(optimizer_.get_lr(g));
}

TensorDict ReduceLROnPlateau::state_dict() const {
  TensorDict out;
  out.insert("best", scalar_tensor(best_, {.dtype = kF64, .device = Device::cpu()}));
  out.insert("num_bad_epochs", i64_scalar(num_bad_epochs_));
  out.insert("cooldown_counter", i64_scalar(cooldown_counter_));
  out.insert("last_epoch", i64_scalar(last_epoch_));
  out.insert("last_lr", f64_vector(last_lr_));
  return out;
}

void ReduceLROnPlateau::load_state_dict(const TensorDict& dict) {
  const char* op = "ReduceLROnPlateau";
  const double best = one_number(dict, "best", op);
  const double bad = one_number(dict, "num_bad_epochs", op);
  const double cooldown = one_number(dict, "cooldown_counter", op);
  const double epoch = one_number(dict, "last_epoch", op);
  std::vector<double> last = per_group(dict, "last_lr", optimizer_.num_param_groups(), op);
  best_ = best;
  num_bad_epochs_ = int64_t(bad);
  cooldown_counter_ = int64_t(cooldown);
  last_epoch_ = int64_t(epoch);
  last_lr_ = std::move(last);
}

}  // namespace ox::optim
