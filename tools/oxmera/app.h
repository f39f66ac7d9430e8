#pragma once
// The `oxmera` command as a function: parses argv, runs the chosen subcommand and returns the
// process's exit code (commands.h says which).

namespace oxcli {

int run_command(int argc, char** argv);

}  // namespace oxcli
