#pragma once
// Containers: Sequential (runs its children in order), ModuleList, ModuleDict, and Functional
// (a callable as a module).

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "oxmera/nn/module.h"

namespace ox::nn {

// `Sequential(Linear(784, 128), ReLU(), Linear(128, 10))`, or named:
// `Sequential({{"fc1", Linear(784, 128)}, {"act", ReLU()}})`; children are named "0", "1", ...
// unless given names.
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <class... Modules>
  requires(sizeof...(Modules) > 0 && (std::is_convertible_v<Modules, AnyModule> &&
                                      ...)) explicit SequentialImpl(Modules&&... modules)
      : Module("Sequential") {
    (push_back(AnyModule(std::forward<Modules>(modules))), ...);
  }
  explicit SequentialImpl(std::vector<std::pair<std::string, AnyModule>> named);

  void push_back(AnyModule module);
  void push_back(std::string name, AnyModule module);
  Tensor forward(const Tensor& input) const;

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  const ModulePtr& operator[](size_t index) const;
  // The child at index as its Impl type (Value error when it is another type).
  template <class Impl>
  std::shared_ptr<Impl> at(size_t index) const {
    auto cast = std::dynamic_pointer_cast<Impl>((*this)[index]);
    OX_CHECK(cast != nullptr, Value, "Sequential", "child ", index, " is a ",
             (*this)[index]->type_name(), ", not the type asked for");
    return cast;
  }

 private:
  std::vector<AnyModule> items_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() : ModuleHolder(std::make_shared<SequentialImpl>()) {}
  Sequential(std::initializer_list<std::pair<std::string, AnyModule>> named)
      : ModuleHolder(std::make_shared<SequentialImpl>(
            std::vector<std::pair<std::string, AnyModule>>(named))) {}
};

// Holds modules by index (no forward of its own): `list->push_back(Linear(2, 2))`.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <class... Modules>
  requires(sizeof...(Modules) > 0) explicit ModuleListImpl(Modules&&... modules)
      : Module("ModuleList") {
    (push_back(std::forward<Modules>(modules)), ...);
  }
  template <class Holder>
  requires requires(const Holder& h) { h.ptr(); }
  void push_back(const Holder& holder) { push_back(ModulePtr(holder.ptr())); }
  void push_back(ModulePtr module);
  size_t size() const { return items_.size(); }
  const ModulePtr& operator[](size_t index) const;
  template <class Impl>
  std::shared_ptr<Impl> at(size_t index) const {
    auto cast = std::dynamic_pointer_cast<Impl>((*this)[index]);
    OX_CHECK(cast != nullptr, Value, "ModuleList", "item ", index, " is a ",
             (*this)[index]->type_name(), ", not the type asked for");
    return cast;
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<ModulePtr> items_;
};
class ModuleList : public ModuleHolder<ModuleListImpl> {
 public:
  using ModuleHolder<ModuleListImpl>::ModuleHolder;
  ModuleList() : ModuleHolder(std::make_shared<ModuleListImpl>()) {}
};

// Holds modules by name, in insertion order.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() : Module("ModuleDict") {}
  template <class Holder>
  requires requires(const Holder& h) { h.ptr(); }
  void insert(std::string name, const Holder& holder) {
    insert(std::move(name), ModulePtr(holder.ptr()));
  }
  void insert(std::string name, ModulePtr module);
  bool contains(const std::string& name) const { return named_children().contains(name); }
  const ModulePtr& operator[](const std::string& name) const;
  template <class Impl>
  std::shared_ptr<Impl> at(const std::string& name) const {
    auto cast = std::dynamic_pointer_cast<Impl>((*this)[name]);
    OX_CHECK(cast != nullptr, Value, "ModuleDict", "'", name, "' is a ", (*this)[name]->type_name(),
             ", not the type asked for");
    return cast;
  }
  size_t size() const { return named_children().size(); }
  std::vector<std::string> keys() const { return named_children().keys(); }
};
class ModuleDict : public ModuleHolder<ModuleDictImpl> {
 public:
  using ModuleHolder<ModuleDictImpl>::ModuleHolder;
  ModuleDict() : ModuleHolder(std::make_shared<ModuleDictImpl>()) {}
};

// A function as a module (no parameters): `Functional([](const Tensor& x) { return x * 2; })`.
class FunctionalImpl : public Module {
 public:
  explicit FunctionalImpl(std::function<Tensor(const Tensor&)> fn, std::string name = "Functional");
  Tensor forward(const Tensor& input) const { return fn_(input); }

 private:
  std::function<Tensor(const Tensor&)> fn_;
};
OX_MODULE(Functional);

}  // namespace ox::nn
