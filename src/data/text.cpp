#include "oxmera/data/text.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "core/file_check.h"
#include "data/utf8.h"
#include "oxmera/ops.h"

namespace ox::data {

std::vector<char32_t> decode_utf8(std::string_view text, const char* op, std::string_view source) {
  std::vector<char32_t> out;
  out.reserve(text.size());
  size_t i = 0;
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  while (i < text.size()) {
    const unsigned char lead = byte(i);
    int length;
    char32_t c, min;
    if (lead < 0x80) {
      out.push_back(lead);
      ++i;
      continue;
    } else if ((lead & 0xE0) == 0xC0) {
      length = 2, c = lead & 0x1F, min = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, c = lead & 0x0F, min = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, c = lead & 0x07, min = 0x10000;
    } else {
      OX_FAIL(Format, op, source, ": invalid UTF-8 lead byte 0x", std::hex, int(lead), std::dec,
              " at byte ", i);
    }
    OX_CHECK(i + size_t(length) <= text.size(), Format, op, source,
             ": truncated UTF-8 sequence at byte ", i);
    for (int k = 1; k < length; ++k) {
      const unsigned char next = byte(i + size_t(k));
      OX_CHECK((next & 0xC0) == 0x80, Format, op, source, ": invalid UTF-8 continuation byte 0x",
               std::hex, int(next), std::dec, " at byte ", i + size_t(k));
      c = (c << 6) | (next & 0x3F);
    }
    OX_CHECK(c >= min, Format, op, source, ": overlong UTF-8 sequence at byte ", i);
    OX_CHECK(is_scalar_value(c), Format, op, source, ": UTF-8 sequence at byte ", i, " encodes U+",
             std::hex, uint32_t(c), std::dec, ", not a Unicode scalar value");
    out.push_back(c);
    i += size_t(length);
  }
  return out;
}

Vocabulary Vocabulary::from_text(std::string_view utf8) {
  Vocabulary vocab;
  vocab.code_points_ = decode_utf8(utf8, "Vocabulary", "text");
  std::sort(vocab.code_points_.begin(), vocab.code_points_.end());
  vocab.code_points_.erase(std::unique(vocab.code_points_.begin(), vocab.code_points_.end()),
                           vocab.code_points_.end());
  return vocab;
}

Vocabulary Vocabulary::from_tensor(const Tensor& code_points) {
  OX_CHECK(code_points.defined() && code_points.dim() == 1 && is_integral(code_points.dtype()),
           Value, "Vocabulary", "needs a 1-d integer tensor of code points, got ",
           code_points.defined() ? code_points.str() : "an undefined tensor");
  Vocabulary vocab;
  int64_t previous = -1;
  for (int64_t c : code_points.to_vector<int64_t>()) {
    OX_CHECK(c > previous, Value, "Vocabulary", "code points must strictly increase: ", c,
             " after ", previous);
    OX_CHECK(c <= 0x10FFFF && is_scalar_value(char32_t(c)), Value, "Vocabulary", "code point ", c,
             " is not a Unicode scalar value");
    vocab.code_points_.push_back(char32_t(c));
    previous = c;
  }
  return vocab;
}

Tensor Vocabulary::encode(std::string_view utf8) const {
  const std::vector<char32_t> chars = decode_utf8(utf8, "Vocabulary::encode", "text");
  std::vector<int64_t> ids;
  ids.reserve(chars.size());
  for (char32_t c : chars) {
    const auto it = std::lower_bound(code_points_.begin(), code_points_.end(), c);
    OX_CHECK(it != code_points_.end() && *it == c, Value, "Vocabulary::encode", "character U+",
             std::hex, uint32_t(c), std::dec, " is not in the vocabulary of ", size(),
             " characters");
    ids.push_back(int64_t(it - code_points_.begin()));
  }
  return tensor(ids, {int64_t(ids.size())});
}

std::string Vocabulary::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    OX_CHECK(id >= 0 && id < size(), Index, "Vocabulary::decode", "id ", id,
             " is out of range for a vocabulary of ", size(), " characters");
    append_utf8(out, code_points_[size_t(id)]);
  }
  return out;
}

std::string Vocabulary::decode(const Tensor& ids) const {
  OX_CHECK(ids.defined() && ids.dim() <= 1 && is_integral(ids.dtype()), Value, "Vocabulary::decode",
           "needs a 0-d or 1-d integer tensor of ids");
  return decode(ids.to_vector<int64_t>());
}

Tensor Vocabulary::to_tensor() const {
  std::vector<int32_t> values(code_points_.begin(), code_points_.end());
  return tensor(values, {size()});
}

namespace {

// The file's bytes; stat first (a FIFO would block the open, a folder or device read nonsense),
// and no more than the size it gave.
std::string read_text(const std::string& source) {
  const uint64_t size = detail::require_regular_file(source, "TextDataset");
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(source.c_str(), "rb"), &std::fclose);
  OX_CHECK(file != nullptr, Io, "TextDataset", "cannot open ", source, ": ", std::strerror(errno));
  // /proc and /sys report 0 bytes for what reading them gives.
  if (size == 0) return detail::read_to_end(fileno(file.get()), source, "TextDataset");
  std::string text(size_t(size), '\0');
  size_t got = 0;
  while (got < text.size()) {
    const size_t n = std::fread(text.data() + got, 1, text.size() - got, file.get());
    if (n == 0) break;
    got += n;
  }
  OX_CHECK(!std::ferror(file.get()), Io, "TextDataset", "error reading ", source);
  text.resize(got);
  return text;
}

}  // namespace

TextDataset::TextDataset(const std::filesystem::path& path, int64_t context) : context_(context) {
  OX_CHECK(context >= 1, Value, "TextDataset", "context must be >= 1, got ", context);
  try {
    load(path.string());
  } catch (const std::bad_alloc&) {
    OX_FAIL(OutOfMemory, "TextDataset", path.string(), ": not enough memory to read it");
  }
}

void TextDataset::load(const std::string& source) {
  const std::string text = read_text(source);
  const std::vector<char32_t> chars = decode_utf8(text, "TextDataset", source);
  OX_CHECK(int64_t(chars.size()) > context_, Value, "TextDataset", source, " has ", chars.size(),
           " characters, fewer than context + 1 = ", context_ + 1);
  std::vector<char32_t> sorted = chars;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<int64_t> ids;
  ids.reserve(chars.size());
  for (char32_t c : chars)
    ids.push_back(int64_t(std::lower_bound(sorted.begin(), sorted.end(), c) - sorted.begin()));
  std::vector<int32_t> points(sorted.begin(), sorted.end());
  vocabulary_ = Vocabulary::from_tensor(tensor(points, {int64_t(points.size())}));
  ids_ = tensor(ids, {int64_t(ids.size())});
}

int64_t TextDataset::size() const { return ids_.size(0) - context_; }

Example TextDataset::get(int64_t index) const {
  OX_CHECK(index >= 0 && index < size(), Index, "TextDataset", "index ", index,
           " is out of range for a dataset of ", size(), " examples");
  return {ids_.narrow(0, index, context_), ids_.narrow(0, index + 1, context_)};
}

}  // namespace ox::data
