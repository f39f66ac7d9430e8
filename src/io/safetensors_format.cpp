#include "io/safetensors_format.h"

#include <algorithm>
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
[[noreturn]] void fail(std::string_view source, const Args&... args) {
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
    fail(source, "dtype of tensor '", tensor, "' is not a string: ", shown(value));
  const auto& name = value.get_ref<const std::string&>();
  for (const DTypeName& known : kDTypeNames)
    if (known.name == name) return known.dtype;
  for (std::string_view foreign : kForeignDTypes)
    if (foreign == name)
      OX_FAIL(DType, "safetensors", source, ": tensor '", tensor, "' has dtype ", name,
              ", which oxmera does not support");
  fail(source, "tensor '", tensor, "' has unknown dtype ", shown(value));
}

std::vector<int64_t> parse_shape(const Json& value, std::string_view source,
                                 const std::string& tensor) {
  if (!value.is_array())
    fail(source, "shape of tensor '", tensor, "' is not an array: ", shown(value));
  std::vector<int64_t> shape;
  shape.reserve(value.size());
  for (const Json& dim : value) {
    if (dim.is_number_integer() && !dim.is_number_unsigned() && dim.get<int64_t>() < 0)
      fail(source, "shape of tensor '", tensor, "' has negative dim ", dim.get<int64_t>());
    if (!dim.is_number_unsigned())
      fail(source, "shape of tensor '", tensor, "' has non-integer dim ", shown(dim));
    const uint64_t size = dim.get<uint64_t>();
    if (size > static_cast<uint64_t>(INT64_MAX))
      fail(source, "shape of tensor '", tensor, "' has dim ", size, ", more than int64 holds");
    shape.push_back(static_cast<int64_t>(size));
  }
  return shape;
}

std::pair<uint64_t, uint64_t> parse_offsets(const Json& value, std::string_view source,
                                            const std::string& tensor) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_unsigned() ||
      !value[1].is_number_unsigned())
    fail(source, "data_offsets of tensor '", tensor,
         "' are not two non-negative integers: ", shown(value));
  const uint64_t begin = value[0].get<uint64_t>(), end = value[1].get<uint64_t>();
  if (end < begin)
    fail(source, "data_offsets [", begin, ", ", end, "] of tensor '", tensor,
         "' end before they begin");
  return {begin, end};
}

SafetensorsEntry parse_entry(const std::string& name, const Json& value, std::string_view source) {
  if (!value.is_object())
    fail(source, "entry of tensor '", name, "' is not an object: ", shown(value));
  for (const char* field : {"dtype", "shape", "data_offsets"})
    if (!value.contains(field)) fail(source, "tensor '", name, "' has no \"", field, "\"");
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
      fail(source, "tensor '", name, "' of shape ", shape_text(entry.shape),
           " has more bytes than 64 bits count");
  uint64_t nbytes = dtype_size(entry.dtype);
  for (int64_t dim : entry.shape)
    if (__builtin_mul_overflow(nbytes, static_cast<uint64_t>(dim), &nbytes))
      fail(source, "tensor '", name, "' of shape ", shape_text(entry.shape),
           " has more bytes than 64 bits count");
  if (nbytes != entry.end - entry.begin)
    fail(source, "tensor '", name, "' (", safetensors_dtype_name(entry.dtype), ", shape ",
         shape_text(entry.shape), ") needs ", nbytes, " bytes but data_offsets [", entry.begin,
         ", ", entry.end, "] hold ", entry.end - entry.begin);
  return entry;
}

std::map<std::string, std::string> parse_metadata(const Json& value, std::string_view source) {
  if (!value.is_object()) fail(source, "__metadata__ is not an object: ", shown(value));
  std::map<std::string, std::string> metadata;
  for (const auto& [key, item] : value.items()) {
    if (!item.is_string())
      fail(source, "__metadata__ value of key '", key, "' is not a string: ", shown(item));
    metadata.emplace(key, item.get<std::string>());
  }
  return metadata;
}

// nlohmann::json keeps one of two equal keys silently; this parser callback refuses them, and
// refuses nesting deeper than a header ever has (object > entry > shape), which also bounds
// the work a hostile header can cause.
class StrictKeys {
 public:
  explicit StrictKeys(std::string_view source) : source_(source) {}
  bool operator()(int, nlohmann::json::parse_event_t event, Json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start:
      case Event::array_start:
        if (++depth_ > 3) fail(source_, "header nests deeper than a safetensors header can");
        open_.push_back(event == Event::object_start);
        if (event == Event::object_start) keys_.emplace_back();
        break;
      case Event::object_end:
      case Event::array_end:
        --depth_;
        if (open_.back()) keys_.pop_back();
        open_.pop_back();
        break;
      case Event::key: {
        const auto& key = parsed.get_ref<const std::string&>();
        if (depth_ == 1) top_key_ = key;
        if (!keys_.back().insert(key).second) {
          if (depth_ == 1) fail(source_, "duplicate entry '", key, "' in the header");
          fail(source_, "duplicate key '", key, "' inside entry '", top_key_, "'");
        }
        break;
      }
      case Event::value:
        break;
    }
    return true;
  }

 private:
  std::string_view source_;
  int depth_ = 0;
  std::vector<bool> open_;  // per open container: whether it is an object
  std::vector<std::unordered_set<std::string>> keys_;
  std::string top_key_;
};

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

SafetensorsHeader parse_safetensors(const uint8_t* bytes, size_t size, std::string_view source) {
  if (size < 8) fail(source, "file of ", size, " bytes is shorter than the 8-byte header length");
  uint64_t header_length = 0;
  for (int i = 7; i >= 0; --i) header_length = (header_length << 8) | bytes[i];
  if (header_length > kMaxSafetensorsHeader)
    fail(source, "header length ", header_length, " exceeds the limit of ", kMaxSafetensorsHeader,
         " bytes");
  if (header_length > size - 8)
    fail(source, "header length ", header_length, " runs past the end of the file (", size,
         " bytes)");

  const std::string_view text(reinterpret_cast<const char*>(bytes + 8), header_length);
  if (!is_valid_utf8(text)) fail(source, "header is not valid UTF-8");
  Json root;
  try {
    root = Json::parse(text.begin(), text.end(), StrictKeys(source));
  } catch (const Json::exception& e) {
    fail(source, "header is not valid JSON: ", e.what());
  }
  if (!root.is_object()) fail(source, "header is not a JSON object but ", root.type_name());

  SafetensorsHeader header;
  header.data_start = 8 + header_length;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      header.metadata = parse_metadata(value, source);
    } else {
      header.entries.push_back(parse_entry(key, value, source));
    }
  }

  std::sort(header.entries.begin(), header.entries.end(), [](const auto& a, const auto& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  const uint64_t buffer = size - header.data_start;
  uint64_t reached = 0;
  for (size_t i = 0; i < header.entries.size(); ++i) {
    const SafetensorsEntry& entry = header.entries[i];
    if (i == 0 && entry.begin != 0)
      fail(source, "data does not start at offset 0: the first tensor '", entry.name,
           "' begins at ", entry.begin);
    if (i > 0 && entry.begin < reached)
      fail(source, "tensor '", entry.name, "' at [", entry.begin, ", ", entry.end,
           ") overlaps tensor '", header.entries[i - 1].name, "' ending at ", reached);
    if (entry.begin > reached)
      fail(source, "hole of ", entry.begin - reached, " bytes before tensor '", entry.name,
           "' at offset ", entry.begin);
    if (entry.end > buffer)
      fail(source, "tensor '", entry.name, "' at [", entry.begin, ", ", entry.end,
           ") runs past the end of the data buffer (", buffer, " bytes)");
    reached = entry.end;
  }
  if (reached < buffer) {
    if (header.entries.empty()) fail(source, buffer, " bytes of data after a header of no tensors");
    fail(source, buffer - reached, " bytes after the last tensor '", header.entries.back().name,
         "'");
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
