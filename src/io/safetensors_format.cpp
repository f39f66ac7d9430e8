#include "io/safetensors_format.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <tuple>
#include <unordered_set>

#include "oxmera/core/error.h"

namespace ox::io {
namespace {

using Json = nlohmann::json;

// Every parse error names the file first; the tensor follows in the message itself.
template <class... Args>
[[noreturn]] void fail_safetensors(std::string_view source, const Args&... args) {
  OX_FAIL(Format, "safetensors", source, ": ", args...);
}

// A JSON value for an error message, cut short so a hostile header cannot make it huge.
std::string shown(const Json& value) {
  std::string text = value.dump(-1, ' ', /*ensure_ascii=*/true, Json::error_handler_t::replace);
  if (text.size() > 64) text = text.substr(0, 61) + "...";
  return text;
}

// Shape text for messages, without core's Dims (the fuzz target compiles only this file).
std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  text += ']';
  return text;
}

struct DTypeName {
  std::string_view name;
  DType dtype;
};
constexpr DTypeName kDTypeNames[] = {
    {"F64", kF64}, {"F32", kF32}, {"F16", kF16}, {"BF16", kBF16}, {"I64", kI64},
    {"I32", kI32}, {"I16", kI16}, {"I8", kI8},   {"U8", kU8},     {"BOOL", kBool},
};
// Dtypes the format defines that oxmera has no tensors of: refused as DType errors, unlike
// names the format does not define at all (Format errors).
constexpr std::string_view kForeignDTypes[] = {
    "U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3", "F6_E3M2", "F4", "C64",
};

DType parse_dtype_name(const Json& value, std::string_view source, const std::string& tensor) {
  if (!value.is_string())
    fail_safetensors(source, "dtype of tensor '", tensor, "' is not a string: ", shown(value));
  const auto& name = value.get_ref<const std::string&>();
  for (const DTypeName& known : kDTypeNames)
    if (known.name == name) return known.dtype;
  for (std::string_view foreign : kForeignDTypes)
    if (foreign == name)
      OX_FAIL(DType, "safetensors", source, ": tensor '", tensor, "' has dtype ", name,
              ", which oxmera does not support");
  fail_safetensors(source, "tensor '", tensor, "' has unknown dtype ", shown(value));
}

std::vector<int64_t> parse_shape(const Json& value, std::string_view source,
                                 const std::string& tensor) {
  if (!value.is_array())
    fail_safetensors(source, "shape of tensor '", tensor, "' is not an array: ", shown(value));
  std::vector<int64_t> shape;
  shape.reserve(value.size());
  for (const Json& dim : value) {
    if (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<int64_t>() < 0)
      fail_safetensors(source, "shape of tensor '", tensor, "' has negative dim ",
                       dim.get<int64_t>());
    if (!dim.is_number_unsigned())
      fail_safetensors(source, "shape of tensor '", tensor, "' has non-integer dim ", shown(dim));
    const uint64_t size = dim.get<uint64_t>();
    if (size > static_cast<uint64_t>(INT64_MAX))
      fail_safetensors(source, "shape of tensor '", tensor, "' has dim ", size,
                       ", more than int64 holds");
    shape.push_back(static_cast<int64_t>(size));
  }
  return shape;
}

std::pair<uint64_t, uint64_t> parse_offsets(const Json& value, std::string_view source,
                                            const std::string& tensor) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_unsigned() ||
      !value[1].is_number_unsigned())
    fail_safetensors(source, "data_offsets of tensor '", tensor,
                     "' are not two non-negative integers: ", shown(value));
  const uint64_t begin = value[0].get<uint64_t>(), end = value[1].get<uint64_t>();
  if (end < begin)
    fail_safetensors(source, "data_offsets [", begin, ", ", end, "] of tensor '", tensor,
                     "' end before they begin");
  return {begin, end};
}

SafetensorsEntry parse_entry(const std::string& name, const Json& value, std::string_view source) {
  if (!value.is_object())
    fail_safetensors(source, "entry of tensor '", name, "' is not an object: ", shown(value));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field))
      fail_safetensors(source, "tensor '", name, "' has no \"", field, "\"");
  SafetensorsEntry entry;
  entry.name = name;
  entry.dtype = parse_dtype_name(value["dtype"], source, name);
  entry.shape = parse_shape(value["shape"], source, name);
  std::tie(entry.begin, entry.end) = parse_offsets(value["data_offsets"], source, name);

  // The extent without the zero dims must fit too: a zero-size tensor of shape
  // [0, 2^62, 2^62] holds no bytes, but its strides would not fit in 64 bits.
  uint64_t extent = dtype_size(entry.dtype);
  for (int64_t dim : entry.shape)
    if (dim != 0 && (__builtin_mul_overflow(extent, static_cast<uint64_t>(dim), &extent) ||
                     extent > uint64_t(INT64_MAX)))
      fail_safetensors(source, "tensor '", name, "' of shape ", shape_text(entry.shape),
                       " has more bytes than 64 bits count");
  uint64_t nbytes = dtype_size(entry.dtype);
  for (int64_t dim : entry.shape)
    if (__builtin_mul_overflow(nbytes, static_cast<uint64_t>(dim), &nbytes))
      fail_safetensors(source, "tensor '", name, "' of shape ", shape_text(entry.shape),
                       " has more bytes than 64 bits count");
  if (nbytes != entry.end - entry.begin)
    fail_safetensors(source, "tensor '", name, "' (", safetensors_dtype_name(entry.dtype),
                     ", shape ", shape_text(entry.shape), ") needs ", nbytes,
                     " bytes but data_offsets [", entry.begin, ", ", entry.end, "] hold ",
                     entry.end - entry.begin);
  return entry;
}

std::map<std::string, std::string> parse_metadata(const Json& value, std::string_view source) {
  if (!value.is_object()) fail_safetensors(source, "__metadata__ is not an object: ", shown(value));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      fail_safetensors(source, "__metadata__ value of key '", key,
                       "' is not a string: ", shown(item));
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

// Builds the header in one pass of nlohmann's SAX parser: each top-level member's value becomes
// a small Json of its own, checked as soon as it closes (parse_entry, parse_metadata) and then
// dropped, so memory follows the entries, not a DOM of the whole header. It also refuses what
// nlohmann::json would accept silently: a repeated key (the DOM keeps one), nesting deeper than
// a header ever has (object > entry > shape), more than kMaxSafetensorsEntries entries. (The DOM
// parser with a callback, used before, rescans the parent object at every object's end: a
// header of n entries cost O(n^2), 30 s for 20,000.)
class HeaderSax {
 public:
  HeaderSax(std::string_view source, SafetensorsHeader& header, size_t max_entries)
      : source_(source), header_(header), max_entries_(max_entries) {}

  bool null() { return value(Json(nullptr)); }
  bool boolean(bool v) { return value(Json(v)); }
  bool number_integer(Json::number_integer_t v) { return value(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return value(Json(v)); }
  bool number_float(Json::number_float_t v, const std::string&) { return value(Json(v)); }
  bool string(std::string& v) { return value(Json(std::move(v))); }
  bool binary(Json::binary_t&) {
    fail_safetensors(source_, "header holds binary data, which JSON cannot");
  }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& key);
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& e) {
    fail_safetensors(source_, "header is not valid JSON: ", e.what());
  }
  // After the parse: the root was an object (a Format error naming what it was otherwise).
  void require_object_root() const {
    if (!root_type_.empty())
      fail_safetensors(source_, "header is not a JSON object but ", root_type_);
  }

 private:
  bool open(Json container);
  bool close();
  bool value(Json v);
  Json* insert(Json v);  // into the innermost open container of the member being built
  void member(const std::string& key, const Json& value);

  std::string_view source_;
  SafetensorsHeader& header_;
  size_t max_entries_;
  int depth_ = 0;                                      // open containers, the root included
  std::vector<bool> is_object_;                        // per open container
  std::vector<std::unordered_set<std::string>> keys_;  // per open object below the root
  std::string member_key_;                             // the top-level key being read
  Json member_;                                        // its value, while it is a container
  std::vector<Json*> stack_;                           // open containers inside member_
  std::string inner_key_;                              // the last key inside member_
  size_t entries_ = 0;
  std::string root_type_;  // set when the root is not an object: parsed on, refused at the end
  bool seen_metadata_ = false;
};

// Keys inside an entry are checked for repeats here (a handful per object); the top-level
// names are checked once at the end (require_unique_names), by sorting: a hash set of a
// million names cost a third of the parse in cache misses.
bool HeaderSax::key(std::string& key) {
  if (depth_ > 1 || !root_type_.empty()) {
    if (!keys_.back().insert(key).second)
      fail_safetensors(source_, "duplicate key '", key, "' inside entry '", member_key_, "'");
    inner_key_ = std::move(key);
    return true;
  }
  if (key == "__metadata__") {
    if (seen_metadata_) fail_safetensors(source_, "duplicate entry '", key, "' in the header");
    seen_metadata_ = true;
  } else if (++entries_ > max_entries_) {
    fail_safetensors(source_, "header lists more than ", max_entries_,
                     " tensors, the most oxmera reads from one file");
  }
  member_key_ = std::move(key);
  return true;
}

bool HeaderSax::open(Json container) {
  const bool object = container.is_object();
  if (depth_ == 0 && !object) root_type_ = container.type_name();
  if (++depth_ > 3) fail_safetensors(source_, "header nests deeper than a safetensors header can");
  is_object_.push_back(object);
  if (object && depth_ > 1) keys_.emplace_back();  // the root's are checked at the end
  if (!root_type_.empty()) return true;            // only checked for depth and keys
  if (depth_ == 2) {
    member_ = std::move(container);
    stack_.assign(1, &member_);
  } else if (depth_ > 2) {
    stack_.push_back(insert(std::move(container)));
  }
  return true;
}

bool HeaderSax::close() {
  if (is_object_.back() && depth_ > 1) keys_.pop_back();
  is_object_.pop_back();
  if (!root_type_.empty()) {
    // nothing is built
  } else if (depth_ == 2) {
    member(member_key_, member_);
    member_ = Json();
    stack_.clear();
  } else if (depth_ > 2) {
    stack_.pop_back();
  }
  --depth_;
  return true;
}

bool HeaderSax::value(Json v) {
  if (depth_ == 0) root_type_ = v.type_name();
  if (!root_type_.empty()) return true;
  if (depth_ == 1)
    member(member_key_, v);
  else
    insert(std::move(v));
  return true;
}

Json* HeaderSax::insert(Json v) {
  Json& parent = *stack_.back();
  if (parent.is_object()) {
    Json& slot = parent[inner_key_];
    slot = std::move(v);
    return &slot;
  }
  parent.push_back(std::move(v));
  return &parent.back();  // valid until the parent grows, which waits for this one to close
}

void HeaderSax::member(const std::string& key, const Json& value) {
  if (key == "__metadata__")
    header_.metadata = parse_metadata(value, source_);
  else
    header_.entries.push_back(parse_entry(key, value, source_));
}

// serde_json's escaping: the two mandatory escapes, short forms for common control bytes,
// \u00XX for the rest; everything else (UTF-8 included) as is.
void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xF];
          out += kHex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  for (const DTypeName& known : kDTypeNames)
    if (known.dtype == dtype) return known.name;
  OX_ASSERT(false, "dtype without a safetensors name");
  return {};
}

bool is_valid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t length;
    uint32_t code;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2, code = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3, code = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4, code = c & 0x07;
    } else {
      return false;
    }
    if (n - i < length) return false;
    for (size_t k = 1; k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return false;
      code = (code << 6) | (s[i + k] & 0x3F);
    }
    if ((length == 3 && code < 0x800) || (length == 4 && code < 0x10000) || code > 0x10FFFF ||
        (code >= 0xD800 && code <= 0xDFFF))
      return false;
    i += length;
  }
  return true;
}

namespace {

void require_unique_names(const std::vector<SafetensorsEntry>& entries, std::string_view source) {
  std::vector<const std::string*> names;
  names.reserve(entries.size());
  for (const SafetensorsEntry& entry : entries) names.push_back(&entry.name);
  std::sort(names.begin(), names.end(),
            [](const std::string* a, const std::string* b) { return *a < *b; });
  const auto twice =
      std::adjacent_find(names.begin(), names.end(),
                         [](const std::string* a, const std::string* b) { return *a == *b; });
  if (twice != names.end())
    fail_safetensors(source, "duplicate entry '", **twice, "' in the header");
}

}  // namespace

SafetensorsHeader parse_safetensors(const uint8_t* bytes, size_t size, std::string_view source,
                                    size_t max_entries) {
  if (size < 8)
    fail_safetensors(source, "file of ", size, " bytes is shorter than the 8-byte header length");
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | bytes[i];
  if (header_length > kMaxSafetensorsHeader)
    fail_safetensors(source, "header length ", header_length, " exceeds the limit of ",
                     kMaxSafetensorsHeader, " bytes");
  if (header_length > size - 8)
    fail_safetensors(source, "header length ", header_length, " runs past the end of the file (",
                     size, " bytes)");

  const std::string_view text(reinterpret_cast<const char*>(bytes + 8), header_length);
  if (!is_valid_utf8(text)) fail_safetensors(source, "header is not valid UTF-8");
  SafetensorsHeader header;
  header.data_start = 8 + header_length;
  HeaderSax sax(source, header, max_entries);
  try {
    Json::sax_parse(text.begin(), text.end(), &sax);
  } catch (const Json::exception& e) {
    fail_safetensors(source, "header is not valid JSON: ", e.what());
  }
  sax.require_object_root();
  require_unique_names(header.entries, source);

  std::sort(header.entries.begin(), header.entries.end(), [](const auto& a, const auto& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  const uint64_t buffer = size - header.data_start;
  uint64_t reached = 0;
  for (size_t i = 0; i < header.entries.size(); ++i) {
    const SafetensorsEntry& entry = header.entries[i];
    if (i == 0 && entry.begin != 0)
      fail_safetensors(source, "data does not start at offset 0: the first tensor '", entry.name,
                       "' begins at ", entry.begin);
    if (i > 0 && entry.begin < reached)
      fail_safetensors(source, "tensor '", entry.name, "' at [", entry.begin, ", ", entry.end,
                       ") overlaps tensor '", header.entries[i - 1].name, "' ending at ", reached);
    if (entry.begin > reached)
      fail_safetensors(source, "hole of ", entry.begin - reached, " bytes before tensor '",
                       entry.name, "' at offset ", entry.begin);
    if (entry.end > buffer)
      fail_safetensors(source, "tensor '", entry.name, "' at [", entry.begin, ", ", entry.end,
                       ") runs past the end of the data buffer (", buffer, " bytes)");
    reached = entry.end;
  }
  if (reached < buffer) {
    if (header.entries.empty())
      fail_safetensors(source, buffer, " bytes of data after a header of no tensors");
    fail_safetensors(source, buffer - reached, " bytes after the last tensor '",
                     header.entries.back().name, "'");
  }
  return header;
}

std::string build_safetensors_header(const std::vector<SafetensorsEntry>& entries,
                                     const std::map<std::string, std::string>& metadata) {
  std::string out = "{";
  if (!metadata.empty()) {
    out += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
      OX_CHECK(is_valid_utf8(key) && is_valid_utf8(value), Value, "save_safetensors",
               "metadata key '", key, "' or its value is not valid UTF-8");
      if (!first) out += ',';
      first = false;
      append_json_string(out, key);
      out += ':';
      append_json_string(out, value);
    }
    out += "}";
  }
  uint64_t reached = 0;
  for (const SafetensorsEntry& entry : entries) {
    OX_CHECK(is_valid_utf8(entry.name), Value, "save_safetensors", "tensor name '", entry.name,
             "' is not valid UTF-8");
    OX_CHECK(entry.name != "__metadata__", Value, "save_safetensors",
             "a tensor cannot be named '__metadata__' (the format reserves it)");
    OX_ASSERT(entry.begin == reached && entry.end >= entry.begin, "entries out of data order");
    reached = entry.end;
    if (out.size() > 1) out += ',';
    append_json_string(out, entry.name);
    out += ":{\"dtype\":\"";
    out += safetensors_dtype_name(entry.dtype);
    out += "\",\"shape\":[";
    for (size_t i = 0; i < entry.shape.size(); ++i) {
      if (i > 0) out += ',';
      out += std::to_string(entry.shape[i]);
    }
    out += "],\"data_offsets\":[";
    out += std::to_string(entry.begin);
    out += ',';
    out += std::to_string(entry.end);
    out += "]}";
  }
  out += '}';
  out.append((8 - out.size() % 8) % 8, ' ');
  return out;
}

}  // namespace ox::io

namespace ox::io {

std::string build_checksums(const std::vector<std::pair<std::string, uint32_t>>& sums) {
  std::string out = "{";
  for (const auto& [name, crc] : sums) {
    OX_CHECK(is_valid_utf8(name), Value, "save_safetensors", "tensor name '", name,
             "' is not valid UTF-8");
    if (out.size() > 1) out += ',';
    append_json_string(out, name);
    char hex[12];
    std::snprintf(hex, sizeof(hex), ":\"%08x\"", crc);
    out += hex;
  }
  out += '}';
  return out;
}

std::unordered_map<std::string, uint32_t> parse_checksums(std::string_view text,
                                                          std::string_view source) {
  const auto malformed = [&](const auto&... why) {
    fail_safetensors(source, "metadata '", kChecksumKey, "' is malformed: ", why...);
  };
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    malformed("not JSON (", e.what(), ")");
  }
  if (!root.is_object()) malformed("not a JSON object");
  std::unordered_map<std::string, uint32_t> sums;
  sums.reserve(root.size());
  for (const auto& [name, value] : root.items()) {
    const auto* hex = value.get_ptr<const std::string*>();
    const bool digits =
        hex != nullptr && hex->size() == 8 && std::all_of(hex->begin(), hex->end(), [](char c) {
          return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        });
    if (!digits) malformed("the checksum of tensor '", name, "' is not 8 hex digits");
    sums.emplace(name, static_cast<uint32_t>(std::stoul(*hex, nullptr, 16)));
  }
  return sums;
}

}  // namespace ox::io
