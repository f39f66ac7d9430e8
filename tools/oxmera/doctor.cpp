// `oxmera doctor`: what this machine and this build can do, and why not where they cannot.
// Always exits 0 unless the program itself is broken.

#include <oxmera/oxmera.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "build_info.h"
#include "commands.h"

namespace oxcli {

namespace {

struct Section {
  std::string name;
  std::vector<std::pair<std::string, std::string>> lines;
  std::vector<Section> children;
};

std::string os_name() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  return "unknown";
}

std::string trimmed(std::string s) {
  s.erase(0, s.find_first_not_of(' '));
  s.erase(s.find_last_not_of(' ') + 1);
  return s;
}

std::string joined(const std::vector<std::string>& items, const std::string& in_use) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += ", ";
    out += item + (item == in_use ? " (in use)" : "");
  }
  return out.empty() ? "none" : out;
}

// The data sets `oxmera train` looks for by default.
Section data_sets() {
  Section s{"data", {}, {}};
  const std::filesystem::path fmnist = "/usr/share/datasets/fashion-mnist";
  int found = 0;
  // The error_code overload: an unreadable folder is "missing" here, not an exception.
  std::error_code error;
  for (const char* file : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                           "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    found += std::filesystem::exists(fmnist / file, error) ? 1 : 0;
  s.lines.emplace_back("fashion-mnist",
                       found == 4 ? fmnist.string() + " (found)"
                                  : fmnist.string() + " (missing: install dataset-fashion-mnist)");
  return s;
}

// The process-group backends init_process_group can use here (docs/DISTRIBUTED.md).
Section distributed_backends() {
  namespace dist = ox::distributed;
  Section s{"distributed", {}, {}};
  s.lines.emplace_back("gloo", "yes (CPU tensors)");
  s.lines.emplace_back("mpi", dist::is_backend_available("mpi")
                                  ? "yes (CPU tensors, under mpirun)"
                                  : "no: this build found no MPI at configure time");
  std::string nccl = "yes (CUDA tensors)";
  if (!dist::is_backend_available("nccl"))
    nccl = !ox::cuda::is_available()
               ? "no: CUDA is not available (backends: cuda says why)"
               : "no: libnccl.so.2 did not load (OXMERA_NCCL_LIBRARY names another file)";
  s.lines.emplace_back("nccl", nccl);
  return s;
}

// How the CPU kernels compute bf16/f16: widened to f32 on load (GEMM panels, elementwise and
// reductions), rounded once on store; the instructions that would make it cheaper, where present.
std::string half_arithmetic() {
#if defined(__x86_64__)
  const bool bf16 = __builtin_cpu_supports("avx512bf16");
  const bool f16c = __builtin_cpu_supports("f16c");
  return std::string("f32 accumulation, 16-bit loads and stores (") +
         (f16c ? "F16C" : "no F16C: f16 converted in software") + ", " +
         (bf16 ? "AVX512-BF16 present, not used yet" : "no native bf16 dot products") + ")";
#else
  return "f32 accumulation, 16-bit loads and stores";
#endif
}

std::vector<Section> report() {
  std::vector<Section> sections;
  sections.push_back({"host",
                      {{"os", os_name()},
                       {"cpu", cpu_model()},
                       {"hardware threads", std::to_string(std::thread::hardware_concurrency())},
                       {"simd targets", joined(ox::simd_targets(), ox::simd_target())}},
                      {}});
  sections.push_back({"build",
                      {{"version", OXMERA_VERSION},
                       {"compiler", OXMERA_BUILD_COMPILER},
                       {"build type", OXMERA_BUILD_TYPE},
                       {"flags", trimmed(OXMERA_BUILD_FLAGS)},
                       {"sanitizers", std::string(OXMERA_BUILD_SANITIZE) == "ON" ? "address, "
                                                                                   "undefined"
                                                                                 : "off"}},
                      {}});
  Section backends{"backends", {}, {}};
  for (const ox::BackendInfo& info : ox::backend_infos()) {
    Section b{info.name, {{"available", info.available ? "yes" : "no: " + info.reason}}, {}};
    for (size_t i = 0; i < info.devices.size(); ++i)
      b.lines.emplace_back(info.devices.size() == 1 ? "device" : "device " + std::to_string(i),
                           info.devices[i]);
    for (const auto& feature : info.features) b.lines.push_back(feature);
    backends.children.push_back(std::move(b));
  }
  sections.push_back(std::move(backends));
  sections.push_back({"nn",
                      {{"module dtypes", "f32, f64, bf16, f16 (Module::to)"},
                       {"16-bit modules", "stored in 16 bits, accumulated in f32 (docs/NN.md)"},
                       {"input dtype",
                        "must equal the parameters' (a DType error otherwise), "
                        "except under autocast"},
                       {"mixed precision",
                        "ox::amp::Autocast (cpu: bf16, f16), GradScaler, "
                        "optimizer master weights"},
                       {"16-bit arithmetic", half_arithmetic()},
                       {"train --precision", "f32 (default), bf16, f16, amp-bf16, amp-f16"}},
                      {}});
  sections.push_back(data_sets());
  sections.push_back(distributed_backends());
  return sections;
}

// The width of the terminal stdout is, or 0 when it is not one: piped output is never wrapped,
// so that scripts see one line per value.
size_t terminal_columns() {
  if (isatty(STDOUT_FILENO) == 0) return 0;
  winsize size{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) != 0) return 0;
  return size.ws_col;
}

// `text` in lines of at most `width` characters, broken at spaces where it can be.
std::vector<std::string> wrapped(const std::string& text, size_t width) {
  width = std::max<size_t>(width, 1);
  std::vector<std::string> lines;
  std::string line;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!line.empty() && line.size() + 1 + word.size() <= width) {
      line += " " + word;
      continue;
    }
    if (!line.empty()) lines.push_back(line);
    for (; word.size() > width; word.erase(0, width)) lines.push_back(word.substr(0, width));
    line = word;
  }
  lines.push_back(line);
  return lines;
}

// A value narrower than this would wrap into a thin column: it goes under its key instead.
constexpr size_t kMinValueWidth = 24;

// Keys at the left, values aligned in a column after the longest key; on a terminal of
// `columns` (0: not a terminal), long values continue on the next lines in that column.
void print(const Section& s, int depth, size_t columns, std::ostream& out) {
  const std::string indent(static_cast<size_t>(depth) * 2, ' ');
  out << indent << s.name << "\n";
  size_t width = 0;
  for (const auto& [key, value] : s.lines) width = std::max(width, key.size());
  const size_t value_column = indent.size() + 2 + width + 2;
  for (const auto& [key, raw_value] : s.lines) {
    // An empty value (flags of a build that sets none) would read as a missing line.
    const std::string value = raw_value.empty() ? "(none)" : raw_value;
    if (columns == 0) {
      out << indent << "  " << key << std::string(width - key.size() + 2, ' ') << value << "\n";
    } else if (columns >= value_column + kMinValueWidth) {
      const std::vector<std::string> lines = wrapped(value, columns - value_column);
      out << indent << "  " << key << std::string(width - key.size() + 2, ' ') << lines[0] << "\n";
      for (size_t i = 1; i < lines.size(); ++i)
        out << std::string(value_column, ' ') << lines[i] << "\n";
    } else {
      const size_t key_column = indent.size() + 2, under = indent.size() + 4;
      for (const std::string& line : wrapped(key, columns - std::min(columns, key_column)))
        out << std::string(key_column, ' ') << line << "\n";
      for (const std::string& line : wrapped(value, columns - std::min(columns, under)))
        out << std::string(under, ' ') << line << "\n";
    }
  }
  for (const Section& child : s.children) print(child, depth + 1, columns, out);
}

nlohmann::ordered_json to_json(const Section& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [key, value] : s.lines) j[key] = value;
  for (const Section& child : s.children) j[child.name] = to_json(child);
  return j;
}

}  // namespace

Runner add_doctor(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("doctor", "what this machine and build can do, and why not");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "machine-readable output");
  return [json] {
    const std::vector<Section> sections = report();
    if (*json) {
      nlohmann::ordered_json j = nlohmann::ordered_json::object();
      for (const Section& s : sections) j[s.name] = to_json(s);
      std::cout << j.dump(2) << "\n";
    } else {
      const size_t columns = terminal_columns();
      for (const Section& s : sections) print(s, 0, columns, std::cout);
    }
    return 0;
  };
}

}  // namespace oxcli
