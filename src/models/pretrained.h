#pragma once
// What every architecture shares: config.json, the weight files of a folder, and the layers
// Hugging Face's models are made of that oxmera's nn does not have under their names.

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <string>

#include "oxmera/models.h"
#include "oxmera/nn/module.h"
#include "oxmera/ordered_dict.h"

namespace ox::models {

inline constexpr const char* kFromPretrained = "from_pretrained";  // errors' op name

// config.json; a missing or mistyped field is an ErrorKind::Format error naming it.
class Config {
 public:
  static Config read(const std::filesystem::path& dir);
  static Config parse(std::string_view text);
  std::string model_type() const;
  int64_t integer(const char* key, std::optional<int64_t> fallback = std::nullopt) const;
  double number(const char* key, std::optional<double> fallback = std::nullopt) const;
  bool boolean(const char* key, bool fallback) const;
  std::optional<std::string> string(const char* key) const;
  const nlohmann::json* find(const char* key) const;  // nullptr when absent or null
  const nlohmann::json& json() const { return json_; }
  std::string where() const { return path_; }

 private:
  nlohmann::json json_;
  std::string path_;
};

// The folder's weight files one at a time, each as its tensors by their names in the file
// (safetensors files mapped: zero-copy until read): model.safetensors, the shards of
// model.safetensors.index.json (each checked to hold what the index says), or pytorch_model.bin.
void for_each_weight_file(const std::filesystem::path& dir,
                          const std::function<void(const std::string&, const TensorDict&)>& take);

// The folder's weights into `model`, with its config (converted to options.dtype, else to the
// files' floating dtype; then moved to options.device; evaluation mode). A weight the model lacks,
// or one the files lack that `may_be_missing` does not excuse, is a Format error naming it.
void load_weights(PretrainedModel& model, const Config& config, const std::filesystem::path& dir,
                  const PretrainedOptions& options,
                  const std::function<bool(const std::string&)>& may_be_missing = nullptr);

// Hugging Face's Conv1D (GPT-2's layers): y = x @ weight + bias, weight [in, out].
class Conv1DImpl : public nn::Module {
 public:
  Conv1DImpl(int64_t in, int64_t out);
  Tensor forward(const Tensor& x) const;
  Tensor weight, bias;
};
OX_MODULE(Conv1D);

// The architectures (gpt2.cpp, llama.cpp).
std::shared_ptr<CausalLM> make_gpt2(const Config& config);
std::shared_ptr<CausalLM> make_llama(const Config& config);  // llama, mistral, qwen2

// Causal (and, when window > 0, sliding-window) attention of q [B, H, T, D] over k and v
// [B, KV, S, D] whose last T positions are q's, with KV heads shared by H / KV query heads;
// key_mask [B, S] (bool, optional) marks the keys that are real tokens.
Tensor causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t window,
                        const Tensor& key_mask);

}  // namespace ox::models
