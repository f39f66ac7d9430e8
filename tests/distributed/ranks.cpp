#include "ranks.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <oxmera/distributed.h>

namespace oxtest {

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

int child_rank() {
  if (ox::distributed::is_initialized()) return ox::distributed::get_rank();
  return std::atoi(std::getenv("RANK") ? std::getenv("RANK") : "0");
}
int child_world() {
  if (ox::distributed::is_initialized()) return ox::distributed::get_world_size();
  return std::atoi(std::getenv("WORLD_SIZE") ? std::getenv("WORLD_SIZE") : "1");
}

void init_child(std::chrono::milliseconds timeout) {
  const char* given = std::getenv("OXMERA_TEST_BACKEND");
  const std::string backend = given && *given ? given : "gloo";
  ox::distributed::init_process_group({.backend = backend, .timeout = timeout});
  EXPECT_EQ(ox::distributed::default_group()->backend(), backend);
}

bool run_under_mpirun(int world, const std::vector<std::string>& children, std::string& output) {
  std::string filter;
  for (const std::string& c : children) {
    if (!filter.empty()) filter += ':';
    filter += "DistChild.DISABLED_";
    filter += c;
  }
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const auto log = std::filesystem::temp_directory_path() /
                   ("oxmera-mpirun-" + std::to_string(::getpid()) + ".log");
  // As root in CI: --allow-run-as-root. OpenMPI leaks at exit by design: no leak check there.
  const std::string command =
      "env -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX timeout 120 mpirun --allow-run-as-root "
      "--oversubscribe -n " +
      std::to_string(world) +
      " -x OXMERA_TEST_BACKEND=mpi -x OMP_NUM_THREADS=1 -x ASAN_OPTIONS=detect_leaks=0 " + exe +
      " --gtest_color=no --gtest_filter=" + filter + " --gtest_also_run_disabled_tests > " +
      log.string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  output = text.str();
  std::filesystem::remove(log);
  return status == 0;
}

std::vector<RankResult> run_ranks(int world, const std::string& child, RankOptions options) {
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe").string();
  const int port = options.port ? options.port : free_port();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("oxmera-ranks-" + std::to_string(::getpid()) + "-" + child);
  std::filesystem::create_directories(dir);
  const auto start = std::chrono::steady_clock::now();
  std::vector<pid_t> pids(size_t(world), -1);
  std::vector<RankResult> results(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    std::map<std::string, std::string> env = {
        {"RANK", std::to_string(r)},           {"LOCAL_RANK", std::to_string(r)},
        {"WORLD_SIZE", std::to_string(world)}, {"MASTER_ADDR", "127.0.0.1"},
        {"MASTER_PORT", std::to_string(port)}, {"OMP_NUM_THREADS", "1"}};
    for (const auto& [k, v] : options.env) env[k] = v;
    for (const auto& [k, v] : options.rank_env[r]) env[k] = v;
    const std::string log = (dir / ("rank" + std::to_string(r) + ".log")).string();
    const pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
      // A rank runs its one child test whichever shard of the suite started it.
      ::unsetenv("GTEST_TOTAL_SHARDS");
      ::unsetenv("GTEST_SHARD_INDEX");
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      const std::string filter = "--gtest_filter=DistChild.DISABLED_" + child;
      ::execl(exe.c_str(), exe.c_str(), filter.c_str(), "--gtest_also_run_disabled_tests",
              static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids[size_t(r)] = pid;
  }
  int running = world;
  while (running > 0) {
    const bool late = std::chrono::steady_clock::now() - start > options.limit;
    for (int r = 0; r < world; ++r) {
      if (pids[size_t(r)] < 0) continue;
      if (late) ::kill(pids[size_t(r)], SIGKILL);
      int status = 0;
      if (::waitpid(pids[size_t(r)], &status, late ? 0 : WNOHANG) != pids[size_t(r)]) continue;
      RankResult& res = results[size_t(r)];
      res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (WIFEXITED(status)) res.exit_code = WEXITSTATUS(status);
      if (WIFSIGNALED(status)) res.signal = WTERMSIG(status);
      pids[size_t(r)] = -1;
      --running;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < world; ++r) {
    std::ifstream in(dir / ("rank" + std::to_string(r) + ".log"));
    std::stringstream text;
    text << in.rdbuf();
    results[size_t(r)].output = text.str();
  }
  std::filesystem::remove_all(dir);
  return results;
}

void expect_all_passed(const std::vector<RankResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) expect_passed(results, r);
}

void expect_passed(const std::vector<RankResult>& results, size_t r) {
  {
    const RankResult& res = results[r];
    EXPECT_TRUE(res.exit_code == 0 && res.signal == 0)
        << "rank " << r << " exit " << res.exit_code << " signal " << res.signal << " after "
        << res.seconds << " s; its output:\n"
        << res.output;
    // A child that ran no test (a typo in its name) passes vacuously: refuse that.
    EXPECT_NE(res.output.find("[  PASSED  ] 1 test"), std::string::npos)
        << "rank " << r << " did not run its child test:\n"
        << res.output;
  }
}

}  // namespace oxtest
