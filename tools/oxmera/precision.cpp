#include "precision.h"

namespace oxcli {

const std::vector<std::string>& precision_names() {
  static const std::vector<std::string> names = {"f32", "bf16", "f16", "amp-bf16", "amp-f16"};
  return names;
}

Precision parse_precision(const std::string& name) {
  Precision p;
  p.name = name;
  if (name == "f32") return p;
  if (name == "bf16" || name == "f16") {
    p.params = name == "bf16" ? ox::kBF16 : ox::kF16;
    p.master_weights = true;
    p.scaled = name == "f16";  // f16's range underflows small gradients; bf16's does not
    return p;
  }
  if (name == "amp-bf16" || name == "amp-f16") {
    p.autocast = name == "amp-bf16" ? ox::kBF16 : ox::kF16;
    p.scaled = name == "amp-f16";
    return p;
  }
  OX_FAIL(Value, "oxmera train", "unknown --precision '", name,
          "' (f32, bf16, f16, amp-bf16, amp-f16)");
}

std::string Precision::describe() const {
  if (autocast)
    return name + " (f32 weights, " + std::string(ox::dtype_name(*autocast)) + " autocast" +
           (scaled ? ", loss scaling)" : ")");
  if (params != ox::kF32)
    return name + " (" + std::string(ox::dtype_name(params)) + " weights, f32 master weights" +
           (scaled ? ", loss scaling)" : ")");
  return name;
}

void apply_precision(Task& task, const Precision& precision) {
  if (precision.params == ox::kF32) return;
  task.model->to(precision.params);
  task.logits = [f = task.logits, dtype = precision.params](const ox::Tensor& x) {
    return f(x.is_floating_point() ? x.to(dtype) : x).to(ox::kF32);
  };
}

}  // namespace oxcli
