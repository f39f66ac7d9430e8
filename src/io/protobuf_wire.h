#pragma once
// The few pieces of the protobuf wire format the TensorBoard writer needs, appended to a
// std::string: field keys, varints, fixed64 doubles, fixed32 floats and length-delimited bytes.

#include <bit>
#include <cstdint>
#include <string>
#include <string_view>

namespace ox::io::protobuf {

enum class WireType : uint32_t { Varint = 0, Fixed64 = 1, LengthDelimited = 2, Fixed32 = 5 };

inline void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7F) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

inline void append_key(std::string& out, uint32_t field, WireType type) {
  append_varint(out, (uint64_t{field} << 3) | static_cast<uint32_t>(type));
}

inline void append_little_endian(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

// int64 fields are varints of the two's complement bits: a negative value takes 10 bytes.
inline void append_int64(std::string& out, uint32_t field, int64_t value) {
  append_key(out, field, WireType::Varint);
  append_varint(out, static_cast<uint64_t>(value));
}

inline void append_double(std::string& out, uint32_t field, double value) {
  append_key(out, field, WireType::Fixed64);
  append_little_endian(out, std::bit_cast<uint64_t>(value), 8);
}

inline void append_float(std::string& out, uint32_t field, float value) {
  append_key(out, field, WireType::Fixed32);
  append_little_endian(out, std::bit_cast<uint32_t>(value), 4);
}

// A string, bytes, or an embedded message already encoded.
inline void append_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  append_key(out, field, WireType::LengthDelimited);
  append_varint(out, bytes.size());
  out += bytes;
}

}  // namespace ox::io::protobuf
