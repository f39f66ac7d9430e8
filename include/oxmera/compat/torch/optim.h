#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md): torch::optim's optimizers (SGD, Adam, AdamW,
// RMSprop, Adagrad) with LibTorch's constructors, LibTorch's LR schedulers (StepLR), and
// torch::save / torch::load of an optimizer held as torch::optim::Optimizer&.

#include <concepts>
#include <string>
#include <type_traits>
#include <vector>

#include "oxmera/compat/torch/core.h"
#include "oxmera/compat/torch/optim_core.h"

namespace torch::optim {

#define OX_COMPAT_OPTIMIZER(Name, DEFAULT)                                                  \
  class Name : public detail::OptimizerAdapter<ox::optim::Name, Name##Options,              \
                                               ox::optim::Name##GroupSpec> {                \
   public:                                                                                  \
    explicit Name(const std::vector<Tensor>& params, const Name##Options& defaults DEFAULT) \
        : OptimizerAdapter(params, defaults) {}                                             \
    explicit Name(const std::vector<OptimizerParamGroup>& groups,                           \
                  const Name##Options& defaults DEFAULT)                                    \
        : OptimizerAdapter(groups, defaults) {}                                             \
  }
OX_COMPAT_OPTIMIZER(SGD, );  // LibTorch's SGD needs its options (the learning rate)
OX_COMPAT_OPTIMIZER(Adam, = {});
OX_COMPAT_OPTIMIZER(AdamW, = {});
OX_COMPAT_OPTIMIZER(RMSprop, = {});
OX_COMPAT_OPTIMIZER(Adagrad, = {});
#undef OX_COMPAT_OPTIMIZER

// LibTorch's LR schedulers: step() sets each group's rate from get_lrs(), then counts the step.
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {}
  virtual ~LRScheduler() = default;
  void step() {
    const std::vector<double> lrs = get_lrs();
    std::vector<OptimizerParamGroup>& groups = optimizer_.param_groups();
    OX_CHECK(lrs.size() == groups.size(), Value, "torch::optim::LRScheduler", "got ", lrs.size(),
             " rates for ", groups.size(), " param groups");
    for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lrs[g]);
    ++step_count_;
  }

 protected:
  virtual std::vector<double> get_lrs() = 0;
  std::vector<double> get_current_lrs() const {
    std::vector<double> out;
    for (const OptimizerParamGroup& g : optimizer_.param_groups())
      out.push_back(g.options().get_lr());
    return out;
  }
  unsigned step_count_ = 0;

 private:
  Optimizer& optimizer_;
};

// Multiplies every rate by gamma on the calls to step() that find step_count a nonzero multiple
// of step_size (LibTorch's rule): after k >= 1 calls, lr = lr0 * gamma^floor((k - 1) / step_size).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, unsigned step_size, double gamma = 0.1)
      : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
    OX_CHECK(step_size > 0, Value, "torch::optim::StepLR", "step_size must be positive");
  }

 private:
  std::vector<double> get_lrs() override {
    std::vector<double> lrs = get_current_lrs();
    if (step_count_ != 0 && step_count_ % step_size_ == 0)
      for (double& lr : lrs) lr *= gamma_;
    return lrs;
  }
  unsigned step_size_;
  double gamma_;
};

}  // namespace torch::optim

namespace torch {
// torch::save / torch::load of an optimizer held by LibTorch's base class (a concrete optimizer
// such as torch::optim::Adam goes to ox::save / ox::load directly: it is an oxmera optimizer).
template <class O>
requires std::same_as<std::remove_cv_t<O>, optim::Optimizer>
void save(const O& optimizer, const std::string& path) { ox::save(optimizer.ox_optimizer(), path); }
template <class O>
requires std::same_as<O, optim::Optimizer>
void load(O& optimizer, const std::string& path) { ox::load(optimizer.ox_optimizer(), path); }
}  // namespace torch
