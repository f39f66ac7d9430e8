#include "oxmera/nn/containers.h"

namespace ox::nn {

SequentialImpl::SequentialImpl(std::vector<std::pair<std::string, AnyModule>> named)
    : Module("Sequential") {
  for (auto& [name, module] : named) push_back(std::move(name), std::move(module));
}

void SequentialImpl::push_back(AnyModule module) {
  push_back(std::to_string(items_.size()), std::move(module));
}

void SequentialImpl::push_back(std::string name, AnyModule module) {
  register_module(std::move(name), module.ptr());
  items_.push_back(std::move(module));
}

Tensor SequentialImpl::forward(const Tensor& input) const {
  Tensor x = input;
  for (const AnyModule& module : items_) x = module.forward(x);
  return x;
}

const ModulePtr& SequentialImpl::operator[](size_t index) const {
  OX_CHECK(index < items_.size(), Index, "Sequential", "index ", index, " is out of range for ",
           items_.size(), " modules");
  return items_[index].ptr();
}

void ModuleListImpl::push_back(ModulePtr module) {
  register_module(std::to_string(items_.size()), module);
  items_.push_back(std::move(module));
}

const ModulePtr& ModuleListImpl::operator[](size_t index) const {
  OX_CHECK(index < items_.size(), Index, "ModuleList", "index ", index, " is out of range for ",
           items_.size(), " modules");
  return items_[index];
}

void ModuleDictImpl::insert(std::string name, ModulePtr module) {
  register_module(std::move(name), std::move(module));
}

const ModulePtr& ModuleDictImpl::operator[](const std::string& name) const {
  return named_children().at(name);
}

FunctionalImpl::FunctionalImpl(std::function<Tensor(const Tensor&)> fn, std::string name)
    : Module(std::move(name)), fn_(std::move(fn)) {
  OX_CHECK(fn_ != nullptr, Value, "Functional", "the function is empty");
}

}  // namespace ox::nn
