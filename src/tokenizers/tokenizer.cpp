// ox::tokenizers::Tokenizer: a tokenizer.json read into its stages (pipeline.h), the added
// tokens, truncation and padding, and the encode/decode entry points.

#include <algorithm>
#include <array>
#include <exception>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "core/text_util.h"
#include "oxmera/core/error.h"
#include "oxmera/tokenizers.h"
#include "tokenizers/pipeline.h"

namespace ox::tokenizers {
namespace {

constexpr const char* kOp = "Tokenizer";

struct AddedToken {
  std::string content;
  int64_t id = 0;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

// Added tokens found in text as the library's Aho-Corasick automaton finds them: leftmost,
// longest there, not overlapping. Candidates are kept by first byte, longest first.
class AddedTokenMatcher {
 public:
  void add(const std::string& pattern, size_t token) {
    if (pattern.empty()) return;
    auto& list = by_first_byte_[static_cast<unsigned char>(pattern.front())];
    list.push_back({pattern, token});
    std::stable_sort(list.begin(), list.end(), [](const Entry& a, const Entry& b) {
      return a.pattern.size() > b.pattern.size();
    });
    empty_ = false;
  }
  bool empty() const { return empty_; }

  // The longest pattern at text[pos]: (its token, its length), or length 0.
  std::pair<size_t, size_t> at(std::string_view text, size_t pos) const {
    for (const Entry& entry : by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      if (text.compare(pos, entry.pattern.size(), entry.pattern) == 0) {
        return {entry.token, entry.pattern.size()};
      }
    }
    return {0, 0};
  }

 private:
  struct Entry {
    std::string pattern;
    size_t token;
  };
  std::array<std::vector<Entry>, 256> by_first_byte_;
  bool empty_ = true;
};

enum class Direction { Left, Right };

struct Truncation {
  int64_t max_length = 0;
  enum class Strategy { LongestFirst, OnlyFirst, OnlySecond } strategy = Strategy::LongestFirst;
  Direction direction = Direction::Right;
};

struct Padding {
  std::optional<int64_t> fixed;  // Fixed(n); BatchLongest otherwise
  int64_t multiple_of = 0, pad_id = 0, pad_type_id = 0;
  Direction direction = Direction::Right;
};

Direction direction_of(const Json& j, std::string_view where) {
  const auto name = json::optional_string(j, "direction", where).value_or("Right");
  if (name == "Right") return Direction::Right;
  if (name == "Left") return Direction::Left;
  json::fail(where, "unknown direction \"" + name + "\"");
}

// Keeps `length` ids of each field, from the side `direction` does not cut.
void truncate(Encoded& e, size_t length, Direction direction) {
  if (e.ids.size() <= length) return;
  const auto keep = [&](std::vector<int64_t>& v) {
    if (direction == Direction::Right) {
      v.resize(length);
    } else {
      v.erase(v.begin(), v.end() - ptrdiff_t(length));
    }
  };
  keep(e.ids);
  keep(e.type_ids);
  keep(e.special_mask);
}

}  // namespace

struct Tokenizer::Impl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::vector<AddedToken> added;
  std::unordered_map<std::string, int64_t> added_ids;  // content -> id
  std::unordered_map<int64_t, size_t> added_by_id;     // id -> index into added
  std::set<std::string, std::less<>> special_contents;
  AddedTokenMatcher raw_matcher, normalized_matcher;
  std::optional<Truncation> truncation;
  std::optional<Padding> padding;
  int64_t vocab_size_with_added = 0;

  void read_added_tokens(const Json& list);
  void read_truncation_and_padding(const Json& root);
  void split_added(Pieces& pieces, const AddedTokenMatcher& matcher, bool normalize) const;
  Encoded encode_sequence(std::string_view text, int64_t type_id) const;
  Encoding encode(std::string_view text, std::optional<std::string_view> pair,
                  bool add_special) const;
  void pad(std::vector<Encoding>& batch) const;
  const std::string* token_of(int64_t id) const;
};

void Tokenizer::Impl::read_added_tokens(const Json& list) {
  if (!list.is_array()) json::fail("added_tokens", "is not a list");
  for (const Json& entry : list) {
    AddedToken token;
    token.id = json::as_id(json::member(entry, "id", "added_tokens"), "added_tokens id");
    token.content = json::string(entry, "content", "added_tokens");
    text::check_utf8(token.content, kOp);
    token.single_word = json::boolean(entry, "single_word", false, "added_tokens");
    token.lstrip = json::boolean(entry, "lstrip", false, "added_tokens");
    token.rstrip = json::boolean(entry, "rstrip", false, "added_tokens");
    token.special = json::boolean(entry, "special", false, "added_tokens");
    token.normalized = json::boolean(entry, "normalized", !token.special, "added_tokens");
    if (token.content.empty()) json::fail("added_tokens", "a token is empty");
    added_ids.emplace(token.content, token.id);
    added_by_id.emplace(token.id, added.size());
    if (token.special) special_contents.insert(token.content);
    std::string pattern = token.content;
    if (token.normalized && normalizer) normalizer->normalize(pattern);
    (token.normalized ? normalized_matcher : raw_matcher).add(pattern, added.size());
    added.push_back(std::move(token));
  }
}

void Tokenizer::Impl::read_truncation_and_padding(const Json& root) {
  if (const Json* t = json::optional_member(root, "truncation")) {
    constexpr std::string_view where = "truncation";
    Truncation trunc;
    trunc.max_length = json::integer(*t, "max_length", std::nullopt, where);
    const auto strategy = json::optional_string(*t, "strategy", where).value_or("LongestFirst");
    if (strategy == "OnlyFirst") {
      trunc.strategy = Truncation::Strategy::OnlyFirst;
    } else if (strategy == "OnlySecond") {
      trunc.strategy = Truncation::Strategy::OnlySecond;
    } else if (strategy != "LongestFirst") {
      json::fail(where, "unknown strategy \"" + strategy + "\"");
    }
    trunc.direction = direction_of(*t, where);
    truncation = trunc;
  }
  if (const Json* p = json::optional_member(root, "padding")) {
    constexpr std::string_view where = "padding";
    Padding pad;
    const Json& strategy = json::member(*p, "strategy", where);
    if (strategy.is_object()) {
      pad.fixed = json::integer(strategy, "Fixed", std::nullopt, where);
    } else if (!(strategy.is_string() && strategy.get<std::string>() == "BatchLongest")) {
      json::fail(where, "the strategy is neither \"BatchLongest\" nor {\"Fixed\": n}");
    }
    pad.multiple_of = json::integer(*p, "pad_to_multiple_of", 0, where);
    pad.pad_id = json::integer(*p, "pad_id", 0, where);
    pad.pad_type_id = json::integer(*p, "pad_type_id", 0, where);
    pad.direction = direction_of(*p, where);
    padding = pad;
  }
}

// The library's AddedVocabulary::find_matches over each piece not yet a token: matches become
// pieces of their own (widened over whitespace by lstrip/rstrip, dropped when single_word and
// inside a word), the text between them pieces to go on with (normalized first when asked).
void Tokenizer::Impl::split_added(Pieces& pieces, const AddedTokenMatcher& matcher,
                                  bool normalize) const {
  Pieces out;
  out.reserve(pieces.size());
  for (Piece& piece : pieces) {
    if (piece.added_id >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    if (normalize && normalizer) normalizer->normalize(piece.text);
    const std::string& s = piece.text;
    const auto emit = [&](size_t begin, size_t end, int64_t id) {
      if (end > begin)
        out.push_back({s.substr(begin, end - begin), id, piece.at_origin && begin == 0});
    };
    size_t emitted = 0;  // the end of what is already in `out`
    for (size_t pos = 0; !matcher.empty() && pos < s.size();) {
      const auto [index, length] = matcher.at(s, pos);
      if (length == 0) {
        ++pos;
        continue;
      }
      const AddedToken& token = added[index];
      size_t start = pos, stop = pos + length;
      pos = stop;
      if (token.single_word) {
        bool word_before = false, word_after = false;
        if (start > 0) {
          size_t j = start - 1;
          while (j > 0 && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
          word_before = text::is_word(text::next_code_point(s, j));
        }
        if (stop < s.size()) {
          size_t after = stop;
          word_after = text::is_word(text::next_code_point(s, after));
        }
        if (word_before || word_after) continue;
      }
      if (token.lstrip) {
        // Back over the whitespace before the token, not into what is already taken.
        size_t i = start;
        while (i > emitted) {
          size_t j = i - 1;
          while (j > emitted && (static_cast<unsigned char>(s[j]) & 0xC0) == 0x80) --j;
          size_t k = j;
          if (!text::is_whitespace(text::next_code_point(s, k))) break;
          i = j;
        }
        start = i;
      }
      if (token.rstrip) {
        for (size_t i = stop; i < s.size();) {
          if (!text::is_whitespace(text::next_code_point(s, i))) break;
          stop = i;
        }
        pos = std::max(pos, stop);
      }
      start = std::max(start, emitted);
      emit(emitted, start, -1);
      emit(start, stop, token.id);
      emitted = stop;
    }
    if (emitted == 0) {
      if (!s.empty()) out.push_back(std::move(piece));
    } else {
      emit(emitted, s.size(), -1);
    }
  }
  pieces.swap(out);
}

Encoded Tokenizer::Impl::encode_sequence(std::string_view text, int64_t type_id) const {
  text::check_utf8(text, kOp);
  Pieces pieces;
  if (!text.empty()) pieces.push_back({std::string(text), -1, true});
  split_added(pieces, raw_matcher, false);
  split_added(pieces, normalized_matcher, true);
  if (pre_tokenizer) pre_tokenizer->pre_tokenize(pieces);
  Encoded encoded;
  for (const Piece& piece : pieces) {
    if (piece.added_id >= 0) {
      encoded.ids.push_back(piece.added_id);
    } else if (!piece.text.empty()) {
      model->tokenize(piece.text, encoded.ids);
    }
  }
  encoded.type_ids.assign(encoded.ids.size(), type_id);
  encoded.special_mask.assign(encoded.ids.size(), 0);
  return encoded;
}

Encoding Tokenizer::Impl::encode(std::string_view text, std::optional<std::string_view> pair,
                                 bool add_special) const {
  std::vector<Encoded> sequences{encode_sequence(text, 0)};
  if (pair) sequences.push_back(encode_sequence(*pair, 1));
  if (truncation) {
    int64_t max_length = truncation->max_length;
    if (add_special && post_processor) {
      max_length -= int64_t(post_processor->added_tokens(sequences.size() > 1));
    }
    const auto max = size_t(std::max<int64_t>(max_length, 0));
    const Direction direction = truncation->direction;
    if (sequences.size() == 1) {
      truncate(sequences[0], max, direction);
    } else if (sequences[0].ids.size() + sequences[1].ids.size() > max) {
      const size_t total = sequences[0].ids.size() + sequences[1].ids.size();
      const size_t to_remove = total - max;
      if (truncation->strategy == Truncation::Strategy::LongestFirst) {
        size_t n1 = sequences[0].ids.size(), n2 = sequences[1].ids.size();
        const bool swap = n1 > n2;
        if (swap) std::swap(n1, n2);
        n2 = n1 > max ? n1 : std::max(n1, max - n1);
        if (n1 + n2 > max) {
          n1 = max / 2;
          n2 = n1 + max % 2;
        }
        if (swap) std::swap(n1, n2);
        truncate(sequences[0], n1, direction);
        truncate(sequences[1], n2, direction);
      } else {
        Encoded& target =
            sequences[truncation->strategy == Truncation::Strategy::OnlyFirst ? 0 : 1];
        OX_CHECK(target.ids.size() > to_remove, Value, kOp, "truncation to ", max_length,
                 " tokens: the sequence to truncate has only ", target.ids.size());
        truncate(target, target.ids.size() - to_remove, direction);
      }
    }
  }
  if (post_processor) sequences = post_processor->process(std::move(sequences), add_special);
  Encoded all;
  for (const Encoded& part : sequences) all.append(part);
  Encoding out{std::move(all.ids), std::move(all.type_ids), std::move(all.special_mask), {}};
  out.attention_mask.assign(out.ids.size(), 1);
  if (padding && padding->fixed) {
    std::vector<Encoding> one(1);
    one[0] = std::move(out);
    pad(one);
    out = std::move(one[0]);
  }
  return out;
}

void Tokenizer::Impl::pad(std::vector<Encoding>& batch) const {
  size_t target = 0;
  if (padding->fixed) {
    target = size_t(*padding->fixed);
  } else {
    for (const auto& e : batch) target = std::max(target, e.ids.size());
  }
  if (padding->multiple_of > 0 && target % size_t(padding->multiple_of) != 0) {
    target += size_t(padding->multiple_of) - target % size_t(padding->multiple_of);
  }
  for (auto& e : batch) {
    if (e.ids.size() >= target) continue;
    const size_t n = target - e.ids.size();
    const auto fill = [&](std::vector<int64_t>& v, int64_t value) {
      v.insert(padding->direction == Direction::Right ? v.end() : v.begin(), n, value);
    };
    fill(e.ids, padding->pad_id);
    fill(e.type_ids, padding->pad_type_id);
    fill(e.special_tokens_mask, 1);
    fill(e.attention_mask, 0);
  }
}

const std::string* Tokenizer::Impl::token_of(int64_t id) const {
  if (const auto it = added_by_id.find(id); it != added_by_id.end())
    return &added[it->second].content;
  return model->id_to_token(id);
}

// ---- the public API ---------------------------------------------------------------------------

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path file =
      std::filesystem::is_directory(path, ec) ? path / "tokenizer.json" : path;
  std::ifstream in(file, std::ios::binary);
  OX_CHECK(in, Io, kOp, "cannot open ", file.string(),
           std::filesystem::is_directory(path, ec) ? " (the folder has no tokenizer.json)" : "");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  OX_CHECK(!in.bad(), Io, kOp, "cannot read ", file.string());
  return from_json(buffer.str());
}

Tokenizer Tokenizer::from_json(std::string_view json_text) {
  check_json_nesting(json_text, 64, kOp, "tokenizer.json");
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    OX_FAIL(Format, kOp, "tokenizer.json is not valid JSON: ", e.what());
  }
  if (!root.is_object()) json::fail("the file", "is not a JSON object");
  auto impl = std::make_shared<Impl>();
  static const Json kNull;
  const auto field = [&](const char* key) -> const Json& {
    const Json* value = json::optional_member(root, key);
    return value ? *value : kNull;
  };
  try {
    impl->normalizer = normalizers::make(field("normalizer"));
    impl->pre_tokenizer = pre_tokenizers::make(field("pre_tokenizer"));
    impl->model = models::make(json::member(root, "model", "the file"));
    impl->post_processor = post_processors::make(field("post_processor"));
    impl->decoder = decoders::make(field("decoder"));
    impl->read_added_tokens(field("added_tokens").is_null() ? Json::array()
                                                            : field("added_tokens"));
    impl->read_truncation_and_padding(root);
  } catch (const Json::exception& e) {  // a mistyped value a check above did not foresee
    OX_FAIL(Format, kOp, "tokenizer.json: ", e.what());
  }
  int64_t extra = 0;
  std::set<std::string_view> counted;
  for (const auto& token : impl->added) {
    if (!impl->model->token_to_id(token.content) && counted.insert(token.content).second) ++extra;
  }
  impl->vocab_size_with_added = impl->model->vocab_size() + extra;
  return Tokenizer(std::move(impl));
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, std::nullopt, add_special_tokens).ids;
}

Encoding Tokenizer::encode_full(std::string_view text, std::optional<std::string_view> pair,
                                bool add_special_tokens) const {
  return impl_->encode(text, pair, add_special_tokens);
}

std::vector<std::vector<int64_t>> Tokenizer::encode_batch(const std::vector<std::string>& texts,
                                                          bool add_special_tokens) const {
  std::vector<Encoding> encodings(texts.size());
  std::vector<std::exception_ptr> errors(texts.size());
  // Each text alone, in any order: the ids do not depend on the thread count.
#pragma omp parallel for schedule(dynamic, 1) if (texts.size() > 1)
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      encodings[i] = impl_->encode(texts[i], std::nullopt, add_special_tokens);
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
  for (const auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  if (impl_->padding) impl_->pad(encodings);
  std::vector<std::vector<int64_t>> ids(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) ids[i] = std::move(encodings[i].ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const int64_t> ids, bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    const std::string* token = impl_->token_of(id);
    if (!token) continue;
    if (skip_special_tokens && impl_->special_contents.count(*token)) continue;
    tokens.push_back(*token);
  }
  if (!impl_->decoder) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i) (i ? joined += ' ' : joined) += tokens[i];
    return joined;
  }
  impl_->decoder->decode_chain(tokens);
  std::string joined;
  for (const auto& token : tokens) joined += token;
  return joined;
}

std::vector<std::string> Tokenizer::decode_batch(const std::vector<std::vector<int64_t>>& batch,
                                                 bool skip_special_tokens) const {
  std::vector<std::string> out;
  out.reserve(batch.size());
  for (const auto& ids : batch) out.push_back(decode(ids, skip_special_tokens));
  return out;
}

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const auto it = impl_->added_ids.find(std::string(token)); it != impl_->added_ids.end()) {
    return it->second;
  }
  return impl_->model->token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(int64_t id) const {
  const std::string* token = impl_->token_of(id);
  return token ? std::optional<std::string>(*token) : std::nullopt;
}

int64_t Tokenizer::vocab_size(bool with_added_tokens) const {
  return with_added_tokens ? impl_->vocab_size_with_added : impl_->model->vocab_size();
}

bool Tokenizer::is_special(int64_t id) const {
  const std::string* token = impl_->token_of(id);
  return token && impl_->special_contents.count(*token) > 0;
}

}  // namespace ox::tokenizers
