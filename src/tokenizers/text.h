#pragma once
// Text for the tokenizers: UTF-8, Unicode classes and normalization (utf8proc), regular
// expressions (PCRE2). The tokenizers library's classes are Rust's `char` methods and its
// regular expressions Oniguruma's; the notes below say where these follow them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/text_util.h"

namespace ox::tokenizers::text {

// The code point starting at text[i] of valid UTF-8; i moves past it.
inline char32_t next_code_point(std::string_view text, size_t& i) {
  const auto byte = [&](size_t k) { return char32_t(static_cast<unsigned char>(text[k])); };
  const char32_t lead = byte(i);
  if (lead < 0x80) {
    i += 1;
    return lead;
  }
  if (lead < 0xE0) {
    i += 2;
    return ((lead & 0x1F) << 6) | (byte(i - 1) & 0x3F);
  }
  if (lead < 0xF0) {
    i += 3;
    return ((lead & 0x0F) << 12) | ((byte(i - 2) & 0x3F) << 6) | (byte(i - 1) & 0x3F);
  }
  i += 4;
  return ((lead & 0x07) << 18) | ((byte(i - 3) & 0x3F) << 12) | ((byte(i - 2) & 0x3F) << 6) |
         (byte(i - 1) & 0x3F);
}

// The byte length of the code point whose first byte is `lead` (valid UTF-8).
inline size_t code_point_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

using ox::append_utf8;  // core/text_util.h

// ErrorKind::Value naming `op` and the byte offset of the first invalid sequence.
void check_utf8(std::string_view text, const char* op);

// Bytes to text, each maximal invalid subsequence replaced by U+FFFD (Rust's from_utf8_lossy).
std::string utf8_lossy(std::string_view bytes);

// Rust's char::is_whitespace (the White_Space property).
bool is_whitespace(char32_t c);
// Rust's char::is_numeric: general categories Nd, Nl, No.
bool is_numeric(char32_t c);
// ASCII punctuation or a P* category (the tokenizers library's punctuation).
bool is_punctuation(char32_t c);
// A C* category: Cc, Cf, Cn, Co, Cs (BERT's control characters).
bool is_other(char32_t c);
// An M* category; Mn alone for nonspacing.
bool is_combining_mark(char32_t c);
bool is_nonspacing_mark(char32_t c);
// A regular-expression word character (\w): letters, marks, Nd, Nl, Pc, the joiners.
bool is_word(char32_t c);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view text, NormalForm form);
// Per code point, as Rust's char::to_lowercase (simple mappings and U+0130's two code points).
std::string lowercase(std::string_view text);

// A compiled regular expression: UTF-8, Unicode classes (\w, \s, \d, \p{..}), `^`/`$` at line
// ends as in Oniguruma's Ruby syntax. Shared by copies; matching is thread-safe.
class Regex {
 public:
  Regex(std::string_view pattern, std::string_view where);
  static Regex literal(std::string_view text, std::string_view where);

  struct Match {
    size_t begin, end;
  };
  // The non-overlapping matches in `subject`, left to right; after an empty match the search
  // goes on one code point further.
  void find_all(std::string_view subject, std::vector<Match>& matches) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  std::string where_;
};

}  // namespace ox::tokenizers::text
