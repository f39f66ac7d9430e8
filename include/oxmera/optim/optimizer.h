#pragma once
// The optimizer base: parameter groups with per-group options, per-parameter state, zeroing
// gradients, and state_dict / load_state_dict as a TensorDict. Concrete optimizers (sgd.h,
// adam.h, ...) implement step() with the public op surface (and a fused backend primitive
// where one exists).

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "oxmera/ordered_dict.h"
#include "oxmera/tensor.h"

namespace ox::optim {

// (beta1, beta2): `.betas = {0.9, 0.99}`.
using Betas = std::array<double, 2>;

// A parameter group as the optimizer holds it: the resolved options of the concrete optimizer
// (every field a plain value, writable: `opt.param_groups()[0].lr = 1e-4`) and its parameters.
template <class Options>
struct ParamGroup : Options {
  std::vector<Tensor> params;
};

// What an optimizer keeps per parameter: host counters (the step count, NAdam's mu_product)
// and buffers (exp_avg, momentum_buffer, ...), created on the first step that reaches it.
struct ParamState {
  OrderedDict<double> scalars;
  TensorDict buffers;
  bool empty() const { return scalars.empty() && buffers.empty(); }
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of every parameter whose gradient is defined, in place, without recording.
  virtual void step() = 0;
  // Resets every parameter's gradient: to undefined (set_to_none) or to zeros.
  void zero_grad(bool set_to_none = true);

  // Group access without knowing the concrete optimizer (what schedulers use).
  virtual size_t num_param_groups() const = 0;
  virtual double get_lr(size_t group) const = 0;
  virtual void set_lr(size_t group, double lr) = 0;
  virtual const std::vector<Tensor>& group_params(size_t group) const = 0;
  // The momentum a schedule may cycle (OneCycleLR): SGD's and RMSprop's momentum, beta1 of the
  // Adam family and Lion; nullopt (and set_momentum a Value error) for optimizers without one.
  virtual std::optional<double> get_momentum(size_t group) const = 0;
  virtual void set_momentum(size_t group, double momentum) = 0;
  // Every parameter, group after group: the numbering of "state.<i>.*" keys.
  std::vector<Tensor> parameters() const;

  // The state of the parameter numbered `index` (see parameters()).
  const ParamState& state(size_t index) const;

  // "state.<i>.<name>" for each buffer (the optimizer's own tensors, not copies) and each host
  // counter (0-d f64: "state.<i>.step"), with "state.<i>.master" (f32) for a parameter stepped
  // through master weights; "param_groups.<g>.<option>" for each option of each
  // group (0-d f64 numbers, 1-d f64 betas, 0-d bool flags, 0-d i64 for `fused`: -1 unset) and
  // "param_groups.<g>.params" (1-d i64: the numbers of the group's parameters).
  TensorDict state_dict() const;
  // Replaces the state and the groups' options with copies of `dict`'s, which must come from an
  // optimizer of the same kind over parameters of the same shapes, grouped the same way
  // (Value error for a different group or parameter count, a missing or unknown key; Shape error
  // for a buffer whose shape is not its parameter's). Buffers take their parameter's dtype and
  // device, except a parameter's with a "master" (master weights), which stay f32. A dict
  // without "master_weights" options (older checkpoints) keeps the groups' flags. Nothing
  // changes when it throws.
  void load_state_dict(const TensorDict& dict);

 protected:
  Optimizer() = default;
  // Checks parameters about to join a group: defined floating leaves, none already held.
  void check_new_params(const std::vector<Tensor>& params, const char* op) const;
  // The state of parameter `index_in_group` of `group`, created empty on first use.
  ParamState& state_of(size_t group, size_t index_in_group);

  // Options of group g as tensors under `prefix` ("param_groups.<g>."); and every group's
  // options back from such tensors, all checked before any group changes.
  virtual void write_group_options(size_t group, const std::string& prefix,
                                   TensorDict& out) const = 0;
  virtual void read_all_group_options(const TensorDict& in) = 0;
  virtual const char* name() const = 0;

 private:
  size_t first_index(size_t group) const;
  std::vector<ParamState> state_;  // by parameter number
};

namespace detail {

// Option values as state_dict tensors and back (Value error naming `key` for a wrong form).
Tensor option_tensor(double value);
Tensor option_tensor(bool value);
Tensor option_tensor(const Betas& value);
Tensor option_tensor(const std::optional<bool>& value);
void read_option(const Tensor& t, const std::string& key, double& out);
void read_option(const Tensor& t, const std::string& key, bool& out);
void read_option(const Tensor& t, const std::string& key, Betas& out);
void read_option(const Tensor& t, const std::string& key, std::optional<bool>& out);
const Tensor& find_key(const TensorDict& in, const std::string& key, const char* op);

// Master weights: whether a parameter gets an f32 master copy (f16 and bf16 ones); the master
// ("master" in its state: created from the parameter on its first step, kept on the parameter's
// device) with its gradient set to the parameter's, in f32; and the write back, rounding the
// master into the parameter once and dropping the master's gradient.
bool wants_master(const Tensor& param);
Tensor master_for_step(const Tensor& param, ParamState& state);
void finish_master_step(const Tensor& param, Tensor& master);

}  // namespace detail

// The part every concrete optimizer shares, over its Options (an aggregate of plain values with
// `tie()` and `names`) and its GroupSpec (the same fields as std::optional, falling back to the
// optimizer's defaults, after `params`). Each Options has `void validate(const char* op) const`.
template <class Options, class GroupSpec>
class GroupedOptimizer : public Optimizer {
 public:
  using Group = ParamGroup<Options>;

  std::vector<Group>& param_groups() { return groups_; }
  const std::vector<Group>& param_groups() const { return groups_; }
  const Options& defaults() const { return defaults_; }

  // A new group; unset options take the optimizer's defaults.
  void add_param_group(const GroupSpec& spec) {
    Options options = defaults_;
    resolve(options, spec, std::make_index_sequence<std::tuple_size_v<decltype(options.tie())>>{});
    options.validate(name());
    check_new_params(spec.params, name());
    groups_.push_back(Group{options, spec.params});
  }

  size_t num_param_groups() const override { return groups_.size(); }
  double get_lr(size_t group) const override { return at(group).lr; }
  void set_lr(size_t group, double lr) override { at_mut(group).lr = lr; }
  const std::vector<Tensor>& group_params(size_t group) const override { return at(group).params; }
  std::optional<double> get_momentum(size_t group) const override {
    if constexpr (requires(const Options& o) { o.momentum; })
      return at(group).momentum;
    else if constexpr (requires(const Options& o) { o.betas; })
      return at(group).betas[0];
    else
      return (void)at(group), std::nullopt;
  }
  void set_momentum(size_t group, double momentum) override {
    if constexpr (requires(Options & o) { o.momentum; })
      at_mut(group).momentum = momentum;
    else if constexpr (requires(Options & o) { o.betas; })
      at_mut(group).betas[0] = momentum;
    else
      OX_FAIL(Value, name(), "has no momentum to set (group ", group, ", value ", momentum, ")");
  }

 protected:
  explicit GroupedOptimizer(const Options& defaults) : defaults_(defaults) {}
  // Called by the concrete constructor, whose name() is then available.
  void init(const std::vector<GroupSpec>& groups) {
    defaults_.validate(name());
    size_t count = 0;
    for (const GroupSpec& g : groups) count += g.params.size();
    OX_CHECK(count > 0, Value, name(), "got an empty parameter list");
    for (const GroupSpec& g : groups) add_param_group(g);
  }

  // f(group options, parameter, its state) for each parameter whose gradient is defined. In a
  // master_weights group an f16/bf16 parameter is stepped through its f32 master: f sees the
  // master, holding the gradient in f32, and the result is rounded once into the parameter.
  template <class F>
  void for_each_param_with_grad(F&& f) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      const Group& group = groups_[g];
      for (size_t i = 0; i < group.params.size(); ++i) {
        const Tensor& p = group.params[i];
        if (!p.grad().defined()) continue;
        ParamState& state = state_of(g, i);
        if (group.master_weights && detail::wants_master(p)) {
          Tensor master = detail::master_for_step(p, state);
          f(group, std::as_const(master), state);
          detail::finish_master_step(p, master);
        } else {
          f(group, p, state);
        }
      }
    }
  }

  void write_group_options(size_t group, const std::string& prefix,
                           TensorDict& out) const override {
    Options options = at(group);  // a copy: tie() is not const
    std::apply(
        [&](auto&... fields) {
          size_t i = 0;
          ((out.insert(prefix + std::string(Options::names[i++]), detail::option_tensor(fields))),
           ...);
        },
        options.tie());
  }
  void read_all_group_options(const TensorDict& in) override {
    std::vector<Options> loaded;
    for (size_t g = 0; g < groups_.size(); ++g) {
      const std::string prefix = "param_groups." + std::to_string(g) + ".";
      Options options = groups_[g];
      std::apply(
          [&](auto&... fields) {
            size_t i = 0;
            const auto read = [&](auto& field) {
              const std::string key = prefix + std::string(Options::names[i++]);
              // Checkpoints from before master weights lack the flag: the group keeps its own.
              if (key.ends_with(".master_weights") && !in.contains(key)) return;
              detail::read_option(detail::find_key(in, key, name()), key, field);
            };
            (read(fields), ...);
          },
          options.tie());
      options.validate(name());
      loaded.push_back(options);
    }
    for (size_t g = 0; g < groups_.size(); ++g) static_cast<Options&>(groups_[g]) = loaded[g];
  }

 private:
  template <size_t... I>
  static void resolve(Options& options, const GroupSpec& spec, std::index_sequence<I...>) {
    auto fields = options.tie();
    auto given = const_cast<GroupSpec&>(spec).tie();
    ((std::get<I>(given) ? void(std::get<I>(fields) = *std::get<I>(given)) : void()), ...);
  }
  const Group& at(size_t group) const {
    OX_CHECK(group < groups_.size(), Index, name(), "param group ", group, " out of range for ",
             groups_.size(), " groups");
    return groups_[group];
  }
  Group& at_mut(size_t group) { return const_cast<Group&>(std::as_const(*this).at(group)); }

  Options defaults_;
  std::vector<Group> groups_;
};

}  // namespace ox::optim
