// `oxmera inspect FILE.safetensors|DIR [--stats] [--verify]`: the names, dtypes, shapes, sizes and
// offsets of a weights file, its metadata and totals; --stats adds value statistics per tensor,
// --verify each tensor's checksum (ok, MISMATCH, no checksum; exit 2 on a mismatch). A file that
// does not parse prints its typed error and exits 2. Every text that comes from the file (names,
// metadata, error messages quoting them) is escaped before it reaches the terminal.

#include <oxmera/io/pytorch.h>
#include <oxmera/oxmera.h>

#include <oxmera/tokenizers.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "checks.h"
#include "commands.h"
#include "core/text_util.h"

namespace oxcli {

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s`, or 0 when it is not one
// (a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, cut short).
size_t utf8_length(std::string_view s) {
  const auto c = static_cast<unsigned char>(s[0]);
  size_t n = 0;
  uint32_t code = 0;
  if (c >= 0xC2 && c <= 0xDF)
    n = 2, code = c & 0x1F;
  else if (c >= 0xE0 && c <= 0xEF)
    n = 3, code = c & 0x0F;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 4, code = c & 0x07;
  else
    return 0;
  if (s.size() < n) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = static_cast<unsigned char>(s[k]);
    if ((b & 0xC0) != 0x80) return 0;
    code = (code << 6) | (b & 0x3F);
  }
  const bool overlong = (n == 3 && code < 0x800) || (n == 4 && code < 0x10000);
  if (overlong || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return n;
}

void append_hex(std::string& out, unsigned char byte) {
  constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 0xF];
}

}  // namespace

// Text from the file made safe for a terminal: control characters (C0, DEL, and the C1 range
// U+0080..U+009F, which some terminals obey as escape sequences) and bytes that are not UTF-8
// become \n, \r, \t or \xNN; a backslash doubles, so the escaped form is unambiguous.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const auto c = static_cast<unsigned char>(text[0]);
    size_t used = 1;
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      append_hex(out, c);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else if ((used = utf8_length(text)) == 0) {
      used = 1;
      append_hex(out, c);  // not UTF-8: each such byte on its own
    } else if (c == 0xC2 && static_cast<unsigned char>(text[1]) < 0xA0) {
      append_hex(out, c);  // a C1 control character
      append_hex(out, static_cast<unsigned char>(text[1]));
    } else {
      out.append(text.substr(0, used));
    }
    text.remove_prefix(used);
  }
  return out;
}

namespace {

// Columns are padded by bytes; escaped text is ASCII except for UTF-8 it kept, which counts
// one column per code point.
size_t columns(std::string_view text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

std::string padded(const std::string& text, size_t width) {
  const size_t used = columns(text);
  return used >= width ? text : text + std::string(width - used, ' ');
}

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof(text), "%08x", value);
  return text;
}

std::string checksum_text(const ox::TensorChecksum& c) {
  switch (c.status) {
    case ox::TensorChecksum::Status::Ok:
      return "ok";
    case ox::TensorChecksum::Status::Mismatch:
      return "MISMATCH (stored " + hex32(c.stored) + ", computed " + hex32(c.computed) + ")";
    case ox::TensorChecksum::Status::Missing:
      break;
  }
  return "no checksum";
}

std::string shape_text(const ox::Shape& shape) {
  std::ostringstream out;
  out << shape;
  return out.str();
}

std::string bytes_text(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  std::ostringstream out;
  if (unit == 0)
    out << bytes << " B";
  else
    out << std::fixed << std::setprecision(1) << value << " " << units[unit];
  return out.str();
}

// min, max, mean and std of the finite values, and the NaN and Inf counts, in f64.
std::string stats_text(const ox::Tensor& t) {
  if (t.numel() == 0) return "empty";
  const ox::Tensor x = t.dtype() == ox::kBool ? t.to(ox::kU8).to(ox::kF64) : t.to(ox::kF64);
  const int64_t nan = ox::isnan(x).sum().item<int64_t>();
  const int64_t inf = ox::isinf(x).sum().item<int64_t>();
  const ox::Tensor finite = ox::masked_select(x, ox::isfinite(x));
  std::ostringstream out;
  out << std::setprecision(6);
  if (finite.numel() > 0) {
    out << "min " << finite.min().item<double>() << "  max " << finite.max().item<double>()
        << "  mean " << finite.mean().item<double>() << "  std "
        << (finite.numel() > 1 ? finite.std().item<double>() : 0.0);
  } else {
    out << "no finite values";
  }
  out << "  nan " << nan << "  inf " << inf;
  return out.str();
}

}  // namespace

namespace {

struct InspectOptions {
  std::string path;
  bool stats = false;
  bool verify = false;
};

// A PyTorch checkpoint: its tensors (as load_pytorch names them) with their storages, strides
// and offsets, and the non-tensor entries it skips.
int inspect_pytorch(const InspectOptions& o) {
  const ox::PytorchFileInfo info = ox::inspect_pytorch(o.path);
  std::vector<std::string> names;
  size_t name_width = 4, shape_width = 5;
  for (const ox::PytorchTensorInfo& t : info.tensors) {
    names.push_back(printable(t.name));
    name_width = std::max(name_width, columns(names.back()));
    shape_width = std::max(shape_width, shape_text(t.shape).size());
  }
  std::cout << printable(o.path) << ": PyTorch checkpoint (" << info.format << " format), "
            << info.tensors.size() << " tensors\n";
  std::cout << padded("name", name_width) << "  " << std::left << std::setw(5) << "dtype"
            << "  " << std::setw(int(shape_width)) << "shape"
            << "  " << std::setw(10) << "bytes"
            << "  storage\n";
  const ox::TensorDict tensors = o.stats ? ox::load_pytorch(o.path) : ox::TensorDict{};
  int64_t total_elements = 0;
  for (size_t i = 0; i < info.tensors.size(); ++i) {
    const ox::PytorchTensorInfo& t = info.tensors[i];
    int64_t elements = 1;
    for (int64_t d : t.shape) elements *= d;
    total_elements += elements;
    std::ostringstream dtype, where;
    dtype << t.dtype;
    where << "'" << printable(t.storage) << "' offset " << t.storage_offset << " strides "
          << shape_text(t.strides);
    std::cout << padded(names[i], name_width) << "  " << std::left << std::setw(5) << dtype.str()
              << "  " << std::setw(int(shape_width)) << shape_text(t.shape) << "  " << std::setw(10)
              << bytes_text(uint64_t(elements) * ox::dtype_size(t.dtype)) << "  " << where.str()
              << "\n";
    if (o.stats) std::cout << "    " << stats_text(tensors.at(t.name)) << "\n";
  }
  if (!info.skipped.empty()) {
    std::cout << "not tensors (skipped):";
    for (const std::string& s : info.skipped) std::cout << " " << printable(s);
    std::cout << "\n";
  }
  std::cout << "total: " << info.tensors.size() << " tensors, " << total_elements << " elements, "
            << bytes_text(info.storage_bytes) << " of storages\n";
  if (o.verify)
    std::cout << "verify: "
              << (info.format == "zip" ? "every record matched its zip CRC-32"
                                       : "legacy files carry no checksums")
              << "\n";
  return 0;
}

int inspect_folder(const InspectOptions& o);

// The table, metadata and totals; returns the exit code (2 when --verify found a mismatch).
int inspect(const InspectOptions& o) {
  std::error_code ec;
  if (std::filesystem::is_directory(o.path, ec)) return inspect_folder(o);
  if (ox::is_pytorch_file(o.path)) return inspect_pytorch(o);
  const ox::SafetensorsFile file = ox::SafetensorsFile::open(o.path);
  std::vector<ox::TensorChecksum> sums;
  if (o.verify) sums = ox::verify_checksums(file);
  const std::vector<std::string> keys = file.keys();
  std::vector<std::string> names;
  size_t name_width = 4, shape_width = 5;
  for (const std::string& key : keys) {
    names.push_back(printable(key));
    name_width = std::max(name_width, columns(names.back()));
    shape_width = std::max(shape_width, shape_text(file.info(key).shape).size());
  }
  std::cout << printable(o.path) << ": " << file.size() << " tensors\n";
  std::cout << padded("name", name_width) << "  " << std::left << std::setw(5) << "dtype"
            << "  " << std::setw(int(shape_width)) << "shape"
            << "  " << std::setw(10) << "bytes"
            << "  offsets" << (o.verify ? "  checksum" : "") << "\n";
  uint64_t total_bytes = 0;
  int64_t total_elements = 0;
  size_t mismatched = 0, unchecked = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const ox::SafetensorsTensorInfo& info = file.info(keys[i]);
    total_bytes += info.end - info.begin;
    int64_t elements = 1;
    for (int64_t d : info.shape) elements *= d;
    total_elements += elements;
    std::ostringstream dtype, offsets;
    dtype << info.dtype;
    offsets << "[" << info.begin << ", " << info.end << ")";
    std::cout << padded(names[i], name_width) << "  " << std::left << std::setw(5) << dtype.str()
              << "  " << std::setw(int(shape_width)) << shape_text(info.shape) << "  "
              << std::setw(10) << bytes_text(info.end - info.begin) << "  ";
    if (o.verify) {
      std::cout << std::setw(22) << offsets.str() << "  " << checksum_text(sums[i]) << "\n";
      mismatched += sums[i].status == ox::TensorChecksum::Status::Mismatch;
      unchecked += sums[i].status == ox::TensorChecksum::Status::Missing;
    } else {
      std::cout << offsets.str() << "\n";
    }
    if (o.stats) std::cout << "    " << stats_text(file.get(keys[i])) << "\n";
  }
  if (!file.metadata().empty()) {
    std::cout << "metadata:\n";
    for (const auto& [key, value] : file.metadata()) {
      std::cout << "  " << printable(key) << ": ";
      if (key == ox::kSafetensorsChecksumKey)
        std::cout << "(crc32c of each tensor; --verify checks them)\n";
      else
        std::cout << printable(value) << "\n";
    }
  }
  std::cout << "total: " << file.size() << " tensors, " << total_elements << " elements, "
            << bytes_text(total_bytes) << " of data (header " << file.data_start() << " bytes)\n";
  if (!o.verify) return 0;
  std::cout << "verify: " << keys.size() - mismatched - unchecked << " ok, " << mismatched
            << " MISMATCH, " << unchecked << " without a checksum\n";
  return mismatched > 0 ? 2 : 0;
}

// A Hugging Face model folder: config.json's fields, the tokenizer's size, each weight file as
// above, and the parameter count of the safetensors files.
int inspect_folder(const InspectOptions& o) {
  const std::filesystem::path dir(o.path);
  std::ifstream in(dir / "config.json");
  OX_CHECK(in, Io, "inspect", printable(o.path), " is a folder without config.json");
  std::ostringstream text;
  text << in.rdbuf();
  ox::check_json_nesting(text.str(), 64, "inspect", "config.json");
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    OX_FAIL(Format, "inspect", "config.json is not valid JSON: ", e.what());
  }
  OX_CHECK(config.is_object(), Format, "inspect", "config.json is not a JSON object");
  std::cout << printable(o.path) << "/config.json:\n";
  for (const auto& [key, value] : config.items()) {
    std::cout << "  " << printable(key) << ": " << printable(value.dump()) << "\n";
  }
  std::error_code ec;
  if (std::filesystem::exists(dir / "tokenizer.json", ec)) {
    const auto tokenizer = ox::tokenizers::Tokenizer::from_file(dir / "tokenizer.json");
    std::cout << "tokenizer.json: " << tokenizer.vocab_size() << " tokens ("
              << tokenizer.vocab_size(false) << " in the model's vocabulary)\n";
  }
  std::vector<std::filesystem::path> files;
  if (std::filesystem::exists(dir / "model.safetensors", ec)) {
    files.push_back(dir / "model.safetensors");
  } else if (std::filesystem::exists(dir / "pytorch_model.bin", ec)) {
    files.push_back(dir / "pytorch_model.bin");
  }
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("model-") && name.ends_with(".safetensors")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  OX_CHECK(!files.empty(), Io, "inspect", printable(o.path),
           " has no model.safetensors, shards or pytorch_model.bin");
  int code = 0;
  int64_t parameters = 0;
  for (const auto& file : files) {
    std::cout << "\n";
    InspectOptions one = o;
    one.path = file.string();
    code = std::max(code, inspect(one));
    if (file.extension() == ".safetensors") {
      const ox::SafetensorsFile weights = ox::SafetensorsFile::open(file.string());
      for (const std::string& key : weights.keys()) {
        int64_t elements = 1;
        for (int64_t d : weights.info(key).shape) elements *= d;
        parameters += elements;
      }
    }
  }
  if (parameters > 0) std::cout << "\nparameters: " << parameters << "\n";
  return code;
}

}  // namespace

Runner add_inspect(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "what a .safetensors or PyTorch (.pt) file, or a Hugging Face model folder, holds");
  auto options = std::make_shared<InspectOptions>();
  cmd->add_option("file", options->path,
                  "a .safetensors file, a torch.save checkpoint, or a model folder (config.json)")
      ->required();
  cmd->add_flag("--stats", options->stats, "min/max/mean/std and NaN/Inf counts per tensor");
  cmd->add_flag("--verify", options->verify,
                "check each tensor against its stored CRC32C (exit 2 on a mismatch)");
  return [options] {
    try {
      return inspect(*options);
    } catch (const ox::Error& e) {
      std::cout.flush();
      std::fprintf(stderr, "oxmera inspect: %s: %s error: %s\n", printable(options->path).c_str(),
                   ox::error_kind_name(e.kind()), printable(e.what()).c_str());
      return 2;
    }
  };
}

}  // namespace oxcli
