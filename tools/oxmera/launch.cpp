// `oxmera launch -n N [--nnodes M --node-rank K --master-addr A --master-port P] -- COMMAND...`:
// torchrun for oxmera. Starts N local processes of COMMAND with RANK, LOCAL_RANK, WORLD_SIZE,
// LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set (and OMP_NUM_THREADS, unless set, to this
// machine's cores shared among them), forwards SIGINT/SIGTERM/SIGHUP to them, and when one
// fails ends the others: SIGTERM, then SIGKILL after --grace seconds. Exits with the first
// failure's code (128 + signal for a signal), or 0 when every rank succeeded.

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "checks.h"
#include "commands.h"

namespace oxcli {

namespace {

volatile sig_atomic_t g_forward_signal = 0;
void on_signal(int sig) { g_forward_signal = sig; }

// A port nobody listens on now (single-machine runs without --master-port).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 29500;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

struct LaunchConfig {
  int nproc = 1, nnodes = 1, node_rank = 0, master_port = 0;
  double grace = 5;
  std::string master_addr = "127.0.0.1";
  std::vector<std::string> command;
};

int launch(const LaunchConfig& c) {
  if (c.command.empty()) {
    std::fprintf(stderr, "oxmera launch: no command given (oxmera launch -n 2 -- COMMAND ...)\n");
    return 2;
  }
  if (c.node_rank >= c.nnodes) {
    std::fprintf(stderr, "oxmera launch: --node-rank %d is not below --nnodes %d\n", c.node_rank,
                 c.nnodes);
    return 2;
  }
  if (c.nnodes > 1 && c.master_port == 0) {
    std::fprintf(stderr,
                 "oxmera launch: --master-port is needed with --nnodes > 1 (every "
                 "machine must name the same one)\n");
    return 2;
  }
  const int port = c.master_port ? c.master_port : free_port();
  const int world = c.nproc * c.nnodes;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string threads = std::to_string(std::max(1u, cores / unsigned(c.nproc)));

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);

  std::vector<pid_t> pids(static_cast<size_t>(c.nproc), -1);
  for (int local = 0; local < c.nproc; ++local) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("oxmera launch: fork");
      for (const pid_t p : pids)
        if (p > 0) ::kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      const int rank = c.node_rank * c.nproc + local;
      ::setenv("RANK", std::to_string(rank).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(local).c_str(), 1);
      ::setenv("GROUP_RANK", std::to_string(c.node_rank).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(c.nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", c.master_addr.c_str(), 1);
      ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
      ::setenv("OMP_NUM_THREADS", threads.c_str(), 0);
      std::vector<char*> argv;
      for (const std::string& a : c.command) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execvp(argv[0], argv.data());
      std::fprintf(stderr, "oxmera launch: cannot run %s: %s\n", argv[0], std::strerror(errno));
      ::_exit(127);
    }
    pids[size_t(local)] = pid;
  }

  int running = c.nproc, exit_code = 0, failed_rank = -1;
  std::chrono::steady_clock::time_point kill_at{};
  bool terminating = false;
  auto terminate_all = [&](int sig) {
    for (const pid_t p : pids)
      if (p > 0) ::kill(p, sig);
  };
  while (running > 0) {
    if (g_forward_signal) {
      const int sig = g_forward_signal;
      g_forward_signal = 0;
      terminate_all(sig);
      if (!terminating) {
        terminating = true;
        kill_at =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(c.grace * 1000));
        if (exit_code == 0) exit_code = 128 + sig;
      }
    }
    if (terminating && std::chrono::steady_clock::now() > kill_at) terminate_all(SIGKILL);
    int status = 0;
    const pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    for (int local = 0; local < c.nproc; ++local) {
      if (pids[size_t(local)] != done) continue;
      pids[size_t(local)] = -1;
      --running;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code != 0 && failed_rank < 0 && !terminating) {
        failed_rank = c.node_rank * c.nproc + local;
        exit_code = code;
        if (WIFSIGNALED(status))
          std::fprintf(stderr,
                       "oxmera launch: rank %d was ended by signal %d (%s); ending the "
                       "other ranks\n",
                       failed_rank, WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
          std::fprintf(stderr,
                       "oxmera launch: rank %d exited with code %d; ending the other ranks\n",
                       failed_rank, code);
        terminating = true;
        terminate_all(SIGTERM);
        kill_at =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(int64_t(c.grace * 1000));
      }
    }
  }
  return exit_code;
}

}  // namespace

Runner add_launch(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("launch",
                                     "start N ranks of a command for ox::distributed (as "
                                     "torchrun): oxmera launch -n 2 -- oxmera train --ddp");
  auto config = std::make_shared<LaunchConfig>();
  add_integer_option(cmd, "-n,--nproc-per-node", config->nproc, 1, 1024,
                     "processes on this machine");
  add_integer_option(cmd, "--nnodes", config->nnodes, 1, 1 << 16, "machines in the run");
  add_integer_option(cmd, "--node-rank", config->node_rank, 0, (1 << 16) - 1,
                     "this machine's place among them (0 hosts the store)");
  cmd->add_option("--master-addr", config->master_addr,
                  "the address of node 0, where rank 0 serves the store")
      ->capture_default_str();
  add_integer_option(cmd, "--master-port", config->master_port, 0, 65535,
                     "the store's port (default: a free one; needed with --nnodes > 1)");
  cmd->add_option("--grace", config->grace,
                  "seconds between SIGTERM and SIGKILL when ending the ranks")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  cmd->add_option("command", config->command, "the command each rank runs (after --)")->required();
  cmd->positionals_at_end();
  return [config] { return launch(*config); };
}

}  // namespace oxcli
