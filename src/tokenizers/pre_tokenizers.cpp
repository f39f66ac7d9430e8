// The pre-tokenizers of tokenizer.json: normalized text into the words the model sees.

#include <vector>

#include "tokenizers/pipeline.h"

namespace ox::tokenizers::pre_tokenizers {
namespace {

// GPT-2's split: contractions, letters, digits and other runs each with one leading space,
// whitespace runs except their last space when a word follows.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

SplitBehavior behavior_of(const Json& j, std::string_view where, SplitBehavior fallback) {
  const Json* value = json::optional_member(j, "behavior");
  if (!value) return fallback;
  const std::string name = json::as_string(*value, where);
  if (name == "Removed") return SplitBehavior::Removed;
  if (name == "Isolated") return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return SplitBehavior::Contiguous;
  json::fail(where, "unknown split behavior \"" + name + "\"");
}

class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space),
        regex_(use_regex ? std::make_optional<text::Regex>(kGpt2Pattern, "ByteLevel")
                         : std::nullopt) {}

  void pre_tokenize(Pieces& pieces) const override {
    if (add_prefix_space_) {
      for (auto& piece : pieces) {
        if (piece.added_id < 0 && !piece.text.empty() && piece.text[0] != ' ') {
          piece.text.insert(0, 1, ' ');
        }
      }
    }
    if (regex_) {
      split_pieces(pieces, SplitBehavior::Isolated, [this](std::string_view s, auto& spans) {
        regex_spans(*regex_, s, false, spans);
      });
    }
    for (auto& piece : pieces) {
      if (piece.added_id >= 0) continue;
      std::string mapped;
      mapped.reserve(piece.text.size() + 8);
      for (unsigned char byte : piece.text) mapped += byte_to_text(byte);
      piece.text.swap(mapped);
    }
  }

 private:
  bool add_prefix_space_;
  std::optional<text::Regex> regex_;
};

class Split final : public PreTokenizer {
 public:
  Split(text::Regex pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(Pieces& pieces) const override {
    split_pieces(pieces, behavior_, [this](std::string_view s, auto& spans) {
      regex_spans(pattern_, s, invert_, spans);
    });
  }

 private:
  text::Regex pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

enum class Prepend { Always, First, Never };

Prepend prepend_scheme(const Json& j, std::string_view where) {
  if (const auto scheme = json::optional_string(j, "prepend_scheme", where)) {
    if (*scheme == "always") return Prepend::Always;
    if (*scheme == "first") return Prepend::First;
    if (*scheme == "never") return Prepend::Never;
    json::fail(where, "unknown prepend_scheme \"" + *scheme + "\"");
  }
  // Files written before prepend_scheme existed say add_prefix_space.
  return json::boolean(j, "add_prefix_space", true, where) ? Prepend::Always : Prepend::Never;
}

// SentencePiece's: spaces become the replacement (▁), one is put in front, words start at each.
class Metaspace final : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, Prepend prepend, bool split)
      : replacement_(replacement), prepend_(prepend), split_(split) {
    text::append_utf8(replacement_text_, replacement);
  }

  void pre_tokenize(Pieces& pieces) const override {
    for (auto& piece : pieces) {
      if (piece.added_id >= 0) continue;
      std::string replaced;
      replaced.reserve(piece.text.size() + 8);
      for (char c : piece.text) {
        if (c == ' ') {
          replaced += replacement_text_;
        } else {
          replaced += c;
        }
      }
      const bool starts = replaced.compare(0, replacement_text_.size(), replacement_text_) == 0;
      const bool prepend =
          prepend_ == Prepend::Always || (prepend_ == Prepend::First && piece.at_origin);
      if (prepend && !starts && !replaced.empty()) replaced.insert(0, replacement_text_);
      piece.text.swap(replaced);
    }
    if (split_) {
      split_pieces(pieces, SplitBehavior::MergedWithNext, [this](std::string_view s, auto& spans) {
        char_spans(
            s, [this](char32_t c) { return c == replacement_; }, spans);
      });
    }
  }

 private:
  char32_t replacement_;
  std::string replacement_text_;
  Prepend prepend_;
  bool split_;
};

// Words (\w+) and runs of other non-space characters: the library's `\w+|[^\w\s]+` in Rust's
// regex crate, whose \w (unlike PCRE2's) holds marks and the joiners (U+200C, U+200D).
class Whitespace final : public PreTokenizer {
 public:
  void pre_tokenize(Pieces& pieces) const override {
    split_pieces(pieces, SplitBehavior::Removed, [](std::string_view s, std::vector<Span>& spans) {
      spans.clear();
      int previous = -1;  // 0 whitespace, 1 word, 2 other
      for (size_t i = 0; i < s.size();) {
        const size_t begin = i;
        const char32_t c = text::next_code_point(s, i);
        const int kind = text::is_whitespace(c) ? 0 : text::is_word(c) ? 1 : 2;
        if (kind == previous) {
          spans.back().end = i;
        } else {
          spans.push_back({begin, i, kind == 0});
        }
        previous = kind;
      }
    });
  }
};

// Splits on every code point `is_match` accepts, keeping them as `behavior` says.
template <class IsMatch>
class CharSplit final : public PreTokenizer {
 public:
  CharSplit(IsMatch is_match, SplitBehavior behavior) : is_match_(is_match), behavior_(behavior) {}
  void pre_tokenize(Pieces& pieces) const override {
    split_pieces(pieces, behavior_,
                 [this](std::string_view s, auto& spans) { char_spans(s, is_match_, spans); });
  }

 private:
  IsMatch is_match_;
  SplitBehavior behavior_;
};

template <class IsMatch>
std::unique_ptr<PreTokenizer> char_split(IsMatch is_match, SplitBehavior behavior) {
  return std::make_unique<CharSplit<IsMatch>>(is_match, behavior);
}

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void pre_tokenize(Pieces& pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make(const Json& j) {
  if (j.is_null()) return nullptr;
  constexpr std::string_view where = "pre_tokenizer";
  const std::string type = json::type(j, where);
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(json::boolean(j, "add_prefix_space", true, where),
                                       json::boolean(j, "use_regex", true, where));
  }
  if (type == "Split") {
    return std::make_unique<Split>(json::pattern(j, "pattern", "pre_tokenizer Split"),
                                   behavior_of(j, where, SplitBehavior::Isolated),
                                   json::boolean(j, "invert", false, where));
  }
  if (type == "Metaspace") {
    return std::make_unique<Metaspace>(json::character(j, "replacement", where),
                                       prepend_scheme(j, where),
                                       json::boolean(j, "split", true, where));
  }
  if (type == "Whitespace") return std::make_unique<Whitespace>();
  if (type == "WhitespaceSplit") return char_split(text::is_whitespace, SplitBehavior::Removed);
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(char_split(text::is_whitespace, SplitBehavior::Removed));
    steps.push_back(char_split(text::is_punctuation, SplitBehavior::Isolated));
    return std::make_unique<Sequence>(std::move(steps));
  }
  if (type == "Digits") {
    return char_split(text::is_numeric, json::boolean(j, "individual_digits", false, where)
                                            ? SplitBehavior::Isolated
                                            : SplitBehavior::Contiguous);
  }
  if (type == "Punctuation") {
    return char_split(text::is_punctuation, behavior_of(j, where, SplitBehavior::Isolated));
  }
  if (type == "CharDelimiterSplit") {
    const char32_t delimiter = json::character(j, "delimiter", where);
    return char_split([delimiter](char32_t c) { return c == delimiter; }, SplitBehavior::Removed);
  }
  if (type == "Sequence") {
    const Json& list = json::member(j, "pretokenizers", where);
    if (!list.is_array()) json::fail(where, "\"pretokenizers\" is not a list");
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const Json& step : list) {
      if (auto made = make(step)) steps.push_back(std::move(made));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  json::fail(where, "the pre-tokenizer \"" + type +
                        "\" is not supported (ByteLevel, Split, Metaspace, Whitespace, "
                        "WhitespaceSplit, BertPreTokenizer, Digits, Punctuation, "
                        "CharDelimiterSplit, Sequence)");
}

}  // namespace ox::tokenizers::pre_tokenizers
