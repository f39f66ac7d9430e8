#pragma once
// ox::nn::Module, the base of every layer, and the holders users pass around: `ox::nn::Linear`
// is a std::shared_ptr<LinearImpl> (OX_MODULE), as in LibTorch.

#include <concepts>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "oxmera/ordered_dict.h"
#include "oxmera/tensor.h"

namespace ox::nn {

class Module;
using ModulePtr = std::shared_ptr<Module>;

// What load_state_dict(dict, /*strict=*/false) left out.
struct LoadStateResult {
  std::vector<std::string> missing_keys;     // in the module, not in the dict
  std::vector<std::string> unexpected_keys;  // in the dict, not in the module
};

class Module : public std::enable_shared_from_this<Module> {
 public:
  // type_name is what printing and summary show ("Linear").
  explicit Module(std::string type_name = "Module") : type_name_(std::move(type_name)) {}
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  const std::string& type_name() const { return type_name_; }

  // Registration. Names are plain identifiers (no '.'); registering a name twice is a Value
  // error. The returned handle is the registered tensor itself: Module::to converts it in
  // place, so a layer keeps `weight = register_parameter("weight", ...)`. A buffer may be
  // undefined (BatchNorm without running statistics): it is then left out of state_dict.
  Tensor& register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  Tensor& register_buffer(std::string name, Tensor tensor);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    add_child(std::move(name), module);
    return module;
  }
  template <class Holder>
  requires requires { typename Holder::ImplType; }
  Holder register_module(std::string name, Holder holder) {
    add_child(std::move(name), holder.ptr());
    return holder;
  }
  // Parameters and buffers of this module and (recurse) its descendants, in registration order:
  // own ones first, then each child's with its dotted name ("0.weight", "fc1.bias"). A tensor
  // registered under two names (tied weights) is listed once, under its first.
  std::vector<Tensor> parameters(bool recurse = true) const;
  TensorDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  TensorDict named_buffers(bool recurse = true) const;
  std::vector<ModulePtr> children() const;
  const OrderedDict<ModulePtr>& named_children() const { return children_; }
  // This module first, then every descendant, depth first, each once. For a module that is not
  // owned by a shared_ptr (one on the stack) the pointer to itself does not own it.
  std::vector<ModulePtr> modules(bool include_self = true);
  OrderedDict<ModulePtr> named_modules(const std::string& prefix = "", bool include_self = true);

  // Training mode (dropout, batch norm), set recursively.
  virtual void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Converts every parameter, gradient and buffer in place. to(dtype) converts floating
  // tensors only (integer buffers keep their dtype), as PyTorch; modules compute in f32 or
  // f64 (a DType error for any other dtype).
  void to(Device device);
  void to(DType dtype);
  void to(Device device, DType dtype);

  // Clears (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  // Parameters and defined buffers by dotted name, detached (sharing their storage); tied
  // tensors appear under each of their names, as PyTorch.
  TensorDict state_dict() const;
  // Copies `dict` into the parameters and buffers (converting dtypes, under no-grad). A key
  // whose shape differs is always an error; strict also refuses missing and unexpected keys.
  // One Value error lists every problem found.
  LoadStateResult load_state_dict(const TensorDict& dict, bool strict = true);

  // fn on every descendant, then on this module (PyTorch's order).
  void apply(const std::function<void(Module&)>& fn);

  // One line describing this module's own settings ("Linear(in_features=2, ...)"); printing a
  // module (operator<<) nests its children's lines below it, as PyTorch's repr.
  virtual void pretty_print(std::ostream& os) const;

 protected:
  // A shared_ptr to this module (non-owning when it was not made by make_shared).
  ModulePtr self_ptr();

 private:
  void add_child(std::string name, ModulePtr child);
  // Replaces every parameter's and buffer's data (and each gradient) by convert(it), in place.
  void convert_tensors(const std::function<Tensor(const Tensor&)>& convert);
  // fn(dotted name, tensor, is_buffer) for every registration, tied tensors under each name.
  template <class M, class F>
  static void walk_tensors(M& module, const std::string& prefix, bool recurse, F&& fn);
  TensorDict unique_tensors(bool buffers, bool recurse) const;

  std::string type_name_;
  TensorDict parameters_;
  TensorDict buffers_;
  OrderedDict<ModulePtr> children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& module);

namespace detail {
// Calls made through a holder or a container report their module and output here, so that
// summary() can see each layer's output shape without hooks in every forward.
struct ForwardObserver {
  virtual ~ForwardObserver() = default;
  virtual void enter(const Module& module) = 0;
  virtual void leave(const Module& module, const Tensor* output) = 0;
};
ForwardObserver*& forward_observer();

template <class Result>
void observe_leave(ForwardObserver* observer, const Module& module, const Result& result) {
  if constexpr (std::is_same_v<std::remove_cvref_t<Result>, Tensor>)
    observer->leave(module, &result);
  else
    observer->leave(module, nullptr);
}

template <class M, class... Args>
decltype(auto) call_forward(M& module, Args&&... args) {
  ForwardObserver* observer = forward_observer();
  if (observer == nullptr) return module.forward(std::forward<Args>(args)...);
  observer->enter(module);
  auto result = module.forward(std::forward<Args>(args)...);
  observe_leave(observer, module, result);
  return decltype(module.forward(std::forward<Args>(args)...))(std::move(result));
}
}  // namespace detail

namespace detail {
struct NoOptions {  // never constructed: the options overloads below are then never viable
  NoOptions() = delete;
};
template <class Impl>
struct options_of {
  using type = NoOptions;
};
template <class Impl>
requires requires { typename Impl::Options; }
struct options_of<Impl> {
  using type = typename Impl::Options;
};
}  // namespace detail

// A shared_ptr to an Impl module that constructs one from the Impl's constructor arguments
// (`Linear(784, 128)`) and calls its forward with operator(). An Impl that declares `Options`
// (its options aggregate) also takes them as a braced list after up to three arguments:
// `Linear(3, 2, {.bias = false})`, `MSELoss({.reduction = "sum"})`.
template <class Impl>
class ModuleHolder : public std::shared_ptr<Impl> {
 public:
  using ImplType = Impl;
  using Options = typename detail::options_of<Impl>::type;

  ModuleHolder(std::nullptr_t) {}  // NOLINT: an empty holder, to assign later
  ModuleHolder(std::shared_ptr<Impl> impl) : std::shared_ptr<Impl>(std::move(impl)) {}  // NOLINT
  template <class... Args>
  requires(std::is_constructible_v<Impl, Args...> &&
           !(sizeof...(Args) == 1 &&
             (std::is_base_of_v<ModuleHolder, std::remove_cvref_t<Args>> || ...)))
      ModuleHolder(Args&&... args)  // NOLINT: `Linear fc = Linear(2, 3)` reads like LibTorch
      : std::shared_ptr<Impl>(std::make_shared<Impl>(std::forward<Args>(args)...)) {}

  ModuleHolder(const Options& options)  // NOLINT
      requires std::is_constructible_v<Impl, const Options&>
      : std::shared_ptr<Impl>(std::make_shared<Impl>(options)) {}
  template <class A>
  requires std::is_constructible_v<Impl, A, const Options&> ModuleHolder(A&& a,
                                                                         const Options& options)
      : std::shared_ptr<Impl>(std::make_shared<Impl>(std::forward<A>(a), options)) {}
  template <class A, class B>
  requires std::is_constructible_v<Impl, A, B, const Options&> ModuleHolder(A&& a, B&& b,
                                                                            const Options& options)
      : std::shared_ptr<Impl>(
            std::make_shared<Impl>(std::forward<A>(a), std::forward<B>(b), options)) {}
  template <class A, class B, class C>
  requires std::is_constructible_v<Impl, A, B, C, const Options&> ModuleHolder(
      A&& a, B&& b, C&& c, const Options& options)
      : std::shared_ptr<Impl>(std::make_shared<Impl>(std::forward<A>(a), std::forward<B>(b),
                                                     std::forward<C>(c), options)) {}

  const std::shared_ptr<Impl>& ptr() const { return *this; }
  Impl& impl() const {
    OX_CHECK(this->get() != nullptr, Value, "nn", "the module holder is empty");
    return *this->get();
  }
  template <class... Args>
  decltype(auto) operator()(Args&&... args) const {
    return detail::call_forward(impl(), std::forward<Args>(args)...);
  }
};

// Prints the module, not the pointer: `std::cout << model` as PyTorch's print(model).
template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& holder) {
  return os << static_cast<const Module&>(holder.impl());
}

#define OX_MODULE(Name)                                     \
  class Name : public ::ox::nn::ModuleHolder<Name##Impl> {  \
   public:                                                  \
    using ::ox::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
    using ::ox::nn::ModuleHolder<Name##Impl>::operator=;    \
  }

// OX_MODULE plus a constructor with the Impl's own parameter types, for layers whose arguments
// are braced lists themselves: `Conv2d(1, 8, {3, 2}, {.stride = 2})`.
#define OX_MODULE_WITH_SIGNATURE(Name, PARAMETERS, ARGUMENTS)                                      \
  class Name : public ::ox::nn::ModuleHolder<Name##Impl> {                                         \
   public:                                                                                         \
    using ::ox::nn::ModuleHolder<Name##Impl>::ModuleHolder;                                        \
    using ::ox::nn::ModuleHolder<Name##Impl>::operator=;                                           \
    Name PARAMETERS : ::ox::nn::ModuleHolder<Name##Impl>(std::make_shared<Name##Impl> ARGUMENTS) { \
    }                                                                                              \
  }

// Any module whose forward takes and returns one tensor, type-erased (what Sequential holds).
class AnyModule {
 public:
  // From a holder (`Linear(2, 3)`, a shared_ptr to its Impl) or any shared_ptr to a module
  // with `Tensor forward(const Tensor&)`.
  template <class Impl>
  requires requires(Impl& m, const Tensor& x) {
    { m.forward(x) } -> std::convertible_to<Tensor>;
  }
  AnyModule(std::shared_ptr<Impl> module)  // NOLINT
      : module_(module),
        forward_([m = module.get()](const Tensor& x) { return detail::call_forward(*m, x); }) {}
  Tensor forward(const Tensor& x) const { return forward_(x); }
  const ModulePtr& ptr() const { return module_; }

 private:
  ModulePtr module_;
  std::function<Tensor(const Tensor&)> forward_;
};

// Checks that a layer's input has the dtype of its parameters (modules do not promote):
// `[Linear] input dtype f64 does not match the parameters' f32`.
void check_input_dtype(const char* layer, const Tensor& input, const Tensor& parameter);

// A table of the layers called through their holders while model runs once, in eval mode and
// without gradients, on zeros of input_shape: name, type, output shape, parameter count, then
// the totals. The input takes input_dtype (default: the parameters' dtype; pass kI64 for a
// model that takes indices) on the parameters' device. Every module's mode is restored.
template <class Holder>
std::string summary(const Holder& model, const Shape& input_shape,
                    std::optional<DType> input_dtype = std::nullopt);
std::string summary(Module& model, const std::function<Tensor(const Tensor&)>& forward,
                    const Shape& input_shape, std::optional<DType> input_dtype = std::nullopt);

template <class Holder>
std::string summary(const Holder& model, const Shape& input_shape,
                    std::optional<DType> input_dtype) {
  return summary(
      model.impl(), [&](const Tensor& x) { return Tensor(model(x)); }, input_shape, input_dtype);
}

}  // namespace ox::nn
