#pragma once
// Multi-process tests: run_ranks starts N copies of this test program, each running one
// DIST_CHILD test as one rank (RANK, WORLD_SIZE, MASTER_ADDR/PORT set, a free port picked at
// run time), and reports how each ended. A child test is a disabled gtest, so ctest and a plain
// run skip it; only run_ranks runs it.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#define DIST_CHILD(name) TEST(DistChild, DISABLED_##name)

namespace oxtest {

struct RankResult {
  int exit_code = -1;  // the process's exit status, or -1 when a signal ended it
  int signal = 0;      // the signal that ended it (SIGKILL when run_ranks had to)
  double seconds = 0;  // from the start until it ended
  std::string output;  // its stdout and stderr
};

struct RankOptions {
  std::map<std::string, std::string> env;                      // for every rank
  std::map<int, std::map<std::string, std::string>> rank_env;  // for one rank
  std::chrono::seconds limit{50};  // ranks still running then are killed
  int port = 0;                    // 0: a free one
};

// Runs DistChild.DISABLED_<child> in `world` processes; returns each rank's result.
std::vector<RankResult> run_ranks(int world, const std::string& child, RankOptions options = {});
// Expects rank r to have exited 0 after passing its child test, printing its output if not.
void expect_passed(const std::vector<RankResult>& results, size_t r);
// expect_passed for every rank.
void expect_all_passed(const std::vector<RankResult>& results);
// A TCP port nobody listens on now.
int free_port();
// The child's rank and world size: the default group's once it exists, else the environment's
// (run_ranks sets RANK and WORLD_SIZE; mpirun sets its own).
int child_rank();
int child_world();
// init_process_group with the backend OXMERA_TEST_BACKEND names (gloo when unset).
void init_child(std::chrono::milliseconds timeout = std::chrono::seconds(30));
// Runs the child tests under `mpirun -n world` with OXMERA_TEST_BACKEND=mpi; true if all passed.
// Skips the calling test when this build has no MPI or mpirun is missing.
bool run_under_mpirun(int world, const std::vector<std::string>& children, std::string& output);

}  // namespace oxtest
