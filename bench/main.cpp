// `make bench`: the rows of shared/WORKLOADS.md, oxmera beside LibTorch on all cores, with the
// machine's FMA peak and triad bandwidth as ceilings. Each figure is taken in a process of its
// own (this program again, with --side), oxmera's and LibTorch's alternating; a training row
// alternates --repeats times (default 3) and keeps the median. Prints the table last and writes
// bench/results/latest.json, every sample included.
//
//   oxmera_bench [--only=id,id,...] [--json=path] [--threads=n] [--repeats=n]
//   oxmera_bench --side=oxmera|libtorch --only=id [--threads=n]   (one figure, one process)

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

extern char** environ;

#ifndef OXMERA_BENCH_RESULTS_DIR
#define OXMERA_BENCH_RESULTS_DIR "bench/results"
#endif

namespace oxbench {

namespace {

struct Result {
  const Spec* spec = nullptr;
  std::optional<double> oxmera{}, libtorch{};                    // in the row's unit: the medians
  std::vector<double> oxmera_samples{}, libtorch_samples{};      // one a process
  std::optional<double> oxmera_accuracy{}, libtorch_accuracy{};  // rows that train
  std::string unavailable{};                                     // why the row could not run
  std::optional<double> ratio() const {                          // > 1: oxmera better
    if (!oxmera || !libtorch || *oxmera <= 0 || *libtorch <= 0) return std::nullopt;
    return spec->throughput ? *oxmera / *libtorch : *libtorch / *oxmera;
  }
};

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}

// Tasks of other processes ready to run, averaged over a few samples of /proc/loadavg's
// runnable count (which counts this thread too); -1 where there is none (not Linux). Sampled
// after a pause, so OpenMP workers of this process have stopped spinning.
double other_runnable() {
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  double sum = 0;
  constexpr int kSamples = 10;
  for (int i = 0; i < kSamples; ++i) {
    std::ifstream in("/proc/loadavg");
    double l1, l5, l15;
    int running = 0;
    char slash;
    if (!(in >> l1 >> l5 >> l15 >> running >> slash)) return -1;
    sum += std::max(0, running - 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return sum / kSamples;
}

std::string fmt(std::optional<double> v, const char* missing) {
  if (!v) return missing;
  char buf[32];
  const double a = std::fabs(*v);
  std::snprintf(buf, sizeof buf, a >= 100 ? "%.1f" : a >= 1 ? "%.2f" : "%.3f", *v);
  return buf;
}

// Rounded for the JSON file: 4 significant digits say all the noise allows.
nlohmann::ordered_json json_number(std::optional<double> v) {
  if (!v) return nullptr;
  if (*v == 0) return 0.0;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::fabs(*v))));
  return std::round(*v * scale) / scale;
}

// Left-aligned in `width` columns, counting UTF-8 characters rather than bytes ("µs/op").
std::string pad(std::string s, size_t width) {
  size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80;
  if (chars < width) s.append(width - chars, ' ');
  return s;
}

std::string percent(std::optional<double> fraction) {
  if (!fraction) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * *fraction);
  return buf;
}

// The table's last column: a training row's test accuracies, or why a row could not run.
std::string note(const Result& r) {
  if (!r.unavailable.empty()) return r.unavailable;
  if (!r.oxmera_accuracy && !r.libtorch_accuracy) return "";
  return "test acc " + percent(r.oxmera_accuracy) + " / " + percent(r.libtorch_accuracy);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    if (comma > start) out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// The training rows: whole steps or epochs, the rows that swing most from run to run.
bool trains(std::string_view id) {
  return id.find("_step") != std::string_view::npos || id.find("_epoch") != std::string_view::npos;
}

// What a --side process prints last: its figure and test accuracy, "nan" for none.
constexpr const char* kSampleTag = "oxbench-sample";

struct Sample {
  std::optional<double> figure, accuracy;
};

// Runs this program again as `--side=side --only=id` and reads its sample line. One process a
// figure: the two frameworks' OpenMP pools and allocators never share one, and each side starts
// from the same state whatever ran before it.
Sample run_side(const char* side, std::string_view id, int threads) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> args = {self, std::string("--side=") + side, "--only=" + std::string(id),
                                   "--threads=" + std::to_string(threads)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, pipe_fds[0]);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(pipe_fds[0]);
  int status = 0;
  if (spawned != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "oxmera_bench: the %s process for %.*s failed\n", side,
                 static_cast<int>(id.size()), id.data());
    return {};
  }
  const size_t at = out.rfind(kSampleTag);
  if (at == std::string::npos) return {};
  double figure = NAN, accuracy = NAN;
  std::sscanf(out.c_str() + at + std::strlen(kSampleTag), "%lf %lf", &figure, &accuracy);
  auto known = [](double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); };
  return {known(figure), known(accuracy)};
}

// --side: one framework's figure for one row, printed as the sample line.
int side_main(const std::string& side, const std::vector<std::string>& only, int threads) {
  const Spec* spec = nullptr;
  for (const Spec& s : specs())
    if (only.size() == 1 && s.id == only[0]) spec = &s;
  if (!spec || (side != "oxmera" && side != "libtorch")) {
    std::fprintf(stderr, "usage: oxmera_bench --side=oxmera|libtorch --only=<one row id>\n");
    return 2;
  }
  const bool ox = side == "oxmera";
  // Only this side's pool: the other framework stays untouched in this process.
  ox ? oxmera_set_threads(threads) : libtorch_set_threads(threads);
  const std::optional<double> figure_value =
      figure(*spec, ox ? oxmera_seconds(spec->id) : libtorch_seconds(spec->id));
  const std::optional<double> accuracy =
      ox ? oxmera_accuracy(spec->id) : libtorch_accuracy(spec->id);
  std::printf("%s %.17g %.17g\n", kSampleTag, figure_value.value_or(NAN), accuracy.value_or(NAN));
  return 0;
}

void write_json(const std::filesystem::path& path, const std::string& cpu, int threads, double peak,
                double triad, const std::vector<Result>& results) {
  nlohmann::ordered_json doc;
  doc["machine"] = {{"cpu", cpu},
                    {"threads", threads},
                    {"fma_peak_gflops", json_number(peak)},
                    {"triad_GBps", json_number(triad)}};
  doc["rows"] = nlohmann::ordered_json::array();
  for (const Result& r : results) {
    const auto ratio = r.ratio();
    doc["rows"].push_back(
        {{"id", r.spec->id},
         {"unit", r.spec->unit},
         {"oxmera", json_number(r.oxmera)},
         {"libtorch", json_number(r.libtorch)},
         {"ratio", ratio ? nlohmann::ordered_json(std::round(*ratio * 1000) / 1000)
                         : nlohmann::ordered_json(nullptr)}});
    auto samples = [](const std::vector<double>& v) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (double x : v) a.push_back(json_number(x));
      return a;
    };
    doc["rows"].back()["oxmera_samples"] = samples(r.oxmera_samples);
    doc["rows"].back()["libtorch_samples"] = samples(r.libtorch_samples);
    if (r.oxmera_accuracy || r.libtorch_accuracy) {
      doc["rows"].back()["oxmera_test_accuracy"] = json_number(r.oxmera_accuracy);
      doc["rows"].back()["libtorch_test_accuracy"] = json_number(r.libtorch_accuracy);
    }
    if (!r.unavailable.empty()) doc["rows"].back()["unavailable"] = r.unavailable;
  }
  std::filesystem::create_directories(path.parent_path());
  // Written beside and renamed over, so a reader never sees half a file.
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp);
    out << doc.dump(2) << "\n";
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

}  // namespace oxbench

int main(int argc, char** argv) {
  using namespace oxbench;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::filesystem::path json_path = std::filesystem::path(OXMERA_BENCH_RESULTS_DIR) / "latest.json";
  std::vector<std::string> only;
  std::string side;
  int repeats = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--only=", 0) == 0) {
      only = split(arg.substr(7));
    } else if (arg.rfind("--json=", 0) == 0) {
      json_path = arg.substr(7);
    } else if (arg.rfind("--threads=", 0) == 0) {
      threads = std::max(1, std::atoi(arg.c_str() + 10));
    } else if (arg.rfind("--repeats=", 0) == 0) {
      repeats = std::max(1, std::atoi(arg.c_str() + 10));
    } else if (arg.rfind("--side=", 0) == 0) {
      side = arg.substr(7);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--only=id,id,...] [--json=path] [--threads=n] [--repeats=n]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!side.empty()) return side_main(side, only, threads);

  const std::string cpu = cpu_model();
  const bool torch = libtorch_available();
  std::printf("oxmera bench: %s, %d threads; LibTorch %s\n", cpu.c_str(), threads,
              torch ? libtorch_version().c_str() : "not built in (install libtorch-dev)");
  oxmera_set_threads(threads);
  libtorch_set_threads(threads);

  const double busy_before = other_runnable();
  std::printf("measuring ceilings ...\n");
  std::fflush(stdout);
  const double peak = fma_peak_gflops(threads);
  const double triad = triad_GBps(threads);

  std::vector<Result> results;
  for (const Spec& spec : specs()) {
    if (!only.empty() && std::find(only.begin(), only.end(), spec.id) == only.end()) continue;
    Result r{.spec = &spec, .unavailable = row_unavailable(spec.id)};
    // Alternating per row (oxmera first, then LibTorch first, ...), so drift and load from
    // other processes hit both frameworks alike.
    const int alternations = trains(spec.id) ? repeats : 1;
    for (int k = 0; k < alternations; ++k) {
      for (const bool ox : k % 2 == 0 ? std::vector{true, false} : std::vector{false, true}) {
        if (!r.unavailable.empty() || (!ox && !torch)) continue;
        const Sample s = run_side(ox ? "oxmera" : "libtorch", spec.id, threads);
        if (s.figure) (ox ? r.oxmera_samples : r.libtorch_samples).push_back(*s.figure);
        if (s.accuracy) (ox ? r.oxmera_accuracy : r.libtorch_accuracy) = s.accuracy;
      }
    }
    if (!r.oxmera_samples.empty()) r.oxmera = median_of(r.oxmera_samples);
    if (!r.libtorch_samples.empty()) r.libtorch = median_of(r.libtorch_samples);
    std::printf("  %-17s oxmera %-10s LibTorch %-10s %s %s\n", spec.id,
                fmt(r.oxmera, "n/a").c_str(), fmt(r.libtorch, "n/a").c_str(), spec.unit,
                note(r).c_str());
    std::fflush(stdout);
    results.push_back(r);
  }

  std::printf("\n%-17s | %-24s | %-10s | %-7s | %-5s | %s\n", "workload", "oxmera", "LibTorch",
              "unit", "ratio", "note");
  std::printf("%s\n", std::string(100, '-').c_str());
  for (const Result& r : results) {
    const char* missing = r.unavailable.empty() ? "n/a (not yet in oxmera)" : "n/a";
    std::printf("%-17s | %-24s | %-10s | %s | %-5s | %s\n", r.spec->id,
                fmt(r.oxmera, missing).c_str(), fmt(r.libtorch, "n/a").c_str(),
                pad(r.spec->unit, 7).c_str(), fmt(r.ratio(), "-").c_str(), note(r).c_str());
  }
  std::printf("%s\n", std::string(100, '-').c_str());
  std::printf(
      "ratio > 1: oxmera better (throughputs: oxmera / LibTorch; times: LibTorch / oxmera); "
      "test acc: oxmera / LibTorch\n");
  std::printf("machine: %s, %d threads, FMA peak %.1f GFLOP/s (f32), triad %.1f GB/s\n",
              cpu.c_str(), threads, peak, triad);
  for (const Result& r : results) {
    if (std::string_view(r.spec->id) != "sgemm1024") continue;
    auto pct = [&](std::optional<double> v) {
      return v ? fmt(100.0 * *v / peak, "") + "%" : std::string("n/a");
    };
    std::printf("sgemm1024 as share of FMA peak: oxmera %s, LibTorch %s\n", pct(r.oxmera).c_str(),
                pct(r.libtorch).c_str());
  }

  // Other processes on the cores make OpenMP threads wait for one another at every barrier;
  // the figures then measure the scheduler as much as the code.
  const double busy = std::max(busy_before, other_runnable());
  if (busy > 0.5)
    std::printf(
        "warning: about %.1f tasks of other processes were ready to run beside this one "
        "(before or after it): they shared the cores, so these figures are noisy\n",
        busy);

  write_json(json_path, cpu, threads, peak, triad, results);
  std::printf("wrote %s\n", json_path.c_str());
  return 0;
}
