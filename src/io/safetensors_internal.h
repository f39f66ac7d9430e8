#pragma once
// What checkpoint.cpp needs of safetensors.cpp beyond the public API.

#include <map>
#include <string>
#include <string_view>

#include "oxmera/io/safetensors.h"

namespace ox::io {

// save_safetensors, with the CRC32C of every tensor's bytes added to the metadata under
// kSafetensorsChecksumKey (computed from the very bytes written).
void save_safetensors_with_checksums(const std::string& path, const TensorDict& tensors,
                                     const std::map<std::string, std::string>& metadata);

// A Format error naming `op`, the file and the tensor, unless every tensor either matches its
// checksum or the file has no checksums at all. A tensor without one in a file that has them
// is refused too: the file was changed after it was written.
void require_checksums_match(const SafetensorsFile& file, std::string_view op);

}  // namespace ox::io
