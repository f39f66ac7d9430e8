#pragma once
// Hugging Face tokenizers: the `tokenizer.json` files of the tokenizers library (GPT-2, Llama,
// Mistral, Qwen2, BERT and the rest of that family), encoding text to token ids and back, with
// the library's ids. docs/MODELS.md lists the components read and what is not supported.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ox::tokenizers {

// One encoded text or pair of texts, as the tokenizers library's Encoding (without offsets).
struct Encoding {
  std::vector<int64_t> ids;
  std::vector<int64_t> type_ids;             // 0 for the first text, 1 for the pair (BERT's)
  std::vector<int64_t> special_tokens_mask;  // 1 where the post-processor added a token
  std::vector<int64_t> attention_mask;       // 0 where padding was added, 1 elsewhere
};

class Tokenizer {
 public:
  // A `tokenizer.json`, or a model folder holding one. A file that is not one (bad JSON, an
  // unknown component, a malformed vocabulary) is an ErrorKind::Format error naming the part.
  static Tokenizer from_file(const std::filesystem::path& path);
  static Tokenizer from_json(std::string_view json_text);

  // Text must be valid UTF-8 (ErrorKind::Value naming the byte offset otherwise).
  // add_special_tokens: the post-processor's tokens (BERT's [CLS]/[SEP], Llama's <s>).
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  Encoding encode_full(std::string_view text, std::optional<std::string_view> pair = std::nullopt,
                       bool add_special_tokens = true) const;
  std::vector<std::vector<int64_t>> encode_batch(const std::vector<std::string>& texts,
                                                 bool add_special_tokens = true) const;

  // Ids that are no token are skipped, as the tokenizers library does.
  std::string decode(std::span<const int64_t> ids, bool skip_special_tokens = true) const;
  std::vector<std::string> decode_batch(const std::vector<std::vector<int64_t>>& batch,
                                        bool skip_special_tokens = true) const;

  std::optional<int64_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int64_t id) const;
  // Distinct tokens: the model's vocabulary and, with_added_tokens, the added ones.
  int64_t vocab_size(bool with_added_tokens = true) const;
  // Whether `id` is a special added token (skipped by decode's skip_special_tokens).
  bool is_special(int64_t id) const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace ox::tokenizers
