#pragma once
// Training checkpoints: a model, an optimizer, a scheduler, a gradient scaler, the step and epoch,
// a random generator and any extra tensors in one safetensors file, written atomically, so a run
// resumed from it continues bitwise as if it had never stopped.

#include <cstdint>
#include <string>
#include <variant>

#include "oxmera/nn/module.h"
#include "oxmera/optim/optimizer.h"
#include "oxmera/optim/scheduler.h"
#include "oxmera/ordered_dict.h"
#include "oxmera/tensor.h"

namespace ox {

namespace amp {
class GradScaler;  // oxmera/amp/grad_scaler.h
}

// What a checkpoint holds. Every part is optional: a null pointer is neither saved nor loaded.
// `ox::save_checkpoint(path, {.model = model, .optimizer = &opt, .scheduler = &sched,
// .step = step, .epoch = epoch})`.
struct Checkpoint {
  nn::ModulePtr model = nullptr;
  optim::Optimizer* optimizer = nullptr;
  std::variant<std::monostate, optim::LRScheduler*, optim::ReduceLROnPlateau*> scheduler = {};
  // Its scale and growth tracker (a disabled scaler saves and loads nothing, as PyTorch's).
  amp::GradScaler* scaler = nullptr;
  int64_t step = 0;
  int64_t epoch = 0;
  // Its seed and position; the default generator unless set (dropout masks, shuffles).
  Generator* rng = &default_generator();
  TensorDict extra = {};
};

// Writes every part to `path` (a temporary file in the same folder, fsynced, renamed over the
// old one, the folder fsynced: a killed save leaves the old file or the new one).
void save_checkpoint(const std::string& path, const Checkpoint& checkpoint);

// Loads `path` into the parts `checkpoint` points to (the model strictly, the optimizer, the
// scheduler, the gradient scaler, the generator) and sets its step, epoch and extra. A file that is
// not an oxmera checkpoint, or lacks a part asked for, is a Format error; a part that does not fit
// (another model's keys or shapes) raises that part's own error. Parts are checked before any
// changes.
void load_checkpoint(const std::string& path, Checkpoint& checkpoint);

}  // namespace ox
