#pragma once
// Hugging Face architectures that open from their folders: `config.json` picks the architecture
// (its `model_type`), the weights come from `model.safetensors`, a sharded
// `model.safetensors.index.json` or `pytorch_model.bin`, with Hugging Face's parameter names so
// that state_dict() and the files agree. docs/MODELS.md lists what is supported.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "oxmera/core/device.h"
#include "oxmera/core/dtype.h"
#include "oxmera/core/options.h"
#include "oxmera/nn/module.h"
#include "oxmera/tensor.h"

namespace ox::models {

struct PretrainedOptions {
  OX_NAMED_FIELDS_ONLY;
  std::optional<Device> device = std::nullopt;  // the CPU by default
  std::optional<DType> dtype = std::nullopt;    // floating weights as stored by default
};

// A decoder-only language model: token ids [B, T] (i64) to next-token logits [B, T, vocab].
class CausalLM : public nn::Module {
 public:
  virtual Tensor forward(const Tensor& input_ids) = 0;
  // config.json's "model_type" ("gpt2", "llama", "mistral", "qwen2").
  virtual std::string model_type() const = 0;
  virtual int64_t vocab_size() const = 0;
};

class AutoModelForCausalLM {
 public:
  // An unknown model_type is an ErrorKind::Value error naming it and the supported ones; a
  // weight missing, unexpected or of the wrong shape is an ErrorKind::Format error naming it.
  static std::shared_ptr<CausalLM> from_pretrained(const std::filesystem::path& dir,
                                                   const PretrainedOptions& options = {});
};

}  // namespace ox::models
