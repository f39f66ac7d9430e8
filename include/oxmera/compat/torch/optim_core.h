#pragma once
// Part of oxmera/compat/torch.h (docs/COMPAT.md): torch::optim over oxmera's optimizers.
// torch::optim::Adam IS an ox::optim::Adam (same update, same state dict, ox::save/load take it)
// that also implements LibTorch's interface torch::optim::Optimizer: options classes with
// positional lr and chainable setters, param_groups() whose options() are LibTorch's options
// classes bound to the oxmera group (`static_cast<AdamOptions&>(opt.param_groups()[0].options())
// .lr(1e-4)` changes the rate the next step uses), step(closure), zero_grad(), and LibTorch's
// LR schedulers (StepLR) over that interface.

#include <functional>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "oxmera/compat/torch/core.h"

namespace torch::optim {

// LibTorch's base of the options classes: what a param group's options() is.
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;

 protected:
  OptimizerOptions() = default;
  OptimizerOptions(const OptimizerOptions&) = default;
  OptimizerOptions& operator=(const OptimizerOptions&) = default;
};

namespace detail {
// The options values of one optimizer: its own (a value the user builds) or, once bound, those
// of group `group` of an oxmera optimizer, read and written in place. Copies are values.
template <class Derived, class OxOptions>
class BoundOptions : public OptimizerOptions {
 public:
  using OxGroups = std::vector<ox::optim::ParamGroup<OxOptions>>;

  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  double get_lr() const override { return target().lr; }
  void set_lr(double lr) override { target().lr = lr; }
  // oxmera's options with these values.
  const OxOptions& ox_options() const { return target(); }
  void bind(OxGroups* groups, size_t group) {
    groups_ = groups;
    group_ = group;
  }

 protected:
  BoundOptions() = default;
  BoundOptions(const BoundOptions& other) : OptimizerOptions(), value_(other.target()) {}
  BoundOptions& operator=(const BoundOptions& other) {
    if (this != &other) target() = other.target();
    return *this;
  }
  OxOptions& target() { return groups_ ? static_cast<OxOptions&>((*groups_)[group_]) : value_; }
  const OxOptions& target() const {
    return groups_ ? static_cast<const OxOptions&>((*groups_)[group_]) : value_;
  }

 private:
  OxOptions value_{};
  OxGroups* groups_ = nullptr;
  size_t group_ = 0;
};
}  // namespace detail

// A getter `name()` and a chainable setter `name(value)` over the oxmera field of that name.
#define OX_COMPAT_OPTIM_ARG(Class, T, name)      \
  T name() const { return this->target().name; } \
  Class& name(T value) {                         \
    this->target().name = value;                 \
    return *this;                                \
  }
#define OX_COMPAT_OPTIM_BETAS(Class)                                                   \
  using betas_t = std::tuple<double, double>;                                          \
  betas_t betas() const { return {this->target().betas[0], this->target().betas[1]}; } \
  Class& betas(const betas_t& value) {                                                 \
    this->target().betas = {std::get<0>(value), std::get<1>(value)};                   \
    return *this;                                                                      \
  }

class SGDOptions : public detail::BoundOptions<SGDOptions, ox::optim::SGDOptions> {
 public:
  SGDOptions(double lr) { target().lr = lr; }  // NOLINT: LibTorch's implicit form
  OX_COMPAT_OPTIM_ARG(SGDOptions, double, lr)
  OX_COMPAT_OPTIM_ARG(SGDOptions, double, momentum)
  OX_COMPAT_OPTIM_ARG(SGDOptions, double, dampening)
  OX_COMPAT_OPTIM_ARG(SGDOptions, double, weight_decay)
  OX_COMPAT_OPTIM_ARG(SGDOptions, bool, nesterov)
};

class AdamOptions : public detail::BoundOptions<AdamOptions, ox::optim::AdamOptions> {
 public:
  AdamOptions(double lr = 1e-3) { target().lr = lr; }  // NOLINT
  OX_COMPAT_OPTIM_ARG(AdamOptions, double, lr)
  OX_COMPAT_OPTIM_BETAS(AdamOptions)
  OX_COMPAT_OPTIM_ARG(AdamOptions, double, eps)
  OX_COMPAT_OPTIM_ARG(AdamOptions, double, weight_decay)
  OX_COMPAT_OPTIM_ARG(AdamOptions, bool, amsgrad)
};

class AdamWOptions : public detail::BoundOptions<AdamWOptions, ox::optim::AdamWOptions> {
 public:
  AdamWOptions(double lr = 1e-3) { target().lr = lr; }  // NOLINT
  OX_COMPAT_OPTIM_ARG(AdamWOptions, double, lr)
  OX_COMPAT_OPTIM_BETAS(AdamWOptions)
  OX_COMPAT_OPTIM_ARG(AdamWOptions, double, eps)
  OX_COMPAT_OPTIM_ARG(AdamWOptions, double, weight_decay)
  OX_COMPAT_OPTIM_ARG(AdamWOptions, bool, amsgrad)
};

class RMSpropOptions : public detail::BoundOptions<RMSpropOptions, ox::optim::RMSpropOptions> {
 public:
  RMSpropOptions(double lr = 1e-2) { target().lr = lr; }  // NOLINT
  OX_COMPAT_OPTIM_ARG(RMSpropOptions, double, lr)
  OX_COMPAT_OPTIM_ARG(RMSpropOptions, double, alpha)
  OX_COMPAT_OPTIM_ARG(RMSpropOptions, double, eps)
  OX_COMPAT_OPTIM_ARG(RMSpropOptions, double, weight_decay)
  OX_COMPAT_OPTIM_ARG(RMSpropOptions, double, momentum)
  OX_COMPAT_OPTIM_ARG(RMSpropOptions, bool, centered)
};

class AdagradOptions : public detail::BoundOptions<AdagradOptions, ox::optim::AdagradOptions> {
 public:
  AdagradOptions(double lr = 1e-2) { target().lr = lr; }  // NOLINT
  OX_COMPAT_OPTIM_ARG(AdagradOptions, double, lr)
  OX_COMPAT_OPTIM_ARG(AdagradOptions, double, lr_decay)
  OX_COMPAT_OPTIM_ARG(AdagradOptions, double, weight_decay)
  OX_COMPAT_OPTIM_ARG(AdagradOptions, double, initial_accumulator_value)
  OX_COMPAT_OPTIM_ARG(AdagradOptions, double, eps)
};
#undef OX_COMPAT_OPTIM_ARG
#undef OX_COMPAT_OPTIM_BETAS

// A parameter group as LibTorch's: parameters and (optionally) options. The groups an optimizer's
// param_groups() returns are views of its oxmera groups; a copy is a plain value.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other)
      : params_(other.params()),
        options_(other.has_options() ? other.options().clone() : nullptr) {}
  OptimizerParamGroup(OptimizerParamGroup&&) noexcept = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) noexcept = default;
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other) {
    if (this != &other) *this = OptimizerParamGroup(other);
    return *this;
  }

  bool has_options() const { return options_ != nullptr; }
  OptimizerOptions& options() {
    OX_CHECK(options_ != nullptr, Value, "torch::optim::OptimizerParamGroup", "has no options");
    return *options_;
  }
  const OptimizerOptions& options() const {
    return const_cast<OptimizerParamGroup*>(this)->options();
  }
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return bound_params_ ? bound_params_() : params_; }
  const std::vector<Tensor>& params() const {
    return const_cast<OptimizerParamGroup*>(this)->params();
  }

  // Makes this group a view: params() reads the oxmera group's list.
  void bind_params(std::function<std::vector<Tensor>&()> params) {
    bound_params_ = std::move(params);
  }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
  std::function<std::vector<Tensor>&()> bound_params_;
};

// LibTorch's optimizer interface (what schedulers and user code holding a base reference use).
// Every torch::optim optimizer is also an ox::optim optimizer: ox_optimizer() is that.
class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;
  virtual ~Optimizer() = default;
  // Calls the closure (if any) with gradients enabled, then updates; returns the closure's loss.
  virtual Tensor step(LossClosure closure = nullptr) = 0;
  // set_to_none (LibTorch 2's default): drop the gradients; false: zero them (LibTorch 1.x).
  virtual void zero_grad(bool set_to_none = true) = 0;
  virtual std::vector<OptimizerParamGroup>& param_groups() = 0;
  virtual const std::vector<OptimizerParamGroup>& param_groups() const = 0;
  virtual void add_param_group(const OptimizerParamGroup& group) = 0;
  virtual OptimizerOptions& defaults() = 0;
  virtual size_t size() const = 0;  // the number of parameters
  virtual ox::optim::Optimizer& ox_optimizer() = 0;
  virtual const ox::optim::Optimizer& ox_optimizer() const = 0;

 protected:
  Optimizer() = default;
};

namespace detail {
// torch::optim::X: oxmera's optimizer X with the LibTorch interface above.
template <class OxOptimizer, class Options, class GroupSpec>
class OptimizerAdapter : public OxOptimizer, public Optimizer {
  using OxGroups = typename Options::OxGroups;

 public:
  OptimizerAdapter(const std::vector<Tensor>& params, const Options& defaults)
      : OxOptimizer(params, defaults.ox_options()), defaults_(defaults) {}
  OptimizerAdapter(const std::vector<OptimizerParamGroup>& groups, const Options& defaults)
      : OxOptimizer(specs(groups, defaults), defaults.ox_options()), defaults_(defaults) {}

  Tensor step(LossClosure closure) override {
    Tensor loss;
    if (closure) {
      AutoGradMode enable(true);
      loss = closure();
    }
    OxOptimizer::step();
    return loss;
  }
  void step() override { OxOptimizer::step(); }
  void zero_grad(bool set_to_none = true) override { ox::optim::Optimizer::zero_grad(set_to_none); }
  std::vector<OptimizerParamGroup>& param_groups() override {
    OxGroups& groups = OxOptimizer::param_groups();
    for (size_t g = views_.size(); g < groups.size(); ++g) {
      auto options = std::make_unique<Options>(defaults_);
      options->bind(&groups, g);
      OptimizerParamGroup view(std::vector<Tensor>{}, std::move(options));
      view.bind_params(
          [this, g]() -> std::vector<Tensor>& { return OxOptimizer::param_groups()[g].params; });
      views_.push_back(std::move(view));
    }
    return views_;
  }
  const std::vector<OptimizerParamGroup>& param_groups() const override {
    return const_cast<OptimizerAdapter*>(this)->param_groups();
  }
  void add_param_group(const OptimizerParamGroup& group) override {
    OxOptimizer::add_param_group(spec(group, defaults_));
  }
  OptimizerOptions& defaults() override { return defaults_; }
  size_t size() const override { return OxOptimizer::parameters().size(); }
  ox::optim::Optimizer& ox_optimizer() override { return *this; }
  const ox::optim::Optimizer& ox_optimizer() const override { return *this; }

 private:
  // oxmera's group spec for a LibTorch group: every option from the group's options, or from the
  // defaults when it has none.
  static GroupSpec spec(const OptimizerParamGroup& group, const Options& defaults) {
    const Options* options = &defaults;
    if (group.has_options()) {
      options = dynamic_cast<const Options*>(&group.options());
      OX_CHECK(options != nullptr, Value, "torch::optim",
               "a param group's options are of another optimizer's type");
    }
    GroupSpec out;
    out.params = group.params();
    auto values = options->ox_options();
    auto to = out.tie();
    auto from = values.tie();
    [&]<size_t... I>(std::index_sequence<I...>) { ((std::get<I>(to) = std::get<I>(from)), ...); }
    (std::make_index_sequence<std::tuple_size_v<decltype(from)>>{});
    return out;
  }
  static std::vector<GroupSpec> specs(const std::vector<OptimizerParamGroup>& groups,
                                      const Options& defaults) {
    std::vector<GroupSpec> out;
    for (const OptimizerParamGroup& g : groups) out.push_back(spec(g, defaults));
    return out;
  }

  Options defaults_;
  std::vector<OptimizerParamGroup> views_;
};
}  // namespace detail

}  // namespace torch::optim
