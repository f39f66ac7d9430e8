#pragma once
// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.

#include <string>
#include <string_view>
#include <vector>

#include "core/text_util.h"

namespace ox::data {

// The code points of `text`; ErrorKind::Format naming `op`, `source` and the byte offset of
// the first invalid sequence.
std::vector<char32_t> decode_utf8(std::string_view text, const char* op, std::string_view source);

using ox::append_utf8;  // core/text_util.h

inline bool is_scalar_value(char32_t c) { return c <= 0x10FFFF && !(c >= 0xD800 && c <= 0xDFFF); }

}  // namespace ox::data
