// `make bench`: the rows of docs/WORKLOADS.md, oxmera beside LibTorch on all cores, with the
// machine's FMA peak, triad bandwidth and loopback TCP throughput as ceilings. Each figure is taken
// in a process of its own (this program again, with --side), oxmera's and LibTorch's alternating;
// every row alternates --repeats times (default 5) and keeps the median. Prints the table last and
// writes bench/results/latest.json, every sample included.
//
//   oxmera_bench [--only=id,id,...] [--json=path] [--threads=n] [--repeats=n] [--anchor=twin]
//   oxmera_bench --side=oxmera|libtorch --only=id [--threads=n]   (one figure, one process)
//   oxmera_bench --libtorch-version
//
// --anchor names a twin of this program built against another LibTorch (`make bench
// ANCHOR=wheel`: the torch wheel's, the newest the package index has); its LibTorch side runs
// as a third column, alternating with the other two, with its own ratio.

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
  std::optional<double> oxmera{}, libtorch{}, anchor{};  // in the row's unit: the medians
  std::vector<double> oxmera_samples{}, libtorch_samples{}, anchor_samples{};  // one a process
  std::optional<double> oxmera_accuracy{}, libtorch_accuracy{}, anchor_accuracy{};
  std::string unavailable{};  // why the row could not run
  // > 1: oxmera better than `other` (LibTorch's or the anchor's figure).
  std::optional<double> ratio_to(std::optional<double> other) const {
    if (!oxmera || !other || *oxmera <= 0 || *other <= 0) return std::nullopt;
    return spec->throughput ? *oxmera / *other : *other / *oxmera;
  }
  std::optional<double> ratio() const { return ratio_to(libtorch); }
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

nlohmann::ordered_json json_ratio(std::optional<double> v) {
  return v ? nlohmann::ordered_json(std::round(*v * 1000) / 1000) : nlohmann::ordered_json(nullptr);
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
  return "test acc " + percent(r.oxmera_accuracy) + " / " + percent(r.libtorch_accuracy) +
         (r.anchor_samples.empty() ? "" : " / " + percent(r.anchor_accuracy));
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

// What a --side process prints last: its figure and test accuracy, "nan" for none.
constexpr const char* kSampleTag = "oxbench-sample";

struct Sample {
  std::optional<double> figure, accuracy;
};

// Runs args[0] with the arguments after it and returns what it printed on stdout; nullopt when
// it could not start or failed.
std::optional<std::string> output_of(std::vector<std::string> args) {
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
  const int spawned = posix_spawn(&pid, args[0].c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(pipe_fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) out.append(buf, n);
  close(pipe_fds[0]);
  int status = 0;
  if (spawned != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    return std::nullopt;
  return out;
}

// Runs `program` (this one or the anchor twin) as `--side=side --only=id` and reads its sample
// line. One process a figure: the two frameworks' OpenMP pools and allocators never share one,
// and each side starts from the same state whatever ran before it.
// The Hugging Face rows' reference side: transformers and the tokenizers library in Python
// (bench/hf_reference.py, on the newest torch wheel, with what scripts/install-deps.sh --bench
// put in build/torch-wheel).
std::vector<std::string> hf_reference_command(std::string_view id, int threads) {
  const std::filesystem::path bench = std::filesystem::path(OXMERA_BENCH_RESULTS_DIR).parent_path();
  const HfRow row = hf_row(id);
  return {"/usr/bin/env",
          "PYTHONPATH=" + (bench.parent_path() / "build" / "torch-wheel").string(),
          "RAYON_NUM_THREADS=1",
          "TOKENIZERS_PARALLELISM=false",
          "/usr/bin/python3",
          (bench / "hf_reference.py").string(),
          "--row=" + std::string(id),
          "--threads=" + std::to_string(threads),
          std::string("--config=") + row.config,
          "--batch=" + std::to_string(row.batch),
          std::string("--dtype=") + row.dtype,
          std::string("--kind=") + row.kind,
          "--prefill=" + std::to_string(kPrefillTokens),
          "--prompt=" + std::to_string(kDecodePrompt),
          "--decode=" + std::to_string(kDecodeTokens),
          "--fixtures=" + tokenizer_fixture_dir()};
}

Sample run_side(const std::string& program, const char* side, std::string_view id, int threads) {
  const bool reference = std::string_view(side) == "libtorch" && is_hf_row(id);
  const std::optional<std::string> printed =
      reference ? output_of(hf_reference_command(id, threads))
                : output_of({program, std::string("--side=") + side, "--only=" + std::string(id),
                             "--threads=" + std::to_string(threads)});
  if (!printed) {
    std::fprintf(stderr, "oxmera_bench: the %s process of %s for %.*s failed\n", side,
                 program.c_str(), static_cast<int>(id.size()), id.data());
    return {};
  }
  const std::string& out = *printed;
  auto known = [](double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); };
  if (reference) {  // the script prints seconds per call; the row's unit follows from them
    const size_t at = out.rfind("oxbench-seconds");
    double seconds = NAN;
    if (at != std::string::npos) std::sscanf(out.c_str() + at + 15, "%lf", &seconds);
    for (const Spec& spec : specs())
      if (spec.id == id) return {figure(spec, known(seconds)), std::nullopt};
    return {};
  }
  const size_t at = out.rfind(kSampleTag);
  if (at == std::string::npos) return {};
  double value = NAN, accuracy = NAN;
  std::sscanf(out.c_str() + at + std::strlen(kSampleTag), "%lf %lf", &value, &accuracy);
  return {known(value), known(accuracy)};
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

// What the machine allows, measured by code of our own (ceilings.cpp, ranks.cpp).
struct Ceilings {
  double fma_peak_gflops, triad_GBps, loopback_ring_GBps;
};

void write_json(const std::filesystem::path& path, const std::string& cpu, int threads,
                const Ceilings& ceilings, const std::string& anchor_version,
                const std::vector<Result>& results) {
  nlohmann::ordered_json doc;
  doc["machine"] = {{"cpu", cpu},
                    {"threads", threads},
                    {"fma_peak_gflops", json_number(ceilings.fma_peak_gflops)},
                    {"triad_GBps", json_number(ceilings.triad_GBps)},
                    {"loopback_ring_GBps", json_number(ceilings.loopback_ring_GBps)}};
  if (!anchor_version.empty()) doc["anchor_libtorch"] = anchor_version;
  doc["rows"] = nlohmann::ordered_json::array();
  for (const Result& r : results) {
    doc["rows"].push_back({{"id", r.spec->id},
                           {"unit", r.spec->unit},
                           {"oxmera", json_number(r.oxmera)},
                           {"libtorch", json_number(r.libtorch)},
                           {"ratio", json_ratio(r.ratio())}});
    auto samples = [](const std::vector<double>& v) {
      nlohmann::ordered_json a = nlohmann::ordered_json::array();
      for (double x : v) a.push_back(json_number(x));
      return a;
    };
    nlohmann::ordered_json& row = doc["rows"].back();
    row["oxmera_samples"] = samples(r.oxmera_samples);
    row["libtorch_samples"] = samples(r.libtorch_samples);
    if (!anchor_version.empty()) {
      row["anchor"] = json_number(r.anchor);
      row["anchor_ratio"] = json_ratio(r.ratio_to(r.anchor));
      row["anchor_samples"] = samples(r.anchor_samples);
    }
    if (r.oxmera_accuracy || r.libtorch_accuracy) {
      row["oxmera_test_accuracy"] = json_number(r.oxmera_accuracy);
      row["libtorch_test_accuracy"] = json_number(r.libtorch_accuracy);
      if (!anchor_version.empty()) row["anchor_test_accuracy"] = json_number(r.anchor_accuracy);
    }
    if (!r.unavailable.empty()) row["unavailable"] = r.unavailable;
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
  std::string side, anchor;
  int repeats = 5;
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
    } else if (arg.rfind("--anchor=", 0) == 0) {
      anchor = std::filesystem::absolute(arg.substr(9)).string();
    } else if (arg == "--libtorch-version") {
      std::printf("%s\n", libtorch_version().c_str());
      return libtorch_available() ? 0 : 1;
    } else {
      std::fprintf(stderr,
                   "usage: %s [--only=id,id,...] [--json=path] [--threads=n] [--repeats=n] "
                   "[--anchor=twin]\n",
                   argv[0]);
      return 2;
    }
  }
  if (!side.empty()) return side_main(side, only, threads);

  const std::string cpu = cpu_model();
  const bool torch = libtorch_available();
  std::printf("oxmera bench: %s, %d threads; LibTorch %s\n", cpu.c_str(), threads,
              torch ? libtorch_version().c_str() : "not built in (install libtorch-dev)");
  std::string anchor_version;
  if (!anchor.empty()) {
    const std::optional<std::string> printed = output_of({anchor, "--libtorch-version"});
    if (!printed || printed->empty()) {
      std::fprintf(stderr, "oxmera_bench: %s has no LibTorch to anchor to\n", anchor.c_str());
      return 1;
    }
    anchor_version = printed->substr(0, printed->find('\n'));
    std::printf("anchor: LibTorch %s (%s)\n", anchor_version.c_str(), anchor.c_str());
  }
  oxmera_set_threads(threads);
  libtorch_set_threads(threads);

  const double busy_before = other_runnable();
  std::printf("measuring ceilings ...\n");
  std::fflush(stdout);
  const Ceilings ceilings{.fma_peak_gflops = fma_peak_gflops(threads),
                          .triad_GBps = triad_GBps(threads),
                          .loopback_ring_GBps = loopback_ring_GBps()};

  // The contenders of a row: oxmera, this program's LibTorch and the anchor's, each a process.
  enum Contender { kOxmera, kLibtorch, kAnchor };
  std::vector<Contender> contenders = {kOxmera};
  if (torch) contenders.push_back(kLibtorch);
  if (!anchor.empty()) contenders.push_back(kAnchor);
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();

  std::vector<Result> results;
  for (const Spec& spec : specs()) {
    if (!only.empty() && std::find(only.begin(), only.end(), spec.id) == only.end()) continue;
    Result r{.spec = &spec, .unavailable = row_unavailable(spec.id)};
    // Alternating per row (oxmera first, then last, ...), so drift and load from other
    // processes hit the frameworks alike.
    // Every row takes `repeats` turns: one process's figure of a millisecond-scale op swings
    // by up to 1.5x on this kind of VM (solve read 2.2 then 4.0 ms in consecutive processes;
    // sum16M 24 then 34 GB/s), and the median of three still followed one slow sample.
    for (int k = 0; r.unavailable.empty() && k < repeats; ++k) {
      std::vector<Contender> order = contenders;
      if (k % 2) std::reverse(order.begin(), order.end());
      for (const Contender c : order) {
        const Sample s = run_side(c == kAnchor ? anchor : self,
                                  c == kOxmera ? "oxmera" : "libtorch", spec.id, threads);
        auto& samples = c == kOxmera     ? r.oxmera_samples
                        : c == kLibtorch ? r.libtorch_samples
                                         : r.anchor_samples;
        auto& accuracy = c == kOxmera     ? r.oxmera_accuracy
                         : c == kLibtorch ? r.libtorch_accuracy
                                          : r.anchor_accuracy;
        if (s.figure) samples.push_back(*s.figure);
        if (s.accuracy) accuracy = s.accuracy;
      }
    }
    auto median = [](const std::vector<double>& v) {
      return v.empty() ? std::nullopt : std::optional<double>(median_of(v));
    };
    r.oxmera = median(r.oxmera_samples);
    r.libtorch = median(r.libtorch_samples);
    r.anchor = median(r.anchor_samples);
    std::printf("  %-17s oxmera %-10s LibTorch %-10s", spec.id, fmt(r.oxmera, "n/a").c_str(),
                fmt(r.libtorch, "n/a").c_str());
    if (!anchor.empty()) std::printf(" anchor %-10s", fmt(r.anchor, "n/a").c_str());
    std::printf(" %s %s\n", spec.unit, note(r).c_str());
    std::fflush(stdout);
    results.push_back(r);
  }

  // The anchor's two columns, or nothing without one.
  const std::string anchor_head = anchor.empty() ? "" : pad("LibTorch " + anchor_version, 16);
  std::printf("\n%-17s | %-24s | %-10s | %-7s | %-5s", "workload", "oxmera", "LibTorch", "unit",
              "ratio");
  if (!anchor.empty()) std::printf(" | %s | %-5s", anchor_head.c_str(), "ratio");
  std::printf(" | %s\n", "note");
  std::printf("%s\n", std::string(anchor.empty() ? 100 : 126, '-').c_str());
  for (const Result& r : results) {
    const char* missing = r.unavailable.empty() ? "n/a (not yet in oxmera)" : "n/a";
    std::printf("%-17s | %-24s | %-10s | %s | %-5s", r.spec->id, fmt(r.oxmera, missing).c_str(),
                fmt(r.libtorch, "n/a").c_str(), pad(r.spec->unit, 7).c_str(),
                fmt(r.ratio(), "-").c_str());
    if (!anchor.empty())
      std::printf(" | %s | %-5s", pad(fmt(r.anchor, "n/a"), 16).c_str(),
                  fmt(r.ratio_to(r.anchor), "-").c_str());
    std::printf(" | %s\n", note(r).c_str());
  }
  std::printf("%s\n", std::string(anchor.empty() ? 100 : 126, '-').c_str());
  std::printf(
      "ratio > 1: oxmera better (throughputs: oxmera / LibTorch; times: LibTorch / oxmera); "
      "test acc: oxmera / LibTorch%s\n",
      anchor.empty() ? "" : (" / LibTorch " + anchor_version).c_str());
  std::printf(
      "machine: %s, %d threads, FMA peak %.1f GFLOP/s (f32), triad %.1f GB/s, loopback TCP "
      "(allreduce64M's traffic, no reduction) %.2f GB/s\n",
      cpu.c_str(), threads, ceilings.fma_peak_gflops, ceilings.triad_GBps,
      ceilings.loopback_ring_GBps);
  // The rows with a ceiling of their own, as shares of it.
  const std::pair<const char*, double> shares[] = {{"sgemm1024", ceilings.fma_peak_gflops},
                                                   {"allreduce64M", ceilings.loopback_ring_GBps}};
  for (const Result& r : results)
    for (const auto& [id, ceiling] : shares) {
      if (std::string_view(r.spec->id) != id || ceiling <= 0) continue;
      auto pct = [&](std::optional<double> v) {
        return v ? fmt(100.0 * *v / ceiling, "") + "%" : std::string("n/a");
      };
      std::printf("%s as share of its ceiling: oxmera %s, LibTorch %s", id, pct(r.oxmera).c_str(),
                  pct(r.libtorch).c_str());
      if (!anchor.empty())
        std::printf(", LibTorch %s %s", anchor_version.c_str(), pct(r.anchor).c_str());
      std::printf("\n");
    }

  // Other processes on the cores make OpenMP threads wait for one another at every barrier;
  // the figures then measure the scheduler as much as the code.
  const double busy = std::max(busy_before, other_runnable());
  if (busy > 0.5)
    std::printf(
        "warning: about %.1f tasks of other processes were ready to run beside this one "
        "(before or after it): they shared the cores, so these figures are noisy\n",
        busy);

  write_json(json_path, cpu, threads, ceilings, anchor_version, results);
  std::printf("wrote %s\n", json_path.c_str());
  return 0;
}
