#include "pending_steps.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace oxcli {

void PendingSteps::add(const StepInfo& info, const ox::Tensor& loss, const ox::TensorDict* named) {
  Step step{.info = info, .loss = loss.detach(), .norms = {}, .names = {}};
  if (named != nullptr) {
    ox::NoGradGuard no_grad;
    std::vector<std::string> names;
    std::vector<ox::Tensor> norms;
    for (const auto& [name, param] : *named) {
      if (!param.grad().defined()) continue;
      names.push_back(name);
      norms.push_back(param.grad().norm().to(ox::kF64).reshape({1}));
    }
    if (!norms.empty()) {
      step.norms = ox::cat(norms);
      // The same parameters as the step before, nearly always: one list for them.
      const bool same = !steps_.empty() && steps_.back().names && *steps_.back().names == names;
      step.names = same ? steps_.back().names
                        : std::make_shared<const std::vector<std::string>>(std::move(names));
    }
  }
  steps_.push_back(std::move(step));
}

void PendingSteps::read(const std::function<void(StepInfo&)>& report) {
  if (steps_.empty()) return;
  std::vector<ox::Tensor> parts;
  for (const Step& s : steps_) parts.push_back(s.loss.to(ox::kF64).reshape({1}));
  for (const Step& s : steps_)
    if (s.norms.defined()) parts.push_back(s.norms);
  const std::vector<double> values = ox::cat(parts).to_vector<double>();
  size_t next_norm = steps_.size();
  for (size_t i = 0; i < steps_.size(); ++i) {
    StepInfo& info = steps_[i].info;
    info.loss = values[i];
    if (steps_[i].norms.defined()) {
      // Largest first, and the global norm (of all of them), as the views show them.
      const std::vector<std::string>& names = *steps_[i].names;
      double squares = 0;
      for (size_t k = 0; k < names.size(); ++k) {
        const double v = values[next_norm + k];
        squares += v * v;
        info.layer_norms.emplace_back(names[k], v);
      }
      std::stable_sort(info.layer_norms.begin(), info.layer_norms.end(),
                       [](const auto& a, const auto& b) { return a.second > b.second; });
      info.grad_norm = std::sqrt(squares);
      next_norm += names.size();
    }
    report(info);
  }
  steps_.clear();
}

}  // namespace oxcli
