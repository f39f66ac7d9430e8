#pragma once
// The steps of `oxmera train` whose loss and gradient norms are still where they were computed
// (a GPU): read back in one copy when the loop asks, so that a step never waits for the device.

#include <oxmera/oxmera.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "train_view.h"

namespace oxcli {

class PendingSteps {
 public:
  // Keeps a step: its loss (0-d) and, with `named`, each parameter's gradient norm.
  void add(const StepInfo& info, const ox::Tensor& loss, const ox::TensorDict* named);
  size_t size() const { return steps_.size(); }
  // Reads every kept step back (one copy), fills its loss, grad_norm and layer_norms, and hands
  // it to `report`, in order.
  void read(const std::function<void(StepInfo&)>& report);

 private:
  struct Step {
    StepInfo info;
    ox::Tensor loss;   // 0-d
    ox::Tensor norms;  // f64 [parameters with a gradient], or undefined
    std::shared_ptr<const std::vector<std::string>> names;  // their parameters
  };
  std::vector<Step> steps_;
};

}  // namespace oxcli
