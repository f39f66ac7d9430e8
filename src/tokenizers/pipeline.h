#pragma once
// The stages of a tokenizer.json, as the tokenizers library runs them: added tokens are split
// out, each remaining piece is normalized and pre-tokenized into words, the model turns each
// word into ids, the post-processor adds the special tokens; decoding maps ids to tokens and
// the decoder joins them. Offsets (the library's alignments) are not kept: encode returns ids.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/text.h"

namespace ox::tokenizers {

using Json = nlohmann::json;

// A stretch of the text on its way to the model.
struct Piece {
  std::string text;
  int64_t added_id = -1;   // an added token found here (already an id; no stage touches it)
  bool at_origin = false;  // starts at byte 0 of the input (Metaspace's prepend_scheme "first")
};
using Pieces = std::vector<Piece>;

// How a split keeps what its pattern matched (the library's SplitDelimiterBehavior).
enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

// A piece's stretches in order, matches and gaps between them, covering it whole.
struct Span {
  size_t begin, end;
  bool is_match;
};

// Spans of `text` from a regular expression's matches (invert: the gaps are the matches).
void regex_spans(const text::Regex& regex, std::string_view text, bool invert,
                 std::vector<Span>& spans);
// Spans where every code point for which `is_match` holds is a match of its own.
template <class IsMatch>
void char_spans(std::string_view text, IsMatch is_match, std::vector<Span>& spans) {
  spans.clear();
  size_t last = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t begin = i;
    if (is_match(text::next_code_point(text, i))) {
      if (last < begin) spans.push_back({last, begin, false});
      spans.push_back({begin, i, true});
      last = i;
    }
  }
  if (last < text.size()) spans.push_back({last, text.size(), false});
}

// Replaces each piece not yet an added token by the parts `split` finds in it, as `behavior`
// keeps them; empty parts are dropped.
void split_pieces(Pieces& pieces, SplitBehavior behavior,
                  const std::function<void(std::string_view, std::vector<Span>&)>& split);

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(Pieces& pieces) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one word (a pre-tokenized piece, not empty).
  virtual void tokenize(std::string_view word, std::vector<int64_t>& ids) const = 0;
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  virtual const std::string* id_to_token(int64_t id) const = 0;
  virtual int64_t vocab_size() const = 0;
  // Every token of the vocabulary, for counting it together with the added ones.
  virtual void for_each_token(const std::function<void(const std::string&)>& visit) const = 0;
};

// The ids of one sequence, or of a processed sequence or pair.
struct Encoded {
  std::vector<int64_t> ids, type_ids, special_mask;
  void append(const Encoded& other);
  void append_special(int64_t id, int64_t type_id);
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // The library's process_encodings: one Encoded per sequence in, any number out (concatenated).
  virtual std::vector<Encoded> process(std::vector<Encoded> sequences,
                                       bool add_special_tokens) const = 0;
  // How many tokens the post-processor adds (for truncation).
  virtual size_t added_tokens(bool pair) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// Component factories from tokenizer.json's objects (ErrorKind::Format for a malformed or
// unknown one, naming it). A JSON null is no component (nullptr).
// Each kind's classes live in a namespace of their own (normalizers::Sequence,
// decoders::Sequence, ...).
namespace normalizers {
std::unique_ptr<Normalizer> make(const Json& json);
}
namespace pre_tokenizers {
std::unique_ptr<PreTokenizer> make(const Json& json);
}
namespace models {
std::unique_ptr<Model> make(const Json& json);
}
namespace post_processors {
std::unique_ptr<PostProcessor> make(const Json& json);
}
namespace decoders {
std::unique_ptr<Decoder> make(const Json& json);
}

// The byte-level alphabet of GPT-2: each byte as the UTF-8 of a printable code point.
const std::string& byte_to_text(unsigned char byte);
// The byte a byte-level code point stands for, or -1.
int text_to_byte(char32_t c);

// ---- tokenizer.json fields, each a Format error naming the field when missing or mistyped ----
namespace json {
[[noreturn]] void fail(std::string_view where, const std::string& message);
const Json& member(const Json& object, const char* key, std::string_view where);
const Json* optional_member(const Json& object, const char* key);  // nullptr when absent/null
std::string string(const Json& object, const char* key, std::string_view where);
std::optional<std::string> optional_string(const Json& object, const char* key,
                                           std::string_view where);
bool boolean(const Json& object, const char* key, bool fallback, std::string_view where);
int64_t integer(const Json& object, const char* key, std::optional<int64_t> fallback,
                std::string_view where);
int64_t as_id(const Json& value, std::string_view where);
std::string as_string(const Json& value, std::string_view where);
// "type", required.
std::string type(const Json& object, std::string_view where);
// A {"String": s} or {"Regex": r} pattern.
text::Regex pattern(const Json& object, const char* key, std::string_view where);
// A single character given as a string ("▁").
char32_t character(const Json& object, const char* key, std::string_view where);
}  // namespace json

}  // namespace ox::tokenizers
