// The `oxmera` command line: its subcommands registered on one CLI11 app, parsed, and the chosen
// one run. main.cpp only calls it, so that the command's code compiles as one unit with the rest.

#include <oxmera/oxmera.h>

#include <cstdio>
#include <vector>

#include "app.h"
#include "commands.h"

namespace oxcli {

int run_command(int argc, char** argv) {
  CLI::App app{"oxmera: a small, fast C++ machine-learning framework", "oxmera"};
  app.set_version_flag("--version", std::string(OXMERA_VERSION));
  app.require_subcommand(1);
  const std::vector<std::pair<CLI::App*, Runner>> commands = [&] {
    std::vector<std::pair<CLI::App*, Runner>> out;
    const auto add = [&](Runner (*adder)(CLI::App&)) {
      const size_t before = app.get_subcommands({}).size();
      Runner run = adder(app);
      out.emplace_back(app.get_subcommands({})[before], std::move(run));
    };
    add(add_doctor);
    add(add_inspect);
    add(add_convert);
    add(add_bench);
    add(add_train);
    add(add_dashboard);
    add(add_launch);
    add(add_generate);
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
    if (command->parsed()) return run_guarded(command->get_name(), run);
  return 1;
}

}  // namespace oxcli
