// The models of tokenizer.json: BPE (byte-level, SentencePiece-style with byte fallback, or with
// subword affixes), WordPiece and WordLevel. A word in, its ids out.

#include <array>
#include <cstdio>
#include <mutex>
#include <queue>
#include <unordered_map>

#include "oxmera/core/error.h"
#include "tokenizers/pipeline.h"

namespace ox::tokenizers::models {
namespace {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <class Value>
using StringMap = std::unordered_map<std::string, Value, StringHash, std::equal_to<>>;

// token <-> id, both ways; ids need not be contiguous.
class Vocabulary {
 public:
  Vocabulary(const Json& object, std::string_view where) {
    if (!object.is_object()) json::fail(where, "\"vocab\" is not an object of token: id");
    ids_.reserve(object.size());
    for (const auto& [token, value] : object.items()) {
      const int64_t id = json::as_id(value, std::string(where) + " vocab \"" + token + "\"");
      if (size_t(id) >= tokens_.size()) tokens_.resize(size_t(id) + 1, nullptr);
      if (tokens_[size_t(id)]) {
        json::fail(where, "the tokens \"" + *tokens_[size_t(id)] + "\" and \"" + token +
                              "\" have the same id " + std::to_string(id));
      }
      const auto [it, inserted] = ids_.emplace(token, id);
      if (!inserted) json::fail(where, "the token \"" + token + "\" appears twice");
      tokens_[size_t(id)] = &it->first;
    }
  }

  std::optional<int64_t> find(std::string_view token) const {
    const auto it = ids_.find(token);
    return it == ids_.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  const std::string* token(int64_t id) const {
    return id >= 0 && size_t(id) < tokens_.size() ? tokens_[size_t(id)] : nullptr;
  }
  int64_t size() const { return int64_t(ids_.size()); }
  void for_each(const std::function<void(const std::string&)>& visit) const {
    for (const auto& entry : ids_) visit(entry.first);
  }

 private:
  StringMap<int64_t> ids_;
  std::vector<const std::string*> tokens_;  // into ids_'s keys, which never move
};

class VocabularyModel : public Model {
 public:
  VocabularyModel(const Json& j, std::string_view where)
      : vocab_(json::member(j, "vocab", where), where), where_(where) {}
  std::optional<int64_t> token_to_id(std::string_view token) const override {
    return vocab_.find(token);
  }
  const std::string* id_to_token(int64_t id) const override { return vocab_.token(id); }
  int64_t vocab_size() const override { return vocab_.size(); }
  void for_each_token(const std::function<void(const std::string&)>& visit) const override {
    vocab_.for_each(visit);
  }

 protected:
  int64_t unknown_id(const std::optional<std::string>& unk, std::string_view word) const {
    const auto id = unk ? vocab_.find(*unk) : std::nullopt;
    OX_CHECK(id, Value, "Tokenizer", where_, ": \"", word, "\" needs the unknown token",
             unk ? " \"" + *unk + "\", which is not in the vocabulary" : ", and there is none");
    return *id;
  }

  Vocabulary vocab_;
  std::string where_;
};

class Bpe final : public VocabularyModel {
 public:
  explicit Bpe(const Json& j) : VocabularyModel(j, "model (BPE)") {
    unk_ = json::optional_string(j, "unk_token", where_);
    prefix_ = json::optional_string(j, "continuing_subword_prefix", where_).value_or("");
    suffix_ = json::optional_string(j, "end_of_word_suffix", where_).value_or("");
    fuse_unk_ = json::boolean(j, "fuse_unk", false, where_);
    byte_fallback_ = json::boolean(j, "byte_fallback", false, where_);
    ignore_merges_ = json::boolean(j, "ignore_merges", false, where_);
    if (const Json* dropout = json::optional_member(j, "dropout")) {
      if (!dropout->is_number() || dropout->get<double>() != 0.0) {
        json::fail(where_, "dropout " + dropout->dump() +
                               " (random merges while encoding) is not supported; null is");
      }
    }
    read_merges(json::member(j, "merges", where_));
    if (byte_fallback_) {
      for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        byte_ids_[size_t(b)] = vocab_.find(name).value_or(-1);
      }
    }
  }

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override {
    if (ignore_merges_) {
      if (const auto id = vocab_.find(word)) {
        ids.push_back(*id);
        return;
      }
    }
    {
      std::lock_guard lock(cache_mutex_);
      if (const auto it = cache_.find(word); it != cache_.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    const size_t first = ids.size();
    merge_word(word, ids);
    if (word.size() < kCachedWordBytes) {
      std::lock_guard lock(cache_mutex_);
      if (cache_.size() < kCacheCapacity) {
        cache_.emplace(std::string(word),
                       std::vector<int64_t>(ids.begin() + ptrdiff_t(first), ids.end()));
      }
    }
  }

 private:
  // The tokenizers library's bounds: words shorter than 256 bytes, 10,000 of them.
  static constexpr size_t kCachedWordBytes = 256, kCacheCapacity = 10'000;

  struct MergeRule {
    int32_t rank;
    int64_t new_id;
  };
  static uint64_t pair_key(int64_t a, int64_t b) { return (uint64_t(a) << 32) | uint64_t(b); }

  void read_merges(const Json& merges) {
    if (!merges.is_array()) json::fail(where_, "\"merges\" is not a list");
    merges_.reserve(merges.size());
    int32_t rank = 0;
    for (const Json& merge : merges) {
      std::string a, b;
      if (merge.is_string()) {  // "a b", the older layout
        const std::string line = merge.get<std::string>();
        const size_t space = line.find(' ');
        if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
          json::fail(where_, "merge " + std::to_string(rank + 1) + " \"" + line +
                                 "\" is not two tokens separated by a space");
        }
        a = line.substr(0, space);
        b = line.substr(space + 1);
      } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                 merge[1].is_string()) {
        a = merge[0].get<std::string>();
        b = merge[1].get<std::string>();
      } else {
        json::fail(where_, "merge " + std::to_string(rank + 1) + " is not [\"a\", \"b\"]");
      }
      const auto a_id = vocab_.find(a), b_id = vocab_.find(b);
      if (!a_id || !b_id) {
        json::fail(where_, "merge " + std::to_string(rank + 1) + " names \"" + (a_id ? b : a) +
                               "\", which is not in the vocabulary");
      }
      // The merged token drops the right part's continuing prefix ("th" + "##e" = "the").
      std::string_view right = b;
      if (!prefix_.empty() && right.starts_with(prefix_)) right.remove_prefix(prefix_.size());
      const auto merged = vocab_.find(a + std::string(right));
      if (!merged) {
        json::fail(where_, "merge " + std::to_string(rank + 1) + " makes \"" + a +
                               std::string(right) + "\", which is not in the vocabulary");
      }
      merges_[pair_key(*a_id, *b_id)] = {rank, *merged};  // a repeated pair: the later rank
      ++rank;
    }
  }

  struct Symbol {
    int64_t id;
    int32_t prev, next;
    bool removed;
  };

  // The word's code points as tokens (affixes, byte fallback, unknowns), then the merges in rank
  // order, leftmost first among equal ranks (the library's Word::merge_all).
  void merge_word(std::string_view word, std::vector<int64_t>& ids) const {
    thread_local std::vector<Symbol> symbols;
    thread_local std::string key;
    symbols.clear();
    const auto add = [&](int64_t id) {
      const auto n = int32_t(symbols.size());
      symbols.push_back({id, n - 1, n + 1, false});
    };
    std::optional<int64_t> pending_unk;
    for (size_t i = 0; i < word.size();) {
      const size_t begin = i;
      i += text::code_point_length(static_cast<unsigned char>(word[i]));
      std::string_view piece = word.substr(begin, i - begin);
      if (begin > 0 && !prefix_.empty()) {
        key.assign(prefix_).append(piece);
        if (i == word.size()) key.append(suffix_);
        piece = key;
      } else if (i == word.size() && !suffix_.empty()) {
        key.assign(piece).append(suffix_);
        piece = key;
      }
      if (const auto id = vocab_.find(piece)) {
        if (pending_unk) add(*pending_unk);
        pending_unk.reset();
        add(*id);
        continue;
      }
      if (byte_fallback_ && all_bytes_known(piece)) {
        // The library adds the byte tokens before an unknown still pending; so does this.
        for (unsigned char byte : piece) add(byte_ids_[byte]);
        continue;
      }
      if (unk_) {
        const int64_t unk = unknown_id(unk_, word);
        if (pending_unk && !fuse_unk_) add(*pending_unk);
        pending_unk = unk;
      }
    }
    if (pending_unk) add(*pending_unk);
    if (symbols.empty()) return;
    symbols.back().next = -1;

    struct Candidate {
      int32_t rank, pos;
      int64_t new_id;
      bool operator>(const Candidate& o) const {
        return rank != o.rank ? rank > o.rank : pos > o.pos;
      }
    };
    thread_local std::vector<Candidate> storage;
    storage.clear();
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue(
        std::greater<>{}, std::move(storage));
    const auto consider = [&](int32_t pos) {
      const Symbol& left = symbols[size_t(pos)];
      if (left.next < 0) return;
      const auto it = merges_.find(pair_key(left.id, symbols[size_t(left.next)].id));
      if (it != merges_.end()) queue.push({it->second.rank, pos, it->second.new_id});
    };
    for (int32_t pos = 0; pos + 1 < int32_t(symbols.size()); ++pos) consider(pos);
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& left = symbols[size_t(top.pos)];
      if (left.removed || left.next < 0) continue;
      const auto it = merges_.find(pair_key(left.id, symbols[size_t(left.next)].id));
      if (it == merges_.end() || it->second.new_id != top.new_id) continue;  // stale
      Symbol& right = symbols[size_t(left.next)];
      right.removed = true;
      left.id = top.new_id;
      left.next = right.next;
      if (left.next >= 0) symbols[size_t(left.next)].prev = top.pos;
      if (left.prev >= 0) consider(left.prev);
      consider(top.pos);
    }
    for (const Symbol& s : symbols) {
      if (!s.removed) ids.push_back(s.id);
    }
  }

  bool all_bytes_known(std::string_view piece) const {
    for (unsigned char byte : piece) {
      if (byte_ids_[byte] < 0) return false;
    }
    return true;
  }

  std::optional<std::string> unk_;
  std::string prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  std::unordered_map<uint64_t, MergeRule> merges_;
  std::array<int64_t, 256> byte_ids_{};
  mutable std::mutex cache_mutex_;
  mutable StringMap<std::vector<int64_t>> cache_;
};

// BERT's: the longest vocabulary entry from the left, continuing pieces with "##"; a word with
// any part not in the vocabulary is one unknown token.
class WordPiece final : public VocabularyModel {
 public:
  explicit WordPiece(const Json& j) : VocabularyModel(j, "model (WordPiece)") {
    unk_ = json::string(j, "unk_token", where_);
    prefix_ = json::optional_string(j, "continuing_subword_prefix", where_).value_or("##");
    max_chars_ = json::integer(j, "max_input_chars_per_word", 100, where_);
  }

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override {
    int64_t chars = 0;
    for (unsigned char byte : word) chars += (byte & 0xC0) != 0x80;
    if (chars > max_chars_) {
      ids.push_back(unknown_id(unk_, word));
      return;
    }
    thread_local std::string key;
    const size_t first = ids.size();
    for (size_t start = 0; start < word.size();) {
      size_t end = word.size();
      std::optional<int64_t> found;
      while (start < end) {
        key.assign(start > 0 ? prefix_ : std::string_view())
            .append(word.substr(start, end - start));
        if ((found = vocab_.find(key))) break;
        do {
          --end;
        } while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (!found) {
        ids.resize(first);
        ids.push_back(unknown_id(unk_, word));
        return;
      }
      ids.push_back(*found);
      start = end;
    }
  }

 private:
  std::optional<std::string> unk_;
  std::string prefix_;
  int64_t max_chars_ = 100;
};

class WordLevel final : public VocabularyModel {
 public:
  explicit WordLevel(const Json& j) : VocabularyModel(j, "model (WordLevel)") {
    unk_ = json::optional_string(j, "unk_token", where_);
  }
  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override {
    const auto id = vocab_.find(word);
    ids.push_back(id ? *id : unknown_id(unk_, word));
  }

 private:
  std::optional<std::string> unk_;
};

}  // namespace

std::unique_ptr<Model> make(const Json& j) {
  if (j.is_null()) json::fail("model", "is null");
  // Files of older versions leave out the BPE model's type.
  const std::string type = json::optional_member(j, "type")
                               ? json::type(j, "model")
                               : (json::optional_member(j, "merges") ? "BPE" : "");
  if (type == "BPE") return std::make_unique<Bpe>(j);
  if (type == "WordPiece") return std::make_unique<WordPiece>(j);
  if (type == "WordLevel") return std::make_unique<WordLevel>(j);
  json::fail("model", "the model \"" + type +
                          "\" is not supported (BPE, WordPiece, WordLevel; not Unigram)");
}

}  // namespace ox::tokenizers::models
