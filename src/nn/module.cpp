#include "oxmera/nn/module.h"

#include <ostream>
#include <sstream>

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

void Module::replace_module(const std::string& name, ModulePtr module) {
  OX_CHECK(module != nullptr, Value, "replace_module", "module '", name, "' is empty");
  OX_CHECK(children_.contains(name), Index, "replace_module", type_name_, " has no child '", name,
           "'");
  children_.at(name) = std::move(module);
}

template <class F>
void Module::visit_tensors(const std::string& prefix, bool recurse, bool buffers_only,
                           F&& fn) const {
  for (const auto& [name, tensor] : buffers_only ? buffers_ : parameters_)
    fn(joined(prefix, name), tensor);
  if (!recurse) return;
  for (const auto& [name, child] : children_)
    child->visit_tensors(joined(prefix, name), true, buffers_only, fn);
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  visit_tensors("", recurse, false, [&](const std::string&, const Tensor& t) { out.push_back(t); });
  return out;
}

TensorDict Module::named_parameters(bool recurse) const {
  TensorDict out;
  visit_tensors("", recurse, false,
                [&](const std::string& name, const Tensor& t) { out.insert(name, t); });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  visit_tensors("", recurse, true, [&](const std::string&, const Tensor& t) {
    if (t.defined()) out.push_back(t);
  });
  return out;
}

TensorDict Module::named_buffers(bool recurse) const {
  TensorDict out;
  visit_tensors("", recurse, true, [&](const std::string& name, const Tensor& t) {
    if (t.defined()) out.insert(name, t);
  });
  return out;
}

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
  if (include_self) out.insert(prefix, self_ptr());
  for (const auto& [name, child] : children_) {
    for (auto& [sub_name, sub] : child->named_modules(joined(prefix, name), true))
      out.insert(sub_name, sub);
  }
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, child] : children_) child->train(on);
}

void Module::convert_tensors(const std::function<Tensor(const Tensor&)>& convert) {
  NoGradGuard no_grad;
  const auto replace = [&](Tensor& t) {
    if (!t.defined()) return;
    t.set_data(convert(t.detach()));
    if (t.grad().defined()) t.mutable_grad() = convert(t.grad());
  };
  for (auto& [name, t] : parameters_) replace(t);
  for (auto& [name, t] : buffers_) replace(t);
  for (const auto& [name, child] : children_) child->convert_tensors(convert);
}

namespace {
void check_module_dtype(DType dtype) {
  OX_CHECK(dtype == kF32 || dtype == kF64, DType, "Module.to",
           "modules compute in f32 or f64, not ", dtype,
           " (16-bit modules are not supported yet; see docs/NN.md)");
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
  TensorDict out;
  const auto add = [&](const std::string& prefix, const Module& m, auto& self) -> void {
    for (const auto& [name, t] : m.parameters_) out.insert(joined(prefix, name), t.detach());
    for (const auto& [name, t] : m.buffers_)
      if (t.defined()) out.insert(joined(prefix, name), t.detach());
    for (const auto& [name, child] : m.children_) self(joined(prefix, name), *child, self);
  };
  add("", *this, add);
  return out;
}

LoadStateResult Module::load_state_dict(const TensorDict& dict, bool strict) {
  LoadStateResult result;
  std::vector<std::string> mismatched;
  TensorDict own;  // the live tensors (not detached copies), so that copy_ reaches them
  const auto collect = [&](const std::string& prefix, Module& m, auto& self) -> void {
    for (auto& [name, t] : m.parameters_) own.insert(joined(prefix, name), t);
    for (auto& [name, t] : m.buffers_)
      if (t.defined()) own.insert(joined(prefix, name), t);
    for (const auto& [name, child] : m.children_) self(joined(prefix, name), *child, self);
  };
  collect("", *this, collect);

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
  for (const auto& [name, child] : children_) child->apply(fn);
  fn(*this);
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
