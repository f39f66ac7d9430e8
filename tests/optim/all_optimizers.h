#pragma once
// The nine optimizers by name, each made over given parameters with a small learning rate and
// master weights on or off: what the GradScaler and master-weights tests loop over.

#include <oxmera/optim.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace oxtest {

struct OptimizerMaker {
  std::string name;
  std::function<std::unique_ptr<ox::optim::Optimizer>(const std::vector<ox::Tensor>&, bool)> make;
};

inline std::vector<OptimizerMaker> all_optimizers() {
  namespace optim = ox::optim;
  using Ps = const std::vector<ox::Tensor>&;
  using Ptr = std::unique_ptr<optim::Optimizer>;
  return {
      {"SGD",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::SGD>(
             p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .master_weights = mw});
       }},
      {"Adam",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::Adam>(p,
                                              optim::AdamOptions{.lr = 0.05, .master_weights = mw});
       }},
      {"AdamW",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::AdamW>(
             p, optim::AdamWOptions{.lr = 0.05, .master_weights = mw});
       }},
      {"NAdam",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::NAdam>(
             p, optim::NAdamOptions{.lr = 0.05, .master_weights = mw});
       }},
      {"RAdam",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::RAdam>(
             p, optim::RAdamOptions{.lr = 0.05, .master_weights = mw});
       }},
      {"Adamax",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::Adamax>(
             p, optim::AdamaxOptions{.lr = 0.05, .master_weights = mw});
       }},
      {"RMSprop",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::RMSprop>(
             p, optim::RMSpropOptions{.lr = 0.01, .momentum = 0.5, .master_weights = mw});
       }},
      {"Adagrad",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::Adagrad>(
             p, optim::AdagradOptions{.lr = 0.05, .master_weights = mw});
       }},
      {"Lion",
       [](Ps p, bool mw) -> Ptr {
         return std::make_unique<optim::Lion>(p,
                                              optim::LionOptions{.lr = 0.01, .master_weights = mw});
       }},
  };
}

}  // namespace oxtest
