// The optimizer base: gradients, parameter checks, per-parameter state and its TensorDict form.

#include "oxmera/optim/optimizer.h"

#include <string>

#include "oxmera/autograd.h"
#include "oxmera/ops.h"

namespace ox::optim {

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    for (const Tensor& p : group_params(g)) {
      Tensor& grad = const_cast<Tensor&>(p).mutable_grad();
      if (!grad.defined()) continue;
      if (set_to_none)
        grad = Tensor();
      else
        grad.zero_();
    }
  }
}

std::vector<Tensor> Optimizer::parameters() const {
  std::vector<Tensor> out;
  for (size_t g = 0; g < num_param_groups(); ++g)
    for (const Tensor& p : group_params(g)) out.push_back(p);
  return out;
}

size_t Optimizer::first_index(size_t group) const {
  size_t index = 0;
  for (size_t g = 0; g < group; ++g) index += group_params(g).size();
  return index;
}

const ParamState& Optimizer::state(size_t index) const {
  static const ParamState kEmpty;
  return index < state_.size() ? state_[index] : kEmpty;
}

ParamState& Optimizer::state_of(size_t group, size_t index_in_group) {
  const size_t index = first_index(group) + index_in_group;
  if (state_.size() <= index) state_.resize(index + 1);
  return state_[index];
}

void Optimizer::check_new_params(const std::vector<Tensor>& params, const char* op) const {
  const std::vector<Tensor> held = parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    OX_CHECK(p.defined(), Value, op, "parameter ", i, " of the new group is undefined");
    OX_CHECK(is_floating(p.dtype()), DType, op, "can only optimize floating tensors; parameter ", i,
             " of the new group is ", p.dtype());
    OX_CHECK(p.is_leaf(), Value, op, "can't optimize a non-leaf tensor (parameter ", i,
             " of the new group, shape ", p.shape(), ")");
    for (const Tensor& h : held)
      OX_CHECK(h.impl() != p.impl(), Value, op, "parameter ", i, " (shape ", p.shape(),
               ") appears in more than one parameter group");
    for (size_t j = 0; j < i; ++j)
      OX_CHECK(params[j].impl() != p.impl(), Value, op, "parameter ", i, " (shape ", p.shape(),
               ") is parameter ", j, " of the same group again");
  }
}

TensorDict Optimizer::state_dict() const {
  TensorDict out;
  size_t index = 0;
  for (size_t g = 0; g < num_param_groups(); ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    write_group_options(g, prefix, out);
    std::vector<int64_t> numbers;
    for (size_t i = 0; i < group_params(g).size(); ++i, ++index)
      numbers.push_back(static_cast<int64_t>(index));
    out.insert(prefix + "params", tensor(numbers, {static_cast<int64_t>(numbers.size())},
                                         {.dtype = kI64, .device = Device::cpu()}));
  }
  for (size_t i = 0; i < state_.size(); ++i) {
    const std::string prefix = "state." + std::to_string(i) + ".";
    for (const auto& [key, value] : state_[i].scalars.items())
      out.insert(prefix + key, scalar_tensor(value, {.dtype = kF64, .device = Device::cpu()}));
    for (const auto& [key, value] : state_[i].buffers.items()) out.insert(prefix + key, value);
  }
  return out;
}

namespace {

// "state.<i>.<name>" split into i and name; false for other keys.
bool parse_state_key(const std::string& key, size_t& index, std::string& name) {
  static const std::string kPrefix = "state.";
  if (key.rfind(kPrefix, 0) != 0) return false;
  const size_t dot = key.find('.', kPrefix.size());
  if (dot == std::string::npos || dot == kPrefix.size()) return false;
  const std::string number = key.substr(kPrefix.size(), dot - kPrefix.size());
  if (number.find_first_not_of("0123456789") != std::string::npos || number.size() > 18)
    return false;
  index = std::stoull(number);
  name = key.substr(dot + 1);
  return !name.empty();
}

}  // namespace

void Optimizer::load_state_dict(const TensorDict& dict) {
  const char* op = name();
  // The group structure first.
  size_t groups = 0;
  while (dict.contains("param_groups." + std::to_string(groups) + ".params")) ++groups;
  OX_CHECK(groups == num_param_groups(), Value, op, "the state dict has ", groups,
           " parameter groups, the optimizer ", num_param_groups());
  size_t total = 0;
  for (size_t g = 0; g < groups; ++g) {
    const Tensor& numbers = dict.at("param_groups." + std::to_string(g) + ".params");
    OX_CHECK(numbers.dim() == 1 && numbers.numel() == int64_t(group_params(g).size()), Value, op,
             "parameter group ", g, " has ", numbers.numel(), " parameters in the state dict and ",
             group_params(g).size(), " in the optimizer");
    total += group_params(g).size();
  }
  // Every group key must be one this optimizer writes (an option of its kind, or "params").
  TensorDict known;
  for (size_t g = 0; g < groups; ++g) {
    const std::string prefix = "param_groups." + std::to_string(g) + ".";
    write_group_options(g, prefix, known);
    known.insert(prefix + "params", Tensor());
  }
  const std::vector<Tensor> params = parameters();
  std::vector<ParamState> state(total);
  // A master-weights state is f32 whatever its parameter's dtype (its buffers were made on the
  // master); other states follow their parameter.
  const auto buffer_dtype = [&](size_t index) {
    return dict.contains("state." + std::to_string(index) + ".master") ? kF32
                                                                       : params[index].dtype();
  };
  for (const auto& [key, value] : dict.items()) {
    if (key.rfind("param_groups.", 0) == 0) {
      OX_CHECK(known.contains(key), Value, op, "unknown state dict key '", key, "'");
      continue;
    }
    size_t index = 0;
    std::string field;
    OX_CHECK(parse_state_key(key, index, field), Value, op, "unknown state dict key '", key, "'");
    OX_CHECK(index < total, Value, op, "state dict key '", key, "' names parameter ", index,
             " but the optimizer has ", total);
    const Tensor& p = params[index];
    if (field == "step" || field == "mu_product") {
      OX_CHECK(value.numel() == 1, Value, op, "'", key, "' must hold one number, got shape ",
               value.shape());
      state[index].scalars.insert(field, value.item<double>());
      continue;
    }
    OX_CHECK(value.shape() == p.shape(), Shape, op, "'", key, "' has shape ", value.shape(),
             " but parameter ", index, " has shape ", p.shape());
    Tensor copy = value.to(p.device(), buffer_dtype(index)).contiguous();
    if (copy.is_same_storage(value)) copy = copy.clone();
    state[index].buffers.insert(field, copy.detach());
  }
  // Options last: all groups are checked before any changes.
  read_all_group_options(dict);
  state_ = std::move(state);
}

namespace detail {

Tensor option_tensor(double value) {
  return scalar_tensor(value, {.dtype = kF64, .device = Device::cpu()});
}
Tensor option_tensor(bool value) {
  return scalar_tensor(value, {.dtype = kBool, .device = Device::cpu()});
}
Tensor option_tensor(const Betas& value) {
  return tensor(std::vector<double>{value[0], value[1]}, {2},
                {.dtype = kF64, .device = Device::cpu()});
}
Tensor option_tensor(const std::optional<bool>& value) {
  return scalar_tensor(int64_t(value ? int64_t(*value) : -1),
                       {.dtype = kI64, .device = Device::cpu()});
}

void read_option(const Tensor& t, const std::string& key, double& out) {
  OX_CHECK(t.numel() == 1, Value, "load_state_dict", "'", key, "' must hold one number, got shape ",
           t.shape());
  out = t.item<double>();
}
void read_option(const Tensor& t, const std::string& key, bool& out) {
  OX_CHECK(t.numel() == 1, Value, "load_state_dict", "'", key, "' must hold one flag, got shape ",
           t.shape());
  out = t.item<double>() != 0;
}
void read_option(const Tensor& t, const std::string& key, Betas& out) {
  OX_CHECK(t.numel() == 2, Value, "load_state_dict", "'", key,
           "' must hold two numbers (beta1, beta2), got shape ", t.shape());
  const std::vector<double> v = t.to_vector<double>();
  out = {v[0], v[1]};
}
void read_option(const Tensor& t, const std::string& key, std::optional<bool>& out) {
  OX_CHECK(t.numel() == 1, Value, "load_state_dict", "'", key, "' must hold one number, got shape ",
           t.shape());
  const double v = t.item<double>();
  out = v < 0 ? std::nullopt : std::optional<bool>(v != 0);
}
const Tensor& find_key(const TensorDict& in, const std::string& key, const char* op) {
  const Tensor* t = in.find(key);
  OX_CHECK(t != nullptr, Value, op, "the state dict has no '", key, "'");
  return *t;
}

bool wants_master(const Tensor& param) { return param.dtype() == kF16 || param.dtype() == kBF16; }

Tensor master_for_step(const Tensor& param, ParamState& state) {
  Tensor* master = state.buffers.find("master");
  if (master == nullptr || master->shape() != param.shape()) {
    // The parameter as it is at its first step (not when the group was made), so weights
    // loaded into the model after the optimizer was built are the ones trained.
    Tensor fresh = param.detach().to(param.device(), kF32).contiguous();
    if (master != nullptr)
      *master = fresh;
    else
      master = &state.buffers.insert("master", fresh);
  } else if (master->dtype() != kF32 || master->device() != param.device()) {
    *master = master->to(param.device(), kF32).contiguous();  // after module->to(device)
  }
  Tensor out = *master;
  out.mutable_grad() = param.grad().to(param.device(), kF32).contiguous();
  return out;
}

void finish_master_step(const Tensor& param, Tensor& master) {
  const_cast<Tensor&>(param).copy_(master);  // rounded once to the parameter's dtype
  master.mutable_grad() = Tensor();          // the f32 gradient lives only for the step
}

}  // namespace detail
}  // namespace ox::optim
