#pragma once
// The subcommands of `oxmera`: each adds itself to the app and runs when chosen. Exit codes:
// 0 done, 1 the program itself failed, 2 bad input (a file that does not parse, a bad flag).

#include <CLI/CLI.hpp>

#include <functional>

namespace oxcli {

// Registers a subcommand; `run` is called after parsing when it was chosen and returns the
// process's exit code.
using Runner = std::function<int()>;
Runner add_doctor(CLI::App& app);
Runner add_inspect(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_train(CLI::App& app);
Runner add_dashboard(CLI::App& app);

}  // namespace oxcli
