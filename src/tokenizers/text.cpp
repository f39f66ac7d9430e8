#include "tokenizers/text.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdlib>

#include "oxmera/core/error.h"

namespace ox::tokenizers::text {

namespace {

// The length of the valid UTF-8 sequence at bytes[i], or of its longest valid prefix as a
// negative number (-1 where even the first byte cannot start one): Unicode's "maximal subpart".
ptrdiff_t sequence_at(std::string_view bytes, size_t i) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(bytes[k]); };
  const unsigned char lead = at(i);
  if (lead < 0x80) return 1;
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range; later ones are 80-BF
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return -1;
  }
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= bytes.size()) return -ptrdiff_t(k);
    const unsigned char b = at(i + k);
    const bool ok = k == 1 ? (b >= low && b <= high) : (b >= 0x80 && b <= 0xBF);
    if (!ok) return -ptrdiff_t(k);
  }
  return ptrdiff_t(length);
}

utf8proc_category_t category(char32_t c) { return utf8proc_category(utf8proc_int32_t(c)); }

}  // namespace

void check_utf8(std::string_view text, const char* op) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;
      continue;
    }
    const ptrdiff_t length = sequence_at(text, i);
    OX_CHECK(length > 0, Value, op, "the text is not valid UTF-8: an invalid sequence at byte ", i,
             " of ", text.size());
    i += size_t(length);
  }
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    const ptrdiff_t length = sequence_at(bytes, i);
    if (length > 0) {
      out.append(bytes.substr(i, size_t(length)));
      i += size_t(length);
    } else {
      out += "\xEF\xBF\xBD";
      i += size_t(-length);
    }
  }
  return out;
}

bool is_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_numeric(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_ND || k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_NO;
}

bool is_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  const auto k = category(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}

bool is_other(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_CC || k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_CN ||
         k == UTF8PROC_CATEGORY_CO || k == UTF8PROC_CATEGORY_CS;
}

bool is_combining_mark(char32_t c) {
  const auto k = category(c);
  return k == UTF8PROC_CATEGORY_MN || k == UTF8PROC_CATEGORY_MC || k == UTF8PROC_CATEGORY_ME;
}

bool is_nonspacing_mark(char32_t c) { return category(c) == UTF8PROC_CATEGORY_MN; }

bool is_word(char32_t c) {
  const auto k = category(c);
  return (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ME) || k == UTF8PROC_CATEGORY_ND ||
         k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_PC || c == 0x200C || c == 0x200D;
}

std::string normalize(std::string_view text, NormalForm form) {
  if (text.empty()) return {};
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::NFD:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::NFKC:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::NFKD:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   utf8proc_ssize_t(text.size()), &out, utf8proc_option_t(options));
  OX_CHECK(length >= 0, Value, "tokenizers",
           "Unicode normalization failed: ", utf8proc_errmsg(length));
  std::string result(reinterpret_cast<const char*>(out), size_t(length));
  std::free(out);
  return result;
}

std::string lowercase(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char32_t c = next_code_point(text, i);
    if (c < 0x80) {
      out += char(c >= 'A' && c <= 'Z' ? c + 32 : c);
    } else if (c == 0x130) {  // İ: the one unconditional lowercase of two code points
      out += "i\xCC\x87";
    } else {
      append_utf8(out, char32_t(utf8proc_tolower(utf8proc_int32_t(c))));
    }
  }
  return out;
}

// ---- Regex ----------------------------------------------------------------------------------

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

// Per thread: match data grown to the largest pattern seen, and a JIT stack larger than PCRE2's
// 32 KiB default (a run of thousands of spaces under `\s+(?!\S)` needs more).
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  MatchState() {
    data = pcre2_match_data_create(64, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    OX_CHECK(data && context && stack, OutOfMemory, "tokenizers", "PCRE2 could not allocate");
    pcre2_jit_stack_assign(context, nullptr, stack);
    pcre2_set_match_limit(context, 10'000'000);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view where) : where_(where) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto code = std::make_shared<Code>();
  code->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                             PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &error, &offset, nullptr);
  OX_CHECK(code->code, Format, "tokenizers", where_, ": the regular expression \"", pattern,
           "\" does not compile: ", pcre2_message(error), " at offset ", offset);
  pcre2_jit_compile(code->code, PCRE2_JIT_COMPLETE);  // without JIT (unsupported) it interprets
  code_ = std::move(code);
}

Regex Regex::literal(std::string_view text, std::string_view where) {
  std::string pattern = "\\Q";
  for (size_t i = 0; i < text.size(); ++i) {  // \Q...\E, with any "\E" inside spelled out
    if (text.substr(i, 2) == "\\E") {
      pattern += "\\E\\\\E\\Q";
      ++i;
    } else {
      pattern += text[i];
    }
  }
  return Regex(pattern + "\\E", where);
}

void Regex::find_all(std::string_view subject, std::vector<Match>& matches) const {
  thread_local MatchState state;
  matches.clear();
  const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
  size_t start = 0;
  while (start <= subject.size()) {
    const int rc = pcre2_match(code_->code, data, subject.size(), start, PCRE2_NO_UTF_CHECK,
                               state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    OX_CHECK(rc >= 0, Value, "tokenizers", where_,
             ": matching the regular expression failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t begin = ovector[0], end = ovector[1];
    matches.push_back({begin, end});
    if (end > begin) {
      start = end;
    } else if (end < subject.size()) {
      start = end + code_point_length(static_cast<unsigned char>(subject[end]));
    } else {
      break;
    }
  }
}

}  // namespace ox::tokenizers::text
