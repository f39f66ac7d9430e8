#pragma once
// torch::save / torch::load's forms: a module, an optimizer, a tensor or a list of tensors to
// one file and back. The file is safetensors whatever its name (a ".pt" name too), marked with
// what it holds, so loading a module from an optimizer's file is a Format error naming both.
// Whole training state (model + optimizer + scheduler + step + generator) is one checkpoint:
// io/checkpoint.h.

#include <concepts>
#include <memory>
#include <string>
#include <vector>

#include "oxmera/nn/module.h"
#include "oxmera/optim/optimizer.h"
#include "oxmera/tensor.h"

namespace ox {

// The module's state_dict; load copies it in strictly (names and shapes must match; values are
// converted to each parameter's dtype and device, as load_state_dict).
void save(const nn::Module& module, const std::string& path);
void load(nn::Module& module, const std::string& path);
template <class M>
requires std::derived_from<M, nn::Module>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  OX_CHECK(module != nullptr, Value, "save", "the module is null");
  save(static_cast<const nn::Module&>(*module), path);
}
template <class M>
requires std::derived_from<M, nn::Module>
void load(const std::shared_ptr<M>& module, const std::string& path) {
  OX_CHECK(module != nullptr, Value, "load", "the module is null");
  load(static_cast<nn::Module&>(*module), path);
}

// The optimizer's state_dict (its moments, step counts and per-group options).
void save(const optim::Optimizer& optimizer, const std::string& path);
void load(optim::Optimizer& optimizer, const std::string& path);

// A tensor (saved from any device; loaded onto the CPU and assigned to `tensor`), or a list.
void save(const Tensor& tensor, const std::string& path);
void load(Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);

}  // namespace ox
