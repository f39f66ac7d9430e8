// `oxmera bench [ROWS...]`: the rows of docs/WORKLOADS.md as this build runs them, as a
// table (`make bench` adds LibTorch beside them and the machine's ceilings).

#include <oxmera/oxmera.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "checks.h"
#include "commands.h"
#include "harness.h"

namespace oxcli {

Runner add_bench(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("bench", "time the benchmark rows in this build");
  auto rows = std::make_shared<std::vector<std::string>>();
  auto threads = std::make_shared<int>(0);
  auto device = std::make_shared<std::string>("cpu");
  cmd->add_option("rows", *rows, "row ids (default: all), e.g. sgemm1024 mlp_step");
  cmd->add_option("--device", *device,
                  "where the op rows run: cpu, cuda or cuda:N (a device row's time ends when "
                  "the device has finished)")
      ->capture_default_str();
  add_integer_option(cmd, "--threads", *threads, 0, 1 << 16,
                     "threads (default: all cores; more than the hardware has are capped)");
  return [rows, threads, device] {
    const ox::Device on = ox::Device::parse(*device);
    OX_CHECK(on.is_cpu() || ox::cuda::is_available(), Device, "oxmera bench", "device '", *device,
             "' is not available: ", ox::cuda::unavailable_reason());
    // The training and distributed rows build their own CPU models and data (and Gloo groups):
    // on a device only the op rows run.
    const auto runs_on_device = [](const oxbench::Spec& s) {
      const std::string_view id = s.id;
      return !id.ends_with("_step") && id != "fmnist_epoch" && !oxbench::is_distributed_row(id);
    };
    std::vector<const oxbench::Spec*> chosen;
    for (const oxbench::Spec& spec : oxbench::specs())
      if ((rows->empty() && (on.is_cpu() || runs_on_device(spec))) ||
          std::find(rows->begin(), rows->end(), spec.id) != rows->end())
        chosen.push_back(&spec);
    for (const std::string& id : *rows) {
      const bool known = std::any_of(oxbench::specs().begin(), oxbench::specs().end(),
                                     [&](const oxbench::Spec& s) { return id == s.id; });
      if (!known) {
        std::fprintf(stderr, "oxmera bench: unknown row '%s'; rows:", id.c_str());
        for (const oxbench::Spec& s : oxbench::specs()) std::fprintf(stderr, " %s", s.id);
        std::fprintf(stderr, "\n");
        return 2;
      }
    }
    if (const int used = threads_to_use(*threads, "oxmera bench"); used > 0)
      ox::set_num_threads(used);
    const ox::DeviceGuard guard(on);  // the rows' inputs and results on that device
    if (on.is_cpu())
      std::printf("oxmera %s, %d threads\n", OXMERA_VERSION, ox::get_num_threads());
    else
      std::printf("oxmera %s, on %s (%s)\n", OXMERA_VERSION, on.str().c_str(),
                  ox::cuda::get_device_properties(on.index()).name.c_str());
    std::printf("%-18s | %-12s | %s\n", "workload", "oxmera", "unit");
    for (const oxbench::Spec* spec : chosen) {
      const std::optional<double> value = oxbench::figure(*spec, oxbench::oxmera_seconds(spec->id));
      // A training row adds its test accuracy; a row that cannot run here says why.
      std::string note = oxbench::row_unavailable(spec->id);
      if (const auto accuracy = oxbench::oxmera_accuracy(spec->id)) {
        char buf[48];
        std::snprintf(buf, sizeof buf, "test accuracy %.1f%%", 100.0 * *accuracy);
        note = buf;
      }
      if (value)
        std::printf("%-18s | %-12.4g | %s%s%s\n", spec->id, *value, spec->unit,
                    note.empty() ? "" : " | ", note.c_str());
      else
        std::printf("%-18s | %-12s | %s%s%s\n", spec->id, "n/a", spec->unit,
                    note.empty() ? "" : " | ", note.c_str());
      std::fflush(stdout);
    }
    return 0;
  };
}

}  // namespace oxcli
