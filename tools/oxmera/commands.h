#pragma once
// The subcommands of `oxmera`: each adds itself to the app and runs when chosen. Exit codes:
// 0 done, 1 the program itself failed (out of memory included), 2 bad input (a file that does not
// parse or is not a regular file, a bad flag).

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace oxcli {

// Registers a subcommand; `run` is called after parsing when it was chosen and returns the
// process's exit code.
using Runner = std::function<int()>;
Runner add_doctor(CLI::App& app);
Runner add_inspect(CLI::App& app);
Runner add_convert(CLI::App& app);
Runner add_bench(CLI::App& app);
Runner add_train(CLI::App& app);
Runner add_dashboard(CLI::App& app);
Runner add_launch(CLI::App& app);
Runner add_generate(CLI::App& app);

// Runs a chosen subcommand so that it always ends with a message and an exit code, whatever
// escapes it (a subcommand catches its input's errors itself and returns 2): an ox::Error is
// printed with its kind (1), a filesystem error is a path given that cannot be used (2),
// running out of memory and anything else is 1. Nothing reaches std::terminate.
int run_guarded(const std::string& command, const Runner& run);

}  // namespace oxcli
