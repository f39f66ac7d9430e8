#pragma once
// Runs the built `oxmera` as a user runs it, for the command's tests: arguments, a working
// folder, stdin from /dev/null, stdout captured through a pipe and stderr through a file, and a
// deadline after which the process is killed, so a command that blocks (a FIFO, a hang) fails
// its test instead of hanging the suite.

#include <sys/resource.h>
#include <sys/types.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace oxtest {

struct CliResult {
  int code = -1;  // the exit status, or minus the signal that ended the process
  bool timed_out = false;
  std::string out, err;
};

struct CliOptions {
  int deadline_s = 300;     // generous: a sanitizer build on a loaded machine is slow
  rlim_t memory_limit = 0;  // > 0: RLIMIT_AS for the child (with one BLAS/OpenMP thread)
  // Sees stdout as it grows and the process id (to signal it), until it returns true.
  std::function<bool(const std::string& out, pid_t pid)> on_output = nullptr;
};

CliResult run_oxmera(const std::vector<std::string>& args, const std::filesystem::path& dir,
                     const CliOptions& options = {});

// The exit code, the deadline if it struck, stdout and stderr: for failure messages.
std::string describe(const CliResult& r);

// The bytes of each "model." tensor of a checkpoint, by name (for bitwise comparisons).
std::map<std::string, std::vector<uint8_t>> model_bytes(const std::string& file);

}  // namespace oxtest
