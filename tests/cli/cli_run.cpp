#include "cli/cli_run.h"
#include "test_paths.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace oxtest {

namespace fs = std::filesystem;

CliResult run_oxmera(const std::vector<std::string>& args, const fs::path& dir,
                     const CliOptions& options) {
  const rlim_t memory_limit = options.memory_limit;
  const std::string err_path = (dir / "stderr.txt").string();
  int out_pipe[2];
  if (pipe(out_pipe) != 0) {
    ADD_FAILURE() << "pipe: " << std::strerror(errno);
    return {};
  }
  // Everything the child needs is made before fork: it only calls async-signal-safe functions.
  std::string program = oxtest::kCliPath;
  std::vector<std::string> copies = args;
  std::vector<char*> argv = {program.data()};
  for (std::string& a : copies) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string dir_name = dir.string();
  const struct rlimit limit = {memory_limit, memory_limit};
  // Under a memory limit, one BLAS and OpenMP thread: their per-thread buffers, reserved at
  // start-up, would otherwise grow with the machine's core count.
  std::vector<std::string> env_strings = {"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"};
  std::vector<char*> envp;
  for (char** e = environ; *e != nullptr; ++e) envp.push_back(*e);
  if (memory_limit > 0)
    for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int in_fd = open("/dev/null", O_RDONLY);
    dup2(in_fd, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    const int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(err_fd, STDERR_FILENO);
    close(out_pipe[0]);
    close(out_pipe[1]);
    if (chdir(dir_name.c_str()) != 0) _exit(126);
    if (memory_limit > 0 && setrlimit(RLIMIT_AS, &limit) != 0) _exit(125);
    execve(program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(out_pipe[1]);
  CliResult result;
  bool watching = bool(options.on_output);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.deadline_s);
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    struct pollfd fd = {out_pipe[0], POLLIN, 0};
    const int ready = poll(&fd, 1, int(std::min<int64_t>(left, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t n = read(out_pipe[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    result.out.append(buffer, size_t(n));
    if (watching && options.on_output(result.out, pid)) watching = false;
  }
  close(out_pipe[0]);
  // The output can end before the process does (it closed stdout): the deadline still holds.
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  result.code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  std::ifstream err_file(err_path);
  std::ostringstream err;
  err << err_file.rdbuf();
  result.err = err.str();
  return result;
}

std::string describe(const CliResult& r) {
  return "exit " + std::to_string(r.code) + (r.timed_out ? " (killed at the deadline)" : "") +
         "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

std::map<std::string, std::vector<uint8_t>> model_bytes(const std::string& file) {
  std::map<std::string, std::vector<uint8_t>> out;
  for (const auto& [name, tensor] : ox::load_safetensors(file)) {
    if (name.rfind("model.", 0) != 0) continue;
    const ox::Tensor t = tensor.contiguous();
    const auto* begin = static_cast<const uint8_t*>(t.raw_data_ptr(t.dtype()));
    out[name].assign(begin, begin + t.numel() * int64_t(ox::dtype_size(t.dtype())));
  }
  return out;
}

}  // namespace oxtest
