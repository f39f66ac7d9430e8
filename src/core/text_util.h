#pragma once
// Small text helpers the layers above share: UTF-8 encoding of a code point, and a depth check
// to run before nlohmann-json's recursive parser meets text from a file.

#include <cstddef>
#include <string>
#include <string_view>

#include "oxmera/core/error.h"

namespace ox {

inline void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

// An ErrorKind::Format error naming `op` and `what` when the JSON text nests arrays and objects
// deeper than `max_depth`: nlohmann-json parses recursively, so a file of a million '[' would
// otherwise exhaust the stack. Strings (and their escapes) are skipped.
inline void check_json_nesting(std::string_view text, int max_depth, const char* op,
                               std::string_view what) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      OX_CHECK(++depth <= max_depth, Format, op, what, ": nested deeper than ", max_depth,
               " levels (byte ", i, ")");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

}  // namespace ox
