#pragma once
// Automatic mixed precision, as torch.autocast: inside an `Autocast` scope the ops on the
// lower-precision list run in the scope's 16-bit dtype and the ops on the f32 list in f32, so a
// model whose parameters stay f32 computes its products in bf16/f16 and its sensitive steps in
// f32. docs/MIXED_PRECISION.md lists the ops.
//
//   {
//     ox::amp::Autocast autocast(ox::DeviceType::CPU, ox::kBF16);
//     loss = criterion(model->forward(x), y);  // linear/conv/matmul in bf16, the loss in f32
//   }
//   loss.backward();  // every parameter's gradient in the parameter's own dtype

#include <optional>

#include "oxmera/core/device.h"
#include "oxmera/core/dtype.h"

namespace ox::amp {

// A scope guard: enables (or, with enabled = false, disables) autocast for one device type on
// this thread, and restores the previous state when it ends. dtype is f16 or bf16 (DType error
// otherwise); unset, the device type's default (bf16 on the CPU, f16 on CUDA, as PyTorch). Casts
// of leaf tensors that require grad (the weights) are cached while any autocast scope is open
// on the thread (cache_enabled), so a weight used by many ops is cast once; the cache is
// emptied when the outermost scope ends. Scopes nest; each thread has its own state.
class Autocast {
 public:
  explicit Autocast(DeviceType device_type, std::optional<DType> dtype = std::nullopt,
                    bool enabled = true, bool cache_enabled = true);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  DeviceType device_type_;
  bool prev_enabled_;
  DType prev_dtype_;
  bool prev_cache_enabled_;
};

// Whether autocast is on for `device_type` on this thread, and the dtype it casts to.
bool is_autocast_enabled(DeviceType device_type);
DType get_autocast_dtype(DeviceType device_type);
bool is_autocast_cache_enabled();
// Drops every cached cast (the outermost scope's end does this).
void clear_autocast_cache();

}  // namespace ox::amp
