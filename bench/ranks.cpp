// The distributed rows' processes: the process asked for a row is rank 0 and starts the others
// as copies of itself, which find their rank in the environment.

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

extern char** environ;

namespace oxbench {

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A TCP port nobody listens on now (the kernel's pick).
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
    port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

// This process's arguments, as it was started.
std::vector<std::string> own_arguments() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t start = 0; start < all.size();) {
    const size_t end = std::min(all.find('\0', start), all.size());
    args.push_back(all.substr(start, end - start));
    start = end + 1;
  }
  return args;
}

// Starts this program again as `rank`, its output discarded; returns its pid (0 on failure).
pid_t start_rank(int rank, int port, std::string_view id) {
  std::vector<std::string> args = own_arguments();
  if (args.empty()) return 0;
  std::vector<std::string> vars = {"OXBENCH_RANK=" + std::to_string(rank),
                                   "OXBENCH_PORT=" + std::to_string(port),
                                   "OXBENCH_ROW=" + std::string(id)};
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("OXBENCH_", 0) != 0) vars.emplace_back(*e);
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  for (std::string& v : vars) envp.push_back(v.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int failed =
      posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return failed ? 0 : pid;
}

int threads_per_rank() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / kRanks);
}

// Writes or reads exactly n bytes; false when the connection fails.
bool move_bytes(int fd, char* data, size_t n, bool sending) {
  while (n > 0) {
    const ssize_t k = sending ? send(fd, data, n, MSG_NOSIGNAL) : recv(fd, data, n, 0);
    if (k <= 0) return false;
    data += k;
    n -= size_t(k);
  }
  return true;
}

// Two connected TCP sockets on 127.0.0.1 (-1s on failure).
std::pair<int, int> loopback_pair() {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int a = -1, b = -1;
  if (listener >= 0 && bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      listen(listener, 1) == 0 &&
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    a = socket(AF_INET, SOCK_STREAM, 0);
    if (a >= 0 && connect(a, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
      b = accept(listener, nullptr, nullptr);
  }
  if (listener >= 0) close(listener);
  for (const int fd : {a, b}) {
    const int one = 1;
    if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return {a, b};
}

}  // namespace

double loopback_ring_GBps() {
  static_assert(kRanks == 2, "the traffic below is a 2-rank ring's");
  const auto [a, b] = loopback_pair();
  double best = 0;
  if (a >= 0 && b >= 0) {
    // A 2-rank ring all-reduce's traffic: two phases, each rank sending and receiving half.
    const size_t half = size_t(kAllReduceFloats) * 4 / 2;
    std::vector<char> out_a(half, 1), out_b(half, 2), in_a(half), in_b(half);
    bool ok = true;
    for (int run = 0; run < 10 && ok; ++run) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int phase = 0; phase < 2; ++phase) {
        bool sent_a = false, sent_b = false, got_b = false;
        std::thread sender_a([&] { sent_a = move_bytes(a, out_a.data(), half, true); });
        std::thread sender_b([&] { sent_b = move_bytes(b, out_b.data(), half, true); });
        std::thread receiver_b([&] { got_b = move_bytes(b, in_b.data(), half, false); });
        const bool got_a = move_bytes(a, in_a.data(), half, false);
        sender_a.join();
        sender_b.join();
        receiver_b.join();
        ok = ok && sent_a && sent_b && got_a && got_b;
      }
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (ok) best = std::max(best, 4.0 * double(kAllReduceFloats) * 1e-9 / t);
    }
  }
  for (const int fd : {a, b})
    if (fd >= 0) close(fd);
  return best;
}

bool is_distributed_row(std::string_view id) {
  return id == "ddp_cnn_step" || id == "allreduce64M";
}

bool skipped_here(std::string_view id) { return *env("OXBENCH_ROW") && id != env("OXBENCH_ROW"); }

Timing as_ranks(std::string_view id, const std::function<Timing(const RankInfo&)>& fn) {
  if (*env("OXBENCH_RANK")) {  // a started rank
    return fn({.rank = std::atoi(env("OXBENCH_RANK")),
               .world = kRanks,
               .port = std::atoi(env("OXBENCH_PORT")),
               .threads = threads_per_rank()});
  }
  const int port = free_port();
  std::vector<pid_t> others;
  for (int r = 1; r < kRanks; ++r)
    if (const pid_t pid = start_rank(r, port, id)) others.push_back(pid);
  Timing result;
  if (port && static_cast<int>(others.size()) == kRanks - 1) {
    try {
      result = fn({.rank = 0, .world = kRanks, .port = port, .threads = threads_per_rank()});
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oxmera_bench: rank 0 of %.*s failed: %s\n", static_cast<int>(id.size()),
                   id.data(), e.what());
    }
  } else {
    std::fprintf(stderr, "oxmera_bench: could not start the ranks of %.*s\n",
                 static_cast<int>(id.size()), id.data());
  }
  for (const pid_t pid : others) {
    if (!result) kill(pid, SIGKILL);
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      result.reset();  // a rank that failed makes the figure void
  }
  return result;
}

}  // namespace oxbench
