// `make bench`: the op-level rows of shared/WORKLOADS.md, oxmera beside LibTorch in one
// process on all cores, with the machine's FMA peak and triad bandwidth as ceilings. Prints
// the table last and writes bench/results/latest.json.
//
//   oxmera_bench [--only=id,id,...] [--json=path] [--threads=n]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

#ifndef OXMERA_BENCH_RESULTS_DIR
#define OXMERA_BENCH_RESULTS_DIR "bench/results"
#endif

namespace oxbench {

namespace {

struct Result {
  const Spec* spec;
  std::optional<double> oxmera, libtorch;                    // in the row's unit
  std::optional<double> oxmera_accuracy, libtorch_accuracy;  // rows that train
  std::string unavailable;                                   // why the row could not run
  std::optional<double> ratio() const {                      // > 1: oxmera better
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
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--only=", 0) == 0) {
      only = split(arg.substr(7));
    } else if (arg.rfind("--json=", 0) == 0) {
      json_path = arg.substr(7);
    } else if (arg.rfind("--threads=", 0) == 0) {
      threads = std::max(1, std::atoi(arg.c_str() + 10));
    } else {
      std::fprintf(stderr, "usage: %s [--only=id,id,...] [--json=path] [--threads=n]\n", argv[0]);
      return 2;
    }
  }

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
    Result r{&spec,        std::nullopt, std::nullopt,
             std::nullopt, std::nullopt, row_unavailable(spec.id)};
    // Interleaved per row, so load from other processes hits both frameworks alike.
    r.oxmera = figure(spec, oxmera_seconds(spec.id));
    r.libtorch = figure(spec, libtorch_seconds(spec.id));
    r.oxmera_accuracy = oxmera_accuracy(spec.id);
    r.libtorch_accuracy = libtorch_accuracy(spec.id);
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
