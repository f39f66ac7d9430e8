#pragma once
// `oxmera train --precision`: what each mode computes in, and the parts of a run it changes
// (the model's dtype, an autocast scope around the forward pass and the loss, master weights in
// the optimizer, a gradient scaler).

#include <oxmera/oxmera.h>

#include <optional>
#include <string>
#include <vector>

#include "recipes.h"

namespace oxcli {

struct Precision {
  std::string name = "f32";           // one of precision_names()
  ox::DType params = ox::kF32;        // the parameters' (and activations') dtype
  std::optional<ox::DType> autocast;  // amp-*: the autocast dtype; the parameters stay f32
  bool master_weights = false;        // bf16, f16: the optimizer steps f32 copies
  bool scaled = false;                // f16, amp-f16: gradients go through a GradScaler
  // One line for the run's header and the dashboard: "amp-bf16 (f32 weights, bf16 autocast)".
  std::string describe() const;
};

const std::vector<std::string>& precision_names();
// Value error naming the choices for anything else.
Precision parse_precision(const std::string& name);

// The pure 16-bit modes convert the model and the task's floating inputs to the 16-bit dtype,
// and take the loss on f32 logits (as mixed-precision trainers do).
void apply_precision(Task& task, const Precision& precision);

}  // namespace oxcli
