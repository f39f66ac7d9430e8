// JSON-lines training logs: lines formatted by hand (fixed key order, shortest round-trip
// doubles), read back with nlohmann-json.

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "io/atomic_file.h"
#include "oxmera/core/error.h"
#include "oxmera/io/log.h"

namespace ox::io {
namespace {

constexpr const char* kJsonlLogger = "JsonlLogger";
constexpr const char* kReadOp = "read_jsonl";

constexpr std::array<const char*, 9> kFixedKeys = {
    "type", "step", "epoch", "loss", "lr", "grad_norm", "samples_per_s", "accuracy", "elapsed_s"};

void append_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\u00";
      out += kHex[(c >> 4) & 0xF];
      out += kHex[c & 0xF];
    } else {
      out += c;
    }
  }
  out += '"';
}

void append_double(std::string& out, double value) {
  if (std::isnan(value)) {
    out += "\"NaN\"";
  } else if (std::isinf(value)) {
    out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    char text[32];
    const auto result = std::to_chars(text, text + sizeof(text), value);
    const std::string_view written(text, static_cast<size_t>(result.ptr - text));
    out += written;
    // "1" would read back as an integer and "-0" as 0: mark it a float.
    if (written.find_first_of(".e") == std::string_view::npos) out += ".0";
  }
}

class Line {
 public:
  Line(const char* type, int64_t step, int64_t epoch) {
    text_ = "{\"type\":";
    append_string(text_, type);
    text_ += ",\"step\":" + std::to_string(step) + ",\"epoch\":" + std::to_string(epoch);
  }
  void add(std::string_view key, double value) {
    text_ += ',';
    append_string(text_, key);
    text_ += ':';
    append_double(text_, value);
  }
  void add(std::string_view key, const std::optional<double>& value) {
    if (value) add(key, *value);
  }
  void add_extra(const std::map<std::string, double>& extra) {
    for (const auto& [name, value] : extra) {
      OX_CHECK(!name.empty(), Value, kJsonlLogger, "an extra scalar has an empty name");
      for (const char* fixed : kFixedKeys)
        OX_CHECK(name != fixed, Value, kJsonlLogger, "the extra scalar '", name,
                 "' has the name of a fixed key");
      add(name, value);
    }
  }
  std::string finish() && {
    text_ += "}\n";
    return std::move(text_);
  }

 private:
  std::string text_;
};

}  // namespace

JsonlLogger::JsonlLogger(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
  OX_CHECK(fd_ >= 0, Io, kJsonlLogger, "cannot open '", path,
           "' for appending: ", std::strerror(errno));
}

JsonlLogger::~JsonlLogger() {
  if (fd_ >= 0) ::close(fd_);
}

JsonlLogger::JsonlLogger(JsonlLogger&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

JsonlLogger& JsonlLogger::operator=(JsonlLogger&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void JsonlLogger::log_step(const StepRecord& record) {
  Line line("step", record.step, record.epoch);
  line.add("loss", record.loss);
  line.add("lr", record.lr);
  line.add("grad_norm", record.grad_norm);
  line.add("samples_per_s", record.samples_per_s);
  line.add("elapsed_s", record.elapsed_s);
  line.add_extra(record.extra);
  write_line(std::move(line).finish());
}

void JsonlLogger::log_eval(const EvalRecord& record) {
  Line line("eval", record.step, record.epoch);
  line.add("loss", record.loss);
  line.add("accuracy", record.accuracy);
  line.add("elapsed_s", record.elapsed_s);
  line.add_extra(record.extra);
  write_line(std::move(line).finish());
}

// One write(2) per line on an O_APPEND descriptor: lines from several writers never interleave
// and a crash cuts at most the line being written.
void JsonlLogger::write_line(const std::string& line) {
  OX_CHECK(fd_ >= 0, Value, kJsonlLogger, "the logger was moved from");
  write_all(fd_, line.data(), line.size(), path_, kJsonlLogger);
}

void JsonlLogger::flush() {
  OX_CHECK(fd_ >= 0, Value, kJsonlLogger, "the logger was moved from");
  OX_CHECK(::fsync(fd_) == 0, Io, kJsonlLogger, "cannot fsync '", path_,
           "': ", std::strerror(errno));
}

namespace {

[[noreturn]] void fail_line(const std::string& path, int64_t line, const std::string& message) {
  OX_FAIL(Format, kReadOp, path, ":", line, ": ", message);
}

int64_t integer_field(const nlohmann::json& object, const char* key, const std::string& path,
                      int64_t line) {
  const auto found = object.find(key);
  if (found == object.end()) fail_line(path, line, std::string("no \"") + key + "\" key");
  if (!found->is_number_integer() ||
      (found->is_number_unsigned() && found->get<uint64_t>() > uint64_t{INT64_MAX}))
    fail_line(path, line, std::string("\"") + key + "\" is not a 64-bit integer: " + found->dump());
  return found->get<int64_t>();
}

double scalar_value(const nlohmann::json& value, const std::string& key, const std::string& path,
                    int64_t line) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text == "NaN") return std::nan("");
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  fail_line(path, line, "\"" + key + "\" is not a number: " + value.dump());
}

// A log line is one flat object: nlohmann-json would keep one of two equal keys silently, and
// nesting has no meaning here (refusing it also bounds the work a hostile line causes).
class FlatObjectKeys {
 public:
  FlatObjectKeys(const std::string& path, int64_t line) : path_(path), line_(line) {}
  bool operator()(int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start || event == Event::array_start) {
      if (++depth_ > 1) fail_line(path_, line_, "a nested object or array");
    } else if (event == Event::object_end || event == Event::array_end) {
      --depth_;
    } else if (event == Event::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!keys_.insert(key).second) fail_line(path_, line_, "duplicate key \"" + key + "\"");
    }
    return true;
  }

 private:
  const std::string& path_;
  int64_t line_;
  int depth_ = 0;
  std::set<std::string> keys_;
};

LogRecord parse_line(std::string_view text, const std::string& path, int64_t line) {
  nlohmann::json object;
  try {
    object = nlohmann::json::parse(text, FlatObjectKeys(path, line));
  } catch (const nlohmann::json::exception& error) {
    fail_line(path, line, std::string("not valid JSON (") + error.what() + ")");
  }
  if (!object.is_object()) fail_line(path, line, "not a JSON object");
  LogRecord record;
  record.line = line;
  const auto type = object.find("type");
  if (type == object.end()) fail_line(path, line, "no \"type\" key");
  if (!type->is_string() || (*type != "step" && *type != "eval"))
    fail_line(path, line, "\"type\" is not \"step\" or \"eval\": " + type->dump());
  record.type = type->get<std::string>();
  record.step = integer_field(object, "step", path, line);
  record.epoch = integer_field(object, "epoch", path, line);
  for (const auto& [key, value] : object.items()) {
    if (key == "type" || key == "step" || key == "epoch") continue;
    record.scalars[key] = scalar_value(value, key, path, line);
  }
  return record;
}

}  // namespace

std::vector<LogRecord> read_jsonl(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  OX_CHECK(in.is_open(), Io, kReadOp, "cannot open '", path, "': ", std::strerror(errno));
  const std::string contents{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  OX_CHECK(!in.bad(), Io, kReadOp, "cannot read '", path, "'");

  std::vector<LogRecord> records;
  size_t begin = 0;
  for (int64_t line = 1; begin < contents.size(); ++line) {
    size_t end = contents.find('\n', begin);
    if (end == std::string::npos) end = contents.size();
    std::string_view text(contents.data() + begin, end - begin);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (text.empty()) fail_line(path, line, "empty line");
    records.push_back(parse_line(text, path, line));
    begin = end + 1;
  }
  return records;
}

}  // namespace ox::io
