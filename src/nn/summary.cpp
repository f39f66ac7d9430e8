// ox::nn::summary: runs the model once on zeros and tabulates what each holder call produced.

#include <algorithm>
#include <iomanip>
#include <sstream>
#include <unordered_map>

#include "oxmera/autograd.h"
#include "oxmera/nn/module.h"

namespace ox::nn {

namespace {

struct Row {
  std::string name, type, output;
  int64_t parameters = 0;
  int depth = 0;
};

int64_t count_parameters(const Module& module, bool recurse) {
  int64_t total = 0;
  for (const Tensor& p : module.parameters(recurse)) total += p.numel();
  return total;
}

// Records each module call made through a holder (or a container), in call order. A module
// called twice (weights shared) gets a row per call; its parameters count once in the total.
class Recorder : public detail::ForwardObserver {
 public:
  explicit Recorder(const OrderedDict<ModulePtr>& names) {
    for (const auto& [name, module] : names) names_.emplace(module.get(), name);
  }
  void enter(const Module& module) override {
    rows_.push_back({name_of(module), module.type_name(), "", 0, static_cast<int>(open_.size())});
    open_.push_back(rows_.size() - 1);
  }
  void leave(const Module& module, const Tensor* output) override {
    Row& row = rows_[open_.back()];
    open_.pop_back();
    std::ostringstream shape;
    if (output != nullptr)
      shape << output->shape();
    else
      shape << "-";
    row.output = shape.str();
    // A leaf layer shows its own parameters; a container's are its children's rows.
    row.parameters = module.named_children().empty() ? count_parameters(module, true)
                                                     : count_parameters(module, false);
  }
  std::vector<Row>& rows() { return rows_; }

 private:
  std::string name_of(const Module& module) const {
    auto it = names_.find(&module);
    return it == names_.end() ? "?" : (it->second.empty() ? "(model)" : it->second);
  }
  std::unordered_map<const Module*, std::string> names_;
  std::vector<Row> rows_;
  std::vector<size_t> open_;
};

}  // namespace

std::string summary(Module& model, const std::function<Tensor(const Tensor&)>& forward,
                    const Shape& input_shape, std::optional<DType> input_dtype) {
  const std::vector<Tensor> parameters = model.parameters();
  TensorOptions options{.dtype = input_dtype};
  if (!parameters.empty()) {
    options.device = parameters[0].device();
    if (!input_dtype) options.dtype = parameters[0].dtype();
  }
  const OrderedDict<ModulePtr> modules = model.named_modules();
  Recorder recorder(modules);
  std::vector<std::pair<Module*, bool>> modes;  // restored after the eval-mode pass
  for (const auto& [name, module] : modules)
    modes.emplace_back(module.get(), module->is_training());
  const auto restore = [&] {
    detail::forward_observer() = nullptr;
    for (auto [module, training] : modes) module->train(training);
  };
  {
    NoGradGuard no_grad;
    detail::ForwardObserver*& observer = detail::forward_observer();
    OX_CHECK(observer == nullptr, Value, "summary", "summary() cannot run inside another summary");
    observer = &recorder;
    model.eval();  // one forward without dropout masks or running-stat updates
    try {
      forward(zeros(input_shape, options));
    } catch (...) {
      restore();
      throw;
    }
    restore();
  }

  std::vector<Row>& rows = recorder.rows();
  size_t name_width = 5, type_width = 4, output_width = 12;
  for (Row& row : rows) {
    row.name = std::string(static_cast<size_t>(row.depth) * 2, ' ') + row.name;
    name_width = std::max(name_width, row.name.size());
    type_width = std::max(type_width, row.type.size());
    output_width = std::max(output_width, row.output.size());
  }
  int64_t total = 0, trainable = 0;
  for (const Tensor& p : parameters) {
    total += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  std::ostringstream out;
  const auto line = [&](const std::string& a, const std::string& b, const std::string& c,
                        const std::string& d) {
    out << std::left << std::setw(static_cast<int>(name_width)) << a << "  "
        << std::setw(static_cast<int>(type_width)) << b << "  "
        << std::setw(static_cast<int>(output_width)) << c << "  " << std::right << std::setw(12)
        << d << "\n";
  };
  const size_t width = name_width + type_width + output_width + 18;
  line("Layer", "Type", "Output shape", "Params");
  out << std::string(width, '-') << "\n";
  for (const Row& row : rows) line(row.name, row.type, row.output, std::to_string(row.parameters));
  out << std::string(width, '-') << "\n";
  std::ostringstream input;
  input << input_shape;
  out << "Input shape: " << input.str() << "\n";
  out << "Total parameters: " << total << " (trainable " << trainable << ")\n";
  return out.str();
}

}  // namespace ox::nn
