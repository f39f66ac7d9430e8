// The normalizers of tokenizer.json: text to text, before pre-tokenization.

#include <vector>

#include "tokenizers/pipeline.h"

namespace ox::tokenizers::normalizers {
namespace {

// Keeps the code points `keep` accepts, each mapped through `map` (one code point to one).
template <class Keep, class Map>
void filter_map(std::string& s, Keep keep, Map map) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t c = text::next_code_point(s, i);
    if (keep(c)) text::append_utf8(out, map(c));
  }
  s.swap(out);
}

class UnicodeForm final : public Normalizer {
 public:
  explicit UnicodeForm(text::NormalForm form) : form_(form) {}
  void normalize(std::string& s) const override { s = text::normalize(s, form_); }

 private:
  text::NormalForm form_;
};

class Lowercase final : public Normalizer {
 public:
  void normalize(std::string& s) const override { s = text::lowercase(s); }
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    size_t begin = 0, end = s.size();
    if (left_) {
      for (size_t i = 0; i < s.size();) {
        if (!text::is_whitespace(text::next_code_point(s, i))) break;
        begin = i;
      }
    }
    if (right_) {
      size_t last_kept = begin;  // the end of the last code point that is not whitespace
      for (size_t i = begin; i < s.size();) {
        if (!text::is_whitespace(text::next_code_point(s, i))) last_kept = i;
      }
      end = last_kept;
    }
    s = s.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

class StripAccents final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    filter_map(
        s, [](char32_t c) { return !text::is_combining_mark(c); }, [](char32_t c) { return c; });
  }
};

class Replace final : public Normalizer {
 public:
  Replace(text::Regex pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string& s) const override {
    thread_local std::vector<text::Regex::Match> matches;
    pattern_.find_all(s, matches);
    if (matches.empty()) return;
    std::string out;
    size_t previous = 0;
    for (const auto& m : matches) {
      out.append(s, previous, m.begin - previous);
      if (m.end > m.begin) out += content_;  // an empty match replaces nothing
      previous = m.end;
    }
    out.append(s, previous);
    s.swap(out);
  }

 private:
  text::Regex pattern_;
  std::string content_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

// BERT's: control characters dropped and whitespace made a space, CJK ideographs spaced out,
// accents stripped (by default when lowercasing), then lowercase.
class BertNormalizer final : public Normalizer {
 public:
  BertNormalizer(bool clean_text, bool chinese, bool strip_accents, bool lowercase)
      : clean_text_(clean_text),
        chinese_(chinese),
        strip_accents_(strip_accents),
        lowercase_(lowercase) {}

  void normalize(std::string& s) const override {
    if (clean_text_) {
      filter_map(
          s,
          [](char32_t c) {
            const bool whitespace_control = c == '\t' || c == '\n' || c == '\r';
            return !(c == 0 || c == 0xFFFD || (!whitespace_control && text::is_other(c)));
          },
          [](char32_t c) {
            return c == '\t' || c == '\n' || c == '\r' || text::is_whitespace(c) ? U' ' : c;
          });
    }
    if (chinese_) {
      std::string out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        const char32_t c = text::next_code_point(s, i);
        const bool ideograph = is_chinese(c);
        if (ideograph) out += ' ';
        text::append_utf8(out, c);
        if (ideograph) out += ' ';
      }
      s.swap(out);
    }
    if (strip_accents_) {
      s = text::normalize(s, text::NormalForm::NFD);
      filter_map(
          s, [](char32_t c) { return !text::is_nonspacing_mark(c); }, [](char32_t c) { return c; });
    }
    if (lowercase_) s = text::lowercase(s);
  }

 private:
  static bool is_chinese(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
           (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
           (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
  }
  bool clean_text_, chinese_, strip_accents_, lowercase_;
};

// Bytes as GPT-2's printable alphabet (the normalizer form of the ByteLevel pre-tokenizer).
class ByteLevelNormalizer final : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size() * 2);
    for (unsigned char byte : s) out += byte_to_text(byte);
    s.swap(out);
  }
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& s) const override {
    for (const auto& step : steps_) step->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make(const Json& j) {
  if (j.is_null()) return nullptr;
  constexpr std::string_view where = "normalizer";
  const std::string type = json::type(j, where);
  if (type == "NFC") return std::make_unique<UnicodeForm>(text::NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeForm>(text::NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeForm>(text::NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeForm>(text::NormalForm::NFKD);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip") {
    return std::make_unique<Strip>(json::boolean(j, "strip_left", true, where),
                                   json::boolean(j, "strip_right", true, where));
  }
  if (type == "Replace") {
    return std::make_unique<Replace>(json::pattern(j, "pattern", "normalizer Replace"),
                                     json::string(j, "content", where));
  }
  if (type == "Prepend") return std::make_unique<Prepend>(json::string(j, "prepend", where));
  if (type == "BertNormalizer") {
    const bool lowercase = json::boolean(j, "lowercase", true, where);
    const Json* strip = json::optional_member(j, "strip_accents");
    if (strip && !strip->is_boolean()) json::fail(where, "\"strip_accents\" is not a boolean");
    return std::make_unique<BertNormalizer>(json::boolean(j, "clean_text", true, where),
                                            json::boolean(j, "handle_chinese_chars", true, where),
                                            strip ? strip->get<bool>() : lowercase, lowercase);
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Sequence") {
    const Json& list = json::member(j, "normalizers", where);
    if (!list.is_array()) json::fail(where, "\"normalizers\" is not a list");
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const Json& step : list) {
      if (auto made = make(step)) steps.push_back(std::move(made));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  json::fail(where, "the normalizer \"" + type +
                        "\" is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Strip, "
                        "StripAccents, Replace, Prepend, BertNormalizer, ByteLevel, Sequence)");
}

}  // namespace ox::tokenizers::normalizers
