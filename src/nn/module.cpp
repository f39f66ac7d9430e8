#include "oxmera/nn/module.h"

#include <ostream>
#include <sstream>
#include <unordered_set>

#include "oxmera/amp/autocast.h"
#include "oxmera/autograd.h"

namespace ox::nn {

namespace {

void check_name(const std::string& name, const char* what) {
  OX_CHECK(!name.empty() && name.find('.') == std::string::npos, Value, "Module", what, " name '",
           name, "' must be non-empty and contain no '.'");
}

std::string joined(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

Tensor& Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_name(name, "parameter");
  OX_CHECK(tensor.defined(), Value, "register_parameter", "parameter '", name, "' is undefined");
  OX_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
           Value, "register_parameter", "'", name, "' is already registered in ", type_name_);
  // A parameter is a leaf of its own, even when made from a tensor with history.
  if (!tensor.is_leaf()) tensor = tensor.detach();
  tensor.requires_grad_(requires_grad);
  return parameters_.insert(std::move(name), std::move(tensor));
}

Tensor& Module::register_buffer(std::string name, Tensor tensor) {
  check_name(name, "buffer");
  OX_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
           Value, "register_buffer", "'", name, "' is already registered in ", type_name_);
  return buffers_.insert(std::move(name), std::move(tensor));
}

void Module::add_child(std::string name, ModulePtr child) {
  check_name(name, "module");
  OX_CHECK(child != nullptr, Value, "register_module", "module '", name, "' is empty");
  OX_CHECK(!parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
           Value, "register_module", "'", name, "' is already registered in ", type_name_);
  children_.insert(std::move(name), std::move(child));
}

template <class M, class F>
void Module::walk_tensors(M& module, const std::string& prefix, bool recurse, F&& fn) {
  for (auto& [name, t] : module.parameters_) fn(joined(prefix, name), t, /*is_buffer=*/false);
  for (auto& [name, t] : module.buffers_) fn(joined(prefix, name), t, /*is_buffer=*/true);
  if (!recurse) return;
  for (const auto& [name, child] : module.children_)
    walk_tensors(*child, joined(prefix, name), true, fn);
}

// Each tensor once: one registered twice (tied weights) keeps its first name, as PyTorch's
// named_parameters, so optimizers and gradient clipping see it once.
TensorDict Module::unique_tensors(bool buffers, bool recurse) const {
  TensorDict out;
  std::unordered_set<const TensorImpl*> seen;
  walk_tensors(*this, "", recurse, [&](const std::string& name, const Tensor& t, bool is_buffer) {
    if (is_buffer == buffers && t.defined() && seen.insert(t.impl()).second) out.insert(name, t);
  });
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  return unique_tensors(false, recurse).values();
}
TensorDict Module::named_parameters(bool recurse) const { return unique_tensors(false, recurse); }
std::vector<Tensor> Module::buffers(bool recurse) const {
  return unique_tensors(true, recurse).values();
}
TensorDict Module::named_buffers(bool recurse) const { return unique_tensors(true, recurse); }

std::vector<ModulePtr> Module::children() const { return children_.values(); }

ModulePtr Module::self_ptr() {
  if (ModulePtr owned = weak_from_this().lock()) return owned;
  return ModulePtr(this, [](Module*) {});  // a module on the stack: a non-owning pointer
}

std::vector<ModulePtr> Module::modules(bool include_self) {
  return named_modules("", include_self).values();
}

OrderedDict<ModulePtr> Module::named_modules(const std::string& prefix, bool include_self) {
  OrderedDict<ModulePtr> out;
  std::unordered_set<const Module*> seen;  // a module registered twice is listed once
  const auto walk = [&](const ModulePtr& module, const std::string& name, auto& self) -> void {
    if (!seen.insert(module.get()).second) return;
    out.insert(name, module);
    for (const auto& [child_name, child] : module->children_)
      self(child, joined(name, child_name), self);
  };
  if (include_self) {
    walk(self_ptr(), prefix, walk);
  } else {
    seen.insert(this);
    for (const auto& [name, child] : children_) walk(child, joined(prefix, name), walk);
  }
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::convert_tensors(const std::function<Tensor(const Tensor&)>& convert) {
  NoGradGuard no_grad;
  std::unordered_set<const TensorImpl*> done;  // a tied tensor is converted once
  walk_tensors(*this, "", true, [&](const std::string&, Tensor& t, bool) {
    if (!t.defined() || !done.insert(t.impl()).second) return;
    t.set_data(convert(t.detach()));
    if (t.grad().defined()) t.mutable_grad() = convert(t.grad());
  });
}

namespace {
// Floating parameters and buffers take any floating dtype: f16/bf16 layers store in 16 bits and
// accumulate in f32 (docs/NN.md, "The dtype boundary"). Integer buffers keep their dtype.
void check_module_dtype(DType dtype) {
  OX_CHECK(dtype == kF32 || dtype == kF64 || dtype == kF16 || dtype == kBF16, DType, "Module.to",
           "modules compute in a floating dtype (f32, f64, f16, bf16), not ", dtype);
}
}  // namespace

void Module::to(Device device) {
  convert_tensors([&](const Tensor& t) { return t.to(device); });
}

void Module::to(DType dtype) {
  check_module_dtype(dtype);
  convert_tensors([&](const Tensor& t) { return is_floating(t.dtype()) ? t.to(dtype) : t; });
}

void Module::to(Device device, DType dtype) {
  check_module_dtype(dtype);
  convert_tensors(
      [&](const Tensor& t) { return t.to(device, is_floating(t.dtype()) ? dtype : t.dtype()); });
}

void Module::zero_grad(bool set_to_none) {
  for (Tensor& p : parameters()) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      p.mutable_grad() = Tensor();
    } else {
      NoGradGuard no_grad;
      p.mutable_grad() = p.grad().detach();
      p.mutable_grad().zero_();
    }
  }
}

TensorDict Module::state_dict() const {
  // Every key, tied tensors under each of their names (PyTorch's state_dict keeps them all).
  TensorDict out;
  walk_tensors(*this, "", true, [&](const std::string& name, const Tensor& t, bool) {
    if (t.defined()) out.insert(name, t.detach());
  });
  return out;
}

LoadStateResult Module::load_state_dict(const TensorDict& dict, bool strict) {
  LoadStateResult result;
  std::vector<std::string> mismatched;
  TensorDict own;  // the live tensors (not detached copies), so that copy_ reaches them
  walk_tensors(*this, "", true, [&](const std::string& name, const Tensor& t, bool) {
    if (t.defined()) own.insert(name, t);
  });

  for (const auto& [name, target] : own) {
    const Tensor* source = dict.find(name);
    if (source == nullptr) {
      result.missing_keys.push_back(name);
    } else if (!source->defined() || source->shape() != target.shape()) {
      std::ostringstream line;
      line << name << ": the module has " << target.shape() << ", the dict ";
      if (source->defined())
        line << source->shape();
      else
        line << "an undefined tensor";
      mismatched.push_back(line.str());
    }
  }
  for (const auto& [name, tensor] : dict)
    if (!own.contains(name)) result.unexpected_keys.push_back(name);

  const bool refused =
      !mismatched.empty() ||
      (strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty()));
  if (refused) {
    std::ostringstream message;
    message << "cannot load the state of " << type_name_ << ":";
    const auto list = [&](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      message << "\n  " << what << " (" << keys.size() << "):";
      for (const std::string& key : keys) message << "\n    " << key;
    };
    list("shape mismatch", mismatched);
    if (strict) {
      list("missing keys", result.missing_keys);
      list("unexpected keys", result.unexpected_keys);
    }
    OX_FAIL(Value, "load_state_dict", message.str());
  }

  NoGradGuard no_grad;
  for (auto& [name, target] : own)
    if (const Tensor* source = dict.find(name)) target.copy_(*source);
  return result;
}

void Module::apply(const std::function<void(Module&)>& fn) {
  std::unordered_set<const Module*> seen;  // each module once, its children before it
  const auto visit = [&](Module& m, auto& self) -> void {
    if (!seen.insert(&m).second) return;
    for (const auto& [name, child] : m.children_) self(*child, self);
    fn(m);
  };
  visit(*this, visit);
}

void Module::pretty_print(std::ostream& os) const { os << type_name_ << "()"; }

namespace {

void print_tree(std::ostream& os, const Module& module, int indent) {
  std::ostringstream line;
  module.pretty_print(line);
  std::string own = line.str();
  const auto& children = module.named_children();
  if (children.empty()) {
    os << own;
    return;
  }
  // A container prints "Sequential(" and its children, one per line, then ")".
  if (own.size() >= 2 && own.substr(own.size() - 2) == "()")
    own.resize(own.size() - 1);
  else
    own += "(";
  os << own << "\n";
  for (const auto& [name, child] : children) {
    os << std::string(static_cast<size_t>(indent + 2), ' ') << "(" << name << "): ";
    print_tree(os, *child, indent + 2);
    os << "\n";
  }
  os << std::string(static_cast<size_t>(indent), ' ') << ")";
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Module& module) {
  print_tree(os, module, 0);
  return os;
}

void check_input_dtype(const char* layer, const Tensor& input, const Tensor& parameter) {
  // Under autocast the layer's op casts its inputs itself (docs/MIXED_PRECISION.md).
  if (amp::is_autocast_enabled(input.device().type())) return;
  OX_CHECK(input.dtype() == parameter.dtype(), DType, layer, "input dtype ", input.dtype(),
           " does not match the parameters' ", parameter.dtype(),
           " (modules do not promote; convert the input or call module->to(", input.dtype(), "))");
}

namespace detail {
ForwardObserver*& forward_observer() {
  thread_local ForwardObserver* observer = nullptr;
  return observer;
}
}  // namespace detail

}  // namespace ox::nn
