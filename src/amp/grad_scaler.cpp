// GradScaler, as torch.amp.GradScaler: the scale and the growth tracker live on the loss's
// device and are updated there (PyTorch's _amp_update_scale_ written with ops), so the only read
// back in a training step is step()'s look at the inf flag, as PyTorch's `.item()`.

#include "oxmera/amp/grad_scaler.h"

#include <cmath>
#include <string>

#include "oxmera/autograd.h"
#include "oxmera/ops.h"

namespace ox::amp {

namespace {

constexpr const char* kOp = "GradScaler";

void check_scale(double scale, const char* what) {
  OX_CHECK(scale > 0 && std::isfinite(scale), Value, kOp, what,
           " must be a positive finite number, got ", scale);
}
void check_growth_factor(double value) {
  OX_CHECK(value > 1 && std::isfinite(value), Value, kOp, "growth_factor must be > 1, got ", value);
}
void check_backoff_factor(double value) {
  OX_CHECK(value > 0 && value < 1, Value, kOp, "backoff_factor must be in (0, 1), got ", value);
}
void check_growth_interval(int64_t value) {
  OX_CHECK(value > 0, Value, kOp, "growth_interval must be > 0, got ", value);
}

bool is_16_bit(DType dtype) { return dtype == kF16 || dtype == kBF16; }

double read_number(const TensorDict& dict, const char* key) {
  const Tensor* t = dict.find(key);
  OX_CHECK(t != nullptr, Value, kOp, "load_state_dict: the state dict has no '", key, "'");
  OX_CHECK(t->numel() == 1, Value, kOp, "load_state_dict: '", key,
           "' must hold one number, got shape ", t->shape());
  return t->item<double>();
}

int64_t read_count(const TensorDict& dict, const char* key) {
  const double value = read_number(dict, key);
  OX_CHECK(value >= 0 && value == std::floor(value) && value < 9.0e18, Value, kOp,
           "load_state_dict: '", key, "' must be a non-negative integer, got ", value);
  return static_cast<int64_t>(value);
}

}  // namespace

GradScaler::GradScaler(const GradScalerOptions& options)
    : enabled_(options.enabled),
      growth_factor_(options.growth_factor),
      backoff_factor_(options.backoff_factor),
      growth_interval_(options.growth_interval),
      init_scale_(options.init_scale) {
  check_scale(options.init_scale, "init_scale");
  check_growth_factor(options.growth_factor);
  check_backoff_factor(options.backoff_factor);
  check_growth_interval(options.growth_interval);
}

Tensor GradScaler::scale(const Tensor& loss) {
  OX_CHECK(loss.defined(), Value, kOp, "scale() got an undefined tensor");
  OX_CHECK(is_floating(loss.dtype()), Value, kOp, "scale() needs a floating loss, got ",
           loss.dtype(), " of shape ", loss.shape());
  if (!enabled_) return loss;
  if (!scale_.defined()) {
    NoGradGuard no_grad;
    scale_ = full({}, init_scale_, {.dtype = kF32, .device = loss.device()});
    growth_tracker_ = full({}, init_growth_tracker_, {.dtype = kI64, .device = loss.device()});
  }
  return mul(loss, scale_on(loss.device()));
}

Tensor GradScaler::scale_on(const Device& device) const {
  // A loss on another device than the first one's gets a copy of the scale.
  return scale_.device() == device ? scale_ : scale_.to(device);
}

void GradScaler::require_scale(const char* method) const {
  OX_CHECK(scale_.defined(), Value, kOp, method,
           "() was called before scale(): scale the loss (scaler.scale(loss).backward()) first");
}

void GradScaler::unscale_(optim::Optimizer& optimizer) {
  if (!enabled_) return;
  require_scale("unscale_");
  OptimizerRecord& record = records_[&optimizer];
  OX_CHECK(record.stage != Stage::Unscaled, Value, kOp,
           "unscale_() has already been called on this optimizer since the last update()");
  OX_CHECK(record.stage != Stage::Stepped, Value, kOp, "unscale_() is being called after step()");
  NoGradGuard no_grad;
  // As PyTorch: the reciprocal in f64, rounded once to f32.
  const Tensor inv_scale = reciprocal(scale_.to(kF64)).to(kF32);
  Tensor found_inf = zeros({}, {.dtype = kF32, .device = scale_.device()});
  for (const Tensor& p : optimizer.parameters()) {
    Tensor& grad = const_cast<Tensor&>(p).mutable_grad();
    if (!grad.defined()) continue;
    // The gradient as backward left it, as PyTorch's check: inf and NaN survive the division.
    const Tensor non_finite = logical_not(all(isfinite(grad)));
    found_inf = maximum(found_inf, non_finite.to(scale_.device(), kF32));
    const Tensor inv =
        inv_scale.device() == grad.device() ? inv_scale : inv_scale.to(grad.device());
    if (is_16_bit(grad.dtype()))
      grad.copy_(mul(grad.to(kF32), inv));  // f32 product, rounded once into the 16-bit gradient
    else
      grad.mul_(inv);
  }
  record.found_inf = found_inf;
  record.stage = Stage::Unscaled;
}

bool GradScaler::step(optim::Optimizer& optimizer) {
  if (!enabled_) {
    optimizer.step();
    return true;
  }
  require_scale("step");
  if (records_[&optimizer].stage == Stage::Ready) unscale_(optimizer);
  OptimizerRecord& record = records_[&optimizer];
  OX_CHECK(record.stage != Stage::Stepped, Value, kOp,
           "step() has already been called on this optimizer since the last update()");
  const bool clean = record.found_inf.item<float>() == 0.0f;  // the one read back
  if (clean) optimizer.step();
  record.stage = Stage::Stepped;
  return clean;
}

void GradScaler::update(std::optional<double> new_scale) {
  if (!enabled_) return;
  require_scale("update");
  NoGradGuard no_grad;
  if (new_scale) {
    check_scale(*new_scale, "update()'s new_scale");
    scale_.fill_(static_cast<float>(*new_scale));
    records_.clear();
    return;
  }
  Tensor found;
  for (const auto& [optimizer, record] : records_) {
    if (!record.found_inf.defined()) continue;
    found = found.defined() ? add(found, record.found_inf) : record.found_inf;
  }
  OX_CHECK(found.defined(), Value, kOp,
           "update(): no inf checks were recorded since the last update (call unscale_ or step "
           "on an optimizer first)");
  // PyTorch's _amp_update_scale_: the products in f64, rounded once to the f32 scale; a growth
  // that would overflow keeps the scale but still resets the tracker.
  const Tensor overflowed = gt(found, 0);
  const Tensor counted = add(growth_tracker_, 1);
  const Tensor grows = logical_and(logical_not(overflowed), eq(counted, growth_interval_));
  const Tensor scale64 = scale_.to(kF64);
  const Tensor grown = mul(scale64, growth_factor_).to(kF32);
  const Tensor backed_off = mul(scale64, backoff_factor_).to(kF32);
  const Tensor kept_or_grown = where(logical_and(grows, isfinite(grown)), grown, scale_);
  const Tensor next_scale = where(overflowed, backed_off, kept_or_grown);
  const Tensor next_tracker = where(logical_or(overflowed, grows), zeros_like(counted), counted);
  scale_.copy_(next_scale);
  growth_tracker_.copy_(next_tracker);
  records_.clear();
}

double GradScaler::get_scale() const {
  if (!enabled_) return 1.0;
  return scale_.defined() ? static_cast<double>(scale_.item<float>()) : init_scale_;
}

int64_t GradScaler::get_growth_tracker() const {
  if (!enabled_) return 0;
  return growth_tracker_.defined() ? growth_tracker_.item<int64_t>() : init_growth_tracker_;
}

void GradScaler::set_growth_factor(double value) {
  check_growth_factor(value);
  growth_factor_ = value;
}
void GradScaler::set_backoff_factor(double value) {
  check_backoff_factor(value);
  backoff_factor_ = value;
}
void GradScaler::set_growth_interval(int64_t value) {
  check_growth_interval(value);
  growth_interval_ = value;
}

TensorDict GradScaler::state_dict() const {
  TensorDict out;
  if (!enabled_) return out;
  const TensorOptions host64{.dtype = kF64, .device = Device::cpu()};
  const TensorOptions host_i64{.dtype = kI64, .device = Device::cpu()};
  out.insert("scale", scale_.defined() ? scale_.to(Device::cpu()).clone()
                                       : scalar_tensor(static_cast<float>(init_scale_),
                                                       {.dtype = kF32, .device = Device::cpu()}));
  out.insert("growth_factor", scalar_tensor(growth_factor_, host64));
  out.insert("backoff_factor", scalar_tensor(backoff_factor_, host64));
  out.insert("growth_interval", scalar_tensor(growth_interval_, host_i64));
  out.insert("_growth_tracker", scalar_tensor(get_growth_tracker(), host_i64));
  return out;
}

void GradScaler::load_state_dict(const TensorDict& dict) {
  if (!enabled_) return;
  OX_CHECK(!dict.empty(), Value, kOp,
           "load_state_dict: the state dict is empty, possibly because it was saved from a "
           "disabled GradScaler");
  for (const auto& [key, value] : dict.items()) {
    (void)value;
    OX_CHECK(key == "scale" || key == "growth_factor" || key == "backoff_factor" ||
                 key == "growth_interval" || key == "_growth_tracker",
             Value, kOp, "load_state_dict: unknown key '", key, "'");
  }
  // Everything read and checked before anything changes.
  const double scale = read_number(dict, "scale");
  const double growth_factor = read_number(dict, "growth_factor");
  const double backoff_factor = read_number(dict, "backoff_factor");
  const int64_t growth_interval = read_count(dict, "growth_interval");
  const int64_t tracker = read_count(dict, "_growth_tracker");
  check_scale(scale, "the loaded scale");
  check_growth_factor(growth_factor);
  check_backoff_factor(backoff_factor);
  check_growth_interval(growth_interval);

  growth_factor_ = growth_factor;
  backoff_factor_ = backoff_factor;
  growth_interval_ = growth_interval;
  init_scale_ = scale;
  init_growth_tracker_ = tracker;
  if (scale_.defined()) {
    NoGradGuard no_grad;
    scale_.fill_(static_cast<float>(scale));
    growth_tracker_.fill_(tracker);
  }
  records_.clear();
}

}  // namespace ox::amp
