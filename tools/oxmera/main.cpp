// oxmera: what this machine can do (doctor), what a weights file holds (inspect),
// PyTorch checkpoints to safetensors (convert), how fast it
// runs the workloads (bench), training with a live view (train), comparing runs (dashboard) and
// starting the ranks of a data-parallel run (launch).

#include <oxmera/oxmera.h>

#include <cstdio>
#include <vector>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{"oxmera: a small, fast C++ machine-learning framework", "oxmera"};
  app.set_version_flag("--version", std::string(OXMERA_VERSION));
  app.require_subcommand(1);
  const std::vector<std::pair<CLI::App*, oxcli::Runner>> commands = [&] {
    std::vector<std::pair<CLI::App*, oxcli::Runner>> out;
    const auto add = [&](oxcli::Runner (*adder)(CLI::App&)) {
      const size_t before = app.get_subcommands({}).size();
      oxcli::Runner run = adder(app);
      out.emplace_back(app.get_subcommands({})[before], std::move(run));
    };
    add(oxcli::add_doctor);
    add(oxcli::add_inspect);
    add(oxcli::add_convert);
    add(oxcli::add_bench);
    add(oxcli::add_train);
    add(oxcli::add_dashboard);
    add(oxcli::add_launch);
    return out;
  }();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  } catch (const std::exception& e) {  // a flag's own check; never an abort
    std::fprintf(stderr, "oxmera: %s\n", e.what());
    return 2;
  }
  for (const auto& [command, run] : commands)
    if (command->parsed()) return oxcli::run_guarded(command->get_name(), run);
  return 1;
}
