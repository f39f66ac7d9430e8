// `oxmera doctor` as a user sees it in a terminal: the screen against a golden file whose
// machine-specific values are masked, and its wrapping at other widths.
//
// Golden files (tests/cli/golden/*.txt) hold the screen's lines, trailing spaces trimmed, down
// to the last non-blank one (the rest of the screen must be blank). In a golden line:
//   {{*}}       any text that starts and ends with a non-space: a value that differs between
//               machines, still checked to start in its column;
//   {{repeat}}  at the end: the line matches zero or more screen lines, each like the rest of
//               it (the continuation lines of a value that wraps on some machines only).
// Everything else is literal.

#include <gtest/gtest.h>
#include <oxmera/cuda.h>
#include <stdio.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli/pty.h"
#include "test_paths.h"

namespace {

using namespace std::chrono_literals;
using oxtest::PtyOptions;
using oxtest::PtyProcess;

constexpr auto kWait = 60s;  // doctor is quick, but a sanitizer build on a busy machine is not

struct GoldenLine {
  std::regex pattern;
  bool repeat = false;
  std::string source;
};

std::vector<GoldenLine> parse_golden(const std::string& text) {
  std::vector<GoldenLine> golden;
  std::istringstream in(text);
  static const std::string kAny = "{{*}}", kRepeat = "{{repeat}}";
  for (std::string line; std::getline(in, line);) {
    GoldenLine g;
    g.source = line;
    if (line.size() >= kRepeat.size() &&
        line.compare(line.size() - kRepeat.size(), kRepeat.size(), kRepeat) == 0) {
      g.repeat = true;
      line.erase(line.size() - kRepeat.size());
    }
    std::string regex;
    for (size_t i = 0; i < line.size();) {
      if (line.compare(i, kAny.size(), kAny) == 0) {
        regex += "\\S(?:.*\\S)?";
        i += kAny.size();
        continue;
      }
      if (std::string("\\^$.|?*+()[]{}").find(line[i]) != std::string::npos) regex += '\\';
      regex += line[i++];
    }
    g.pattern = std::regex(regex);
    golden.push_back(std::move(g));
  }
  return golden;
}

// Whether screen[s...] matches golden[g...] exactly; `furthest` records how far a match got,
// for the failure message.
bool matches(const std::vector<GoldenLine>& golden, size_t g,
             const std::vector<std::string>& screen, size_t s, size_t& furthest_golden,
             size_t& furthest_screen) {
  if (g > furthest_golden || (g == furthest_golden && s > furthest_screen)) {
    furthest_golden = g;
    furthest_screen = s;
  }
  if (g == golden.size()) return s == screen.size();
  if (golden[g].repeat) {
    if (matches(golden, g + 1, screen, s, furthest_golden, furthest_screen)) return true;
    return s < screen.size() && std::regex_match(screen[s], golden[g].pattern) &&
           matches(golden, g, screen, s + 1, furthest_golden, furthest_screen);
  }
  return s < screen.size() && std::regex_match(screen[s], golden[g].pattern) &&
         matches(golden, g + 1, screen, s + 1, furthest_golden, furthest_screen);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Empty when `screen` (its trailing blank lines ignored) matches the golden text, else what
// differs.
std::string golden_mismatch(const std::string& golden_text, std::vector<std::string> screen) {
  const std::vector<GoldenLine> golden = parse_golden(golden_text);
  while (!screen.empty() && screen.back().empty()) screen.pop_back();
  size_t furthest_golden = 0, furthest_screen = 0;
  if (matches(golden, 0, screen, 0, furthest_golden, furthest_screen)) return "";
  return "first mismatch: golden line " + std::to_string(furthest_golden + 1) + " [" +
         (furthest_golden < golden.size() ? golden[furthest_golden].source : "(end)") +
         "]\n   screen line " + std::to_string(furthest_screen + 1) + " [" +
         (furthest_screen < screen.size() ? screen[furthest_screen] : "(end)") + "]";
}

void expect_screen_matches(const PtyProcess& p, const std::string& golden_name) {
  const std::string mismatch = golden_mismatch(
      read_file(std::string(oxtest::kSourceDir) + "/tests/cli/golden/" + golden_name), p.lines());
  EXPECT_EQ(mismatch, "") << "the screen does not match " << golden_name << "\nscreen:\n"
                          << p.text();
}

PtyOptions terminal(int rows, int cols) {
  PtyOptions o;
  o.rows = rows;
  o.cols = cols;
  return o;
}

// What `ENV oxmera doctor ARGS` writes to a pipe (ENV: NAME=value words for the shell).
std::string piped_doctor_with(const std::string& env, const std::string& args) {
  std::string out;
  FILE* pipe = popen((env + " " + std::string(oxtest::kCliPath) + " doctor " + args).c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  return out;
}
std::string piped_doctor(const std::string& args) { return piped_doctor_with("", args); }

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> split_lines(const std::string& text, const std::string& newline) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t end; (end = text.find(newline, start)) != std::string::npos;
       start = end + newline.size())
    out.push_back(text.substr(start, end - start));
  if (start < text.size()) out.push_back(text.substr(start));
  return out;
}

// The golden matcher itself: masks accept other machines' values but not a change of layout.
TEST(GoldenScreen, MasksValuesNotLayout) {
  const std::string golden =
      "build\n"
      "  flags  {{*}}\n"
      "         {{*}}{{repeat}}\n"
      "  type   Release\n";
  EXPECT_EQ(golden_mismatch(golden, {"build", "  flags  -O3", "  type   Release", "", ""}), "");
  EXPECT_EQ(golden_mismatch(golden, {"build", "  flags  -O1 -g", "         -fsanitize=address",
                                     "         -fno-omit-frame-pointer", "  type   Release"}),
            "");
  // A value out of its column, a continuation the terminal wrapped to column 0, a missing,
  // extra or changed line, an empty value: all differ.
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"build", "  flags   -O3", "  type   Release"},
           {"build", "  flags  -O1 -g", "-fsanitize=address", "  type   Release"},
           {"build", "  type   Release"},
           {"build", "  flags  -O3", "  type   Release", "extra"},
           {"build", "  flags  -O3", "  type   Debug"},
           {"build", "  flags", "  type   Release"}})
    EXPECT_NE(golden_mismatch(golden, bad), "") << ::testing::PrintToString(bad);
  // Regex characters in the golden are literal.
  EXPECT_EQ(golden_mismatch("a (b) [c]. {{*}}\n", {"a (b) [c]. x"}), "");
  EXPECT_NE(golden_mismatch("a (b) [c]. {{*}}\n", {"a (b) [c]x x"}), "");
}

// The golden of a build with CUDA kernels lists the CUDA lines (one device at most: a machine
// with more shows more lines than the golden allows); a build without them has its own.
TEST(DoctorScreen, MatchesTheGoldenAt100x60) {
  if (ox::cuda::device_count() > 1) GTEST_SKIP() << "the golden allows for one GPU at most";
  PtyProcess p({oxtest::kCliPath, "doctor"}, terminal(60, 100));
  ASSERT_EQ(p.wait_exit(kWait), 0) << p.text();
  expect_screen_matches(
      p, ox::cuda::is_built() ? "doctor_100x60.txt" : "doctor_100x60_without_cuda.txt");
}

// Narrower terminals: the program breaks its own lines, at spaces, so that the terminal never
// wraps one, and no word is lost or cut.
TEST(DoctorScreen, WrapsToNarrowTerminals) {
  const std::vector<std::string> piped_words = words(piped_doctor(""));
  ASSERT_FALSE(piped_words.empty());
  for (int cols : {100, 80, 60, 50}) {
    PtyProcess p({oxtest::kCliPath, "doctor"}, terminal(200, cols));
    ASSERT_EQ(p.wait_exit(kWait), 0) << p.text();
    for (const std::string& line : split_lines(p.raw_output(), "\r\n"))
      EXPECT_LE(line.size(), size_t(cols)) << "at " << cols << " columns: [" << line << "]";
    EXPECT_EQ(words(p.text()), piped_words) << "at " << cols << " columns:\n" << p.text();
  }
  // Even a terminal narrower than the keys keeps every line within it.
  PtyProcess tiny({oxtest::kCliPath, "doctor"}, terminal(300, 20));
  ASSERT_EQ(tiny.wait_exit(kWait), 0);
  for (const std::string& line : split_lines(tiny.raw_output(), "\r\n"))
    EXPECT_LE(line.size(), 20u) << "[" << line << "]";
}

// Piped, each value stays on one line whatever its length (scripts grep these).
TEST(DoctorScreen, PipedOutputIsNotWrapped) {
  const std::string out = piped_doctor("");
  const std::vector<std::string> lines = split_lines(out, "\n");
  const std::regex keyed_line("^ *\\S.*$");
  size_t blas_lines = 0;
  for (const std::string& line : lines) {
    EXPECT_TRUE(std::regex_match(line, keyed_line)) << "[" << line << "]";
    if (line.rfind("    blas ", 0) == 0) ++blas_lines;
  }
  EXPECT_EQ(blas_lines, 1u) << out;
  const nlohmann::json j = nlohmann::json::parse(piped_doctor("--json"));
  ASSERT_TRUE(j.contains("backends"));
  const std::string blas = j["backends"]["cpu"]["blas"].get<std::string>();
  EXPECT_NE(out.find("    blas "), std::string::npos);
  EXPECT_NE(out.find(blas + "\n"), std::string::npos) << "the blas value [" << blas << "]";
}

// CUDA's lines say why it cannot be used: here (and in CI) there is no driver; with the
// toolkit's stub libcuda.so named by OXMERA_CUDA_DRIVER, the driver loads and cuInit refuses it.
TEST(DoctorCuda, SaysWhyCudaIsUnavailable) {
  const nlohmann::json j = nlohmann::json::parse(piped_doctor("--json"));
  const nlohmann::json& cuda = j["backends"]["cuda"];
  ASSERT_TRUE(cuda.is_object()) << j.dump(2);
  const std::string available = cuda["available"].get<std::string>();
  const std::string build = cuda["build"].get<std::string>();
  if (!ox::cuda::is_built()) {
    EXPECT_EQ(available, "no: " + ox::cuda::unavailable_reason());
    EXPECT_EQ(build.rfind("without CUDA: ", 0), 0u) << build;
    return;
  }
  EXPECT_EQ(build.rfind("with CUDA (nvcc ", 0), 0u) << build;
  EXPECT_EQ(cuda["kernel fingerprint"].get<std::string>(), ox::cuda::kernel_fingerprint());
  EXPECT_NE(cuda["kernel targets"].get<std::string>().find("compute_"), std::string::npos);
  for (const char* library : {"cublas", "cublasLt", "nvrtc", "cusolver"}) {
    const std::string value = cuda[library].get<std::string>();
    EXPECT_TRUE(value.find("(found)") != std::string::npos || value.rfind("missing: ", 0) == 0)
        << library << ": " << value;
  }
  if (ox::cuda::driver_version() == 0 && getenv("OXMERA_CUDA_DRIVER") == nullptr) {
    EXPECT_EQ(available.rfind("no: no NVIDIA driver (libcuda.so.1 could not be loaded", 0), 0u)
        << available;
    EXPECT_EQ(cuda["driver"].get<std::string>().rfind("not loaded: libcuda.so.1", 0), 0u)
        << cuda["driver"];
  }
}

TEST(DoctorCuda, TheStubDriverIsRefusedAtCuInit) {
  if (std::string(OXMERA_PTY_CUDA_STUB).empty()) GTEST_SKIP() << "no CUDA toolkit stub here";
  const nlohmann::json j = nlohmann::json::parse(
      piped_doctor_with("OXMERA_CUDA_DRIVER=" + std::string(OXMERA_PTY_CUDA_STUB), "--json"));
  const nlohmann::json& cuda = j["backends"]["cuda"];
  const std::string available = cuda["available"].get<std::string>();
  const std::string driver = cuda["driver"].get<std::string>();
  EXPECT_EQ(available.rfind("no: cuInit failed: CUDA_ERROR_STUB_LIBRARY", 0), 0u) << available;
  EXPECT_NE(driver.find(OXMERA_PTY_CUDA_STUB), std::string::npos) << driver;
  EXPECT_NE(driver.find("cuInit failed: CUDA_ERROR_STUB_LIBRARY"), std::string::npos) << driver;
}

// --json on a terminal is not wrapped either: it parses, values whole.
TEST(DoctorScreen, JsonOnATerminalIsWhole) {
  PtyProcess p({oxtest::kCliPath, "doctor", "--json"}, terminal(45, 40));
  ASSERT_EQ(p.wait_exit(kWait), 0);
  const nlohmann::json j = nlohmann::json::parse(p.raw_output());
  for (const char* section : {"host", "build", "backends", "nn", "data", "distributed"})
    EXPECT_TRUE(j.contains(section)) << section;
  EXPECT_EQ(j, nlohmann::json::parse(piped_doctor("--json")));
}

}  // namespace
