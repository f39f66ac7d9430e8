#include "tokenizers/pipeline.h"

#include <algorithm>
#include <array>

#include "oxmera/core/error.h"

namespace ox::tokenizers {

void regex_spans(const text::Regex& regex, std::string_view text, bool invert,
                 std::vector<Span>& spans) {
  thread_local std::vector<text::Regex::Match> matches;
  spans.clear();
  regex.find_all(text, matches);
  size_t previous = 0;
  for (const auto& match : matches) {
    if (previous != match.begin) spans.push_back({previous, match.begin, invert});
    spans.push_back({match.begin, match.end, !invert});
    previous = match.end;
  }
  if (previous != text.size()) spans.push_back({previous, text.size(), invert});
}

namespace {

// The library's NormalizedString::split: which spans are kept, and merged how.
void apply_behavior(std::vector<Span>& spans, SplitBehavior behavior) {
  std::vector<Span> kept;
  kept.reserve(spans.size());
  bool previous_match = false;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (auto& span : spans) span.is_match = false;
      return;
    case SplitBehavior::Removed:
      return;  // the matches are dropped by split_pieces
    case SplitBehavior::Contiguous:
      for (const auto& span : spans) {
        if (span.is_match == previous_match && !kept.empty()) {
          kept.back().end = span.end;
        } else {
          kept.push_back({span.begin, span.end, false});
        }
        previous_match = span.is_match;
      }
      break;
    case SplitBehavior::MergedWithPrevious:
      for (const auto& span : spans) {
        if (span.is_match && !previous_match && !kept.empty()) {
          kept.back().end = span.end;
        } else {
          kept.push_back({span.begin, span.end, false});
        }
        previous_match = span.is_match;
      }
      break;
    case SplitBehavior::MergedWithNext:
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->is_match && !previous_match && !kept.empty()) {
          kept.back().begin = it->begin;
        } else {
          kept.push_back({it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  spans.swap(kept);
}

}  // namespace

void split_pieces(Pieces& pieces, SplitBehavior behavior,
                  const std::function<void(std::string_view, std::vector<Span>&)>& split) {
  thread_local std::vector<Span> spans;
  Pieces out;
  out.reserve(pieces.size());
  for (auto& piece : pieces) {
    if (piece.added_id >= 0) {
      out.push_back(std::move(piece));
      continue;
    }
    split(piece.text, spans);
    apply_behavior(spans, behavior);
    for (const auto& span : spans) {
      if (span.is_match || span.end == span.begin) continue;  // removed, or empty
      if (span.begin == 0 && span.end == piece.text.size()) {
        out.push_back(std::move(piece));
        break;
      }
      out.push_back({piece.text.substr(span.begin, span.end - span.begin), -1,
                     piece.at_origin && span.begin == 0});
    }
  }
  pieces.swap(out);
}

void Encoded::append(const Encoded& other) {
  ids.insert(ids.end(), other.ids.begin(), other.ids.end());
  type_ids.insert(type_ids.end(), other.type_ids.begin(), other.type_ids.end());
  special_mask.insert(special_mask.end(), other.special_mask.begin(), other.special_mask.end());
}

void Encoded::append_special(int64_t id, int64_t type_id) {
  ids.push_back(id);
  type_ids.push_back(type_id);
  special_mask.push_back(1);
}

namespace {

// GPT-2's table: printable bytes stand for themselves, the others for U+0100 onwards in order.
struct ByteLevelAlphabet {
  std::array<std::string, 256> text;
  std::array<char32_t, 256> code_point{};
  ByteLevelAlphabet() {
    const auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      code_point[size_t(b)] = printable(b) ? char32_t(b) : next++;
      text::append_utf8(text[size_t(b)], code_point[size_t(b)]);
    }
  }
};

const ByteLevelAlphabet& alphabet() {
  static const ByteLevelAlphabet table;
  return table;
}

}  // namespace

const std::string& byte_to_text(unsigned char byte) { return alphabet().text[byte]; }

int text_to_byte(char32_t c) {
  // The table is 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF as themselves and 0x100-0x143 for the rest.
  if (c < 0x100) {
    const bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE);
    return printable ? int(c) : -1;
  }
  static const auto reverse = [] {
    std::array<int, 68> bytes{};
    for (int b = 0; b < 256; ++b) {
      const char32_t cp = alphabet().code_point[size_t(b)];
      if (cp >= 0x100) bytes[cp - 0x100] = b;
    }
    return bytes;
  }();
  return c < 0x100 + reverse.size() ? reverse[c - 0x100] : -1;
}

// ---- tokenizer.json fields --------------------------------------------------------------------

namespace json {

void fail(std::string_view where, const std::string& message) {
  OX_FAIL(Format, "Tokenizer", "tokenizer.json: ", where, ": ", message);
}

const Json& member(const Json& object, const char* key, std::string_view where) {
  if (!object.is_object())
    fail(where, "expected an object, got " + std::string(object.type_name()));
  const auto it = object.find(key);
  if (it == object.end()) fail(where, std::string("has no \"") + key + "\"");
  return *it;
}

const Json* optional_member(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

std::string as_string(const Json& value, std::string_view where) {
  if (!value.is_string()) fail(where, "expected a string, got " + std::string(value.type_name()));
  return value.get<std::string>();
}

int64_t as_id(const Json& value, std::string_view where) {
  if (!value.is_number_integer()) fail(where, "expected an integer id, got " + value.dump());
  const int64_t id = value.get<int64_t>();
  // u32 in the tokenizers library; below 2^31 here so that ids fit any index type.
  if (id < 0 || id > INT32_MAX) fail(where, "the id " + std::to_string(id) + " is out of range");
  return id;
}

std::string string(const Json& object, const char* key, std::string_view where) {
  return as_string(member(object, key, where), std::string(where) + "." + key);
}

std::optional<std::string> optional_string(const Json& object, const char* key,
                                           std::string_view where) {
  const Json* value = optional_member(object, key);
  if (!value) return std::nullopt;
  return as_string(*value, std::string(where) + "." + key);
}

bool boolean(const Json& object, const char* key, bool fallback, std::string_view where) {
  const Json* value = optional_member(object, key);
  if (!value) return fallback;
  if (!value->is_boolean()) fail(where, std::string("\"") + key + "\" is not true or false");
  return value->get<bool>();
}

int64_t integer(const Json& object, const char* key, std::optional<int64_t> fallback,
                std::string_view where) {
  const Json* value = optional_member(object, key);
  if (!value) {
    if (!fallback) fail(where, std::string("has no \"") + key + "\"");
    return *fallback;
  }
  if (!value->is_number_integer() || value->get<int64_t>() < 0) {
    fail(where, std::string("\"") + key + "\" is not a non-negative integer");
  }
  return value->get<int64_t>();
}

std::string type(const Json& object, std::string_view where) {
  return string(object, "type", where);
}

text::Regex pattern(const Json& object, const char* key, std::string_view where) {
  const Json& value = member(object, key, where);
  if (value.is_object() && value.size() == 1) {
    if (const Json* s = optional_member(value, "String")) {
      return text::Regex::literal(as_string(*s, where), where);
    }
    if (const Json* r = optional_member(value, "Regex")) {
      return text::Regex(as_string(*r, where), where);
    }
  }
  fail(where, std::string("\"") + key + "\" is not {\"String\": ...} or {\"Regex\": ...}");
}

char32_t character(const Json& object, const char* key, std::string_view where) {
  const std::string s = string(object, key, where);
  text::check_utf8(s, "Tokenizer");
  size_t i = 0;
  const char32_t c = s.empty() ? 0 : text::next_code_point(s, i);
  if (s.empty() || i != s.size()) fail(where, std::string("\"") + key + "\" is not one character");
  return c;
}

}  // namespace json
}  // namespace ox::tokenizers
