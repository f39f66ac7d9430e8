#pragma once
// Hugging Face architectures that open from their folders: `config.json` picks the architecture
// (its `model_type`), the weights come from `model.safetensors`, a sharded
// `model.safetensors.index.json` or `pytorch_model.bin`, with Hugging Face's parameter names so
// that state_dict() and the files agree. docs/MODELS.md lists what is supported.

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oxmera/core/device.h"
#include "oxmera/core/dtype.h"
#include "oxmera/core/options.h"
#include "oxmera/nn/module.h"
#include "oxmera/tensor.h"

namespace ox::models {

struct PretrainedOptions {
  OX_NAMED_FIELDS_ONLY;
  // The default device when empty (ox::default_device(): the CPU unless set_default_device or
  // a DeviceGuard chose another), where any module's parameters are made.
  std::optional<Device> device = std::nullopt;
  std::optional<DType> dtype = std::nullopt;  // floating weights as stored by default
};

// Keys and values of the positions a model has seen, per layer, in buffers of `capacity`
// positions allocated at the first call (no copy as it grows); the next positions and, when an
// attention mask was given, which past positions are padding. For one batch of sequences.
class KVCache {
 public:
  explicit KVCache(int64_t capacity);
  int64_t length() const { return length_; }  // positions held
  int64_t capacity() const { return capacity_; }
  void reset();

  // For the models: writes a layer's new keys and values [B, KV heads, T, D] after the held
  // ones and returns all of them; advance() once every layer has written.
  std::pair<Tensor, Tensor> update(size_t layer, const Tensor& keys, const Tensor& values);
  void advance(int64_t positions, Tensor next_position, Tensor key_mask);
  const Tensor& next_position() const { return next_position_; }  // [B] i64; undefined at first
  const Tensor& key_mask() const { return key_mask_; }            // [B, length]; may be undefined

 private:
  int64_t capacity_, length_ = 0;
  std::vector<Tensor> keys_, values_;
  Tensor next_position_, key_mask_;
};

struct GenerateOptions {
  OX_NAMED_FIELDS_ONLY;
  int64_t max_new_tokens = 20;
  bool do_sample = false;  // greedy (the most likely token) when false
  double temperature = 1.0;
  int64_t top_k = 50;  // 0: all tokens (transformers' defaults)
  double top_p = 1.0;
  double repetition_penalty = 1.0;
  std::vector<int64_t> eos_token_id = {};  // a row ends at any of them
  std::optional<int64_t> pad_token_id =
      std::nullopt;  // after a row's end; the first eos by default
  std::optional<uint64_t> seed =
      std::nullopt;            // the sampling's seed; ox's default generator otherwise
  Tensor attention_mask = {};  // [B, T], 0 at (left) padding
  // Each step's tokens, one per row, as they are chosen (streaming).
  std::function<void(std::span<const int64_t>)> on_tokens = nullptr;
};

struct SaveOptions {
  OX_NAMED_FIELDS_ONLY;
  // Above this many bytes of weights, model-0000i-of-0000n.safetensors files and
  // model.safetensors.index.json (transformers' default: 5 GB).
  int64_t max_shard_bytes = int64_t(5) << 30;
};

// What every model opened from a folder has: its config.json, and the way back to a folder.
class PretrainedModel : public nn::Module {
 public:
  // config.json as read (the JSON text).
  const std::string& config_json() const { return config_json_; }
  void set_config_json(std::string json) { config_json_ = std::move(json); }
  // config.json (torch_dtype set to the weights' dtype) and the weights under Hugging Face's
  // names, in safetensors files transformers' from_pretrained reads; the folder is created.
  void save_pretrained(const std::filesystem::path& dir, const SaveOptions& options = {}) const;

 private:
  std::string config_json_ = "{}";
};

// A decoder-only language model: token ids [B, T] (i64) to next-token logits [B, T, vocab].
class CausalLM : public PretrainedModel {
 public:
  Tensor forward(const Tensor& input_ids);
  // Continues the sequences `cache` holds with input_ids; attention_mask [B, cache.length() + T]
  // (1 for tokens, 0 for left padding) covers the past and the new tokens, as transformers'.
  Tensor forward(const Tensor& input_ids, KVCache& cache, const Tensor& attention_mask = {});
  // input_ids [B, T] and the new tokens after them: [B, T + n], n <= max_new_tokens (fewer when
  // every row has ended). Greedy decoding gives transformers' tokens.
  Tensor generate(const Tensor& input_ids, const GenerateOptions& options = {});
  // config.json's "model_type" ("gpt2", "llama", "mistral", "qwen2").
  virtual std::string model_type() const = 0;
  virtual int64_t vocab_size() const = 0;

  // What one call of an architecture is given: the ids' positions [B, T], which keys are real
  // tokens ([B, S] bool, undefined when all are), the cache (or none), and whether only the
  // last position's logits are wanted.
  struct Step {
    Tensor positions, key_mask;
    KVCache* cache = nullptr;
    bool last_only = false;
  };

 protected:
  virtual Tensor run(const Tensor& input_ids, const Step& step) = 0;

 private:
  Tensor forward_step(const Tensor& input_ids, KVCache* cache, const Tensor& attention_mask,
                      bool last_only);
};

// An encoder (BERT): token ids [B, T] (i64), an attention mask [B, T] (1 for tokens, 0 for
// padding; all tokens when undefined) and token type ids [B, T] (zeros when undefined) to the
// last hidden state [B, T, hidden].
class EncoderModel : public PretrainedModel {
 public:
  virtual Tensor forward(const Tensor& input_ids, const Tensor& attention_mask = {},
                         const Tensor& token_type_ids = {}) = 0;
  virtual std::string model_type() const = 0;
  virtual int64_t hidden_size() const = 0;
};

// An encoder with a classification head (BertForSequenceClassification): logits [B, labels]
// from the pooled first token.
class SequenceClassifier : public PretrainedModel {
 public:
  virtual Tensor forward(const Tensor& input_ids, const Tensor& attention_mask = {},
                         const Tensor& token_type_ids = {}) = 0;
  virtual std::string model_type() const = 0;
  virtual int64_t num_labels() const = 0;
};

class AutoModelForCausalLM {
 public:
  // An unknown model_type is an ErrorKind::Value error naming it and the supported ones; a
  // weight missing, unexpected or of the wrong shape is an ErrorKind::Format error naming it.
  static std::shared_ptr<CausalLM> from_pretrained(const std::filesystem::path& dir,
                                                   const PretrainedOptions& options = {});
  // A model of config.json's text with Hugging Face's random initialization (transformers'
  // from_config): matrices normal(0, initializer_range), biases zero, norm weights one.
  static std::shared_ptr<CausalLM> from_config(std::string_view config_json,
                                               const PretrainedOptions& options = {});
};

class AutoModel {
 public:
  // "bert" (BertModel). A folder of a model with heads (BertForSequenceClassification,
  // BertForPreTraining) gives its encoder; the heads' weights are left out.
  static std::shared_ptr<EncoderModel> from_pretrained(const std::filesystem::path& dir,
                                                       const PretrainedOptions& options = {});
};

class AutoModelForSequenceClassification {
 public:
  // "bert". The classifier's weights may be absent (a base model's folder, to fine-tune): they
  // are then initialized as Hugging Face does (normal, std initializer_range; zero bias).
  static std::shared_ptr<SequenceClassifier> from_pretrained(const std::filesystem::path& dir,
                                                             const PretrainedOptions& options = {});
};

}  // namespace ox::models
