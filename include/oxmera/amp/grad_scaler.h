#pragma once
// Loss scaling for 16-bit training, as torch.amp.GradScaler: the loss is multiplied by a large
// factor before backward so small f16 gradients do not flush to zero, the gradients are divided
// back before the optimizer sees them, and a step whose gradients overflowed is skipped while the
// factor backs off; after `growth_interval` clean steps it grows again.
//
//   ox::amp::GradScaler scaler;
//   scaler.scale(loss).backward();
//   scaler.unscale_(opt);                      // optional: to clip the true gradients
//   ox::nn::utils::clip_grad_norm_(params, 1.0);
//   scaler.step(opt);                          // skipped when a gradient is inf/NaN
//   scaler.update();

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "oxmera/core/options.h"
#include "oxmera/optim/optimizer.h"
#include "oxmera/ordered_dict.h"
#include "oxmera/tensor.h"

namespace ox::amp {

struct GradScalerOptions {
  double init_scale = 65536.0;
  OX_NAMED_FIELDS_ONLY;
  double growth_factor = 2.0;      // > 1
  double backoff_factor = 0.5;     // in (0, 1)
  int64_t growth_interval = 2000;  // consecutive clean steps before growing, > 0
  bool enabled = true;             // false: every method is the identity (step just steps)
};

class GradScaler {
 public:
  // Value error naming GradScaler for a non-positive scale, growth_factor <= 1, a backoff
  // outside (0, 1) or a non-positive interval.
  explicit GradScaler(const GradScalerOptions& options = {});

  // loss * scale (the scale a 0-d f32 tensor on the loss's device, created there on the first
  // call; nothing read back). A non-floating loss is a Value error. Disabled: `loss` itself.
  Tensor scale(const Tensor& loss);

  // Divides every gradient of `optimizer`'s parameters by the scale in place (multiplying by
  // 1/scale in f32, also for f16/bf16 gradients, rounded once) and records on the device
  // whether any of them held inf or NaN. Once per optimizer between update()s: a second call,
  // or one after step(), is a Value error, as is a call before any scale().
  void unscale_(optim::Optimizer& optimizer);

  // unscale_ (unless done since the last update) then optimizer.step() unless a gradient was
  // inf/NaN: one read of the flag back to the host. Returns whether the optimizer stepped. A
  // second step() of the same optimizer before update() is a Value error.
  bool step(optim::Optimizer& optimizer);

  // Backs the scale off (and resets the growth tracker) if any unscale_ since the last update
  // found inf/NaN, else counts one clean step and grows the scale after growth_interval of them
  // (unless the grown scale would be inf); computed on the device. `new_scale` (> 0) replaces
  // the scale instead. Forgets every optimizer's unscale/step record. Value error when no
  // optimizer was unscaled since the last update.
  void update(std::optional<double> new_scale = std::nullopt);

  // The current scale (read back: a synchronization); 1 when disabled.
  double get_scale() const;
  // Clean steps counted towards the next growth (read back).
  int64_t get_growth_tracker() const;
  double get_growth_factor() const { return growth_factor_; }
  void set_growth_factor(double value);
  double get_backoff_factor() const { return backoff_factor_; }
  void set_backoff_factor(double value);
  int64_t get_growth_interval() const { return growth_interval_; }
  void set_growth_interval(int64_t value);
  bool is_enabled() const { return enabled_; }

  // PyTorch's keys: "scale" (0-d f32), "growth_factor", "backoff_factor" (0-d f64),
  // "growth_interval", "_growth_tracker" (0-d i64). Empty when disabled.
  TensorDict state_dict() const;
  // Restores the above (checked before any change: a missing key, a value that is not one
  // number, or a bad factor is a Value error; an empty dict is a Value error naming a disabled
  // scaler as its likely source). Does nothing when disabled.
  void load_state_dict(const TensorDict& dict);

 private:
  enum class Stage { Ready, Unscaled, Stepped };
  struct OptimizerRecord {
    Stage stage = Stage::Ready;
    Tensor found_inf;  // 0-d f32 on the scale's device: > 0 when a gradient was inf/NaN
  };

  Tensor scale_on(const Device& device) const;
  void require_scale(const char* method) const;

  bool enabled_;
  double growth_factor_;
  double backoff_factor_;
  int64_t growth_interval_;
  // Host values until the first scale() makes the device tensors (and after a load before it).
  double init_scale_;
  int64_t init_growth_tracker_ = 0;
  Tensor scale_;           // 0-d f32
  Tensor growth_tracker_;  // 0-d i64, on the scale's device
  std::unordered_map<const optim::Optimizer*, OptimizerRecord> records_;
};

}  // namespace ox::amp
