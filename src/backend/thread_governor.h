#pragma once
// Fewer CPU threads while other processes take the cores, as many as asked once they leave.
//
// OpenMP's workers (GNU libgomp) spin for ~12 ms after each parallel region before they sleep.
// On an idle machine that makes the next region start at once; on a busy one each spinning
// worker takes a core from the process it shares it with, or from this process's own thread,
// and an epoch ran 8.7x slower beside one CPU hog on two cores. libgomp reads its spin count
// (GOMP_SPINCOUNT, OMP_WAIT_POLICY) once, before any code of ours runs, so the library cannot
// shorten it; it lowers the thread count instead, which is what that slowdown needs: no more
// runnable threads than free cores.
//
// Each thread that runs ops watches its own run-queue delay (/proc/thread-self/schedstat: the
// time it was runnable but not running). When over a third of its runnable time was spent
// waiting for a core in the last interval, its OpenMP (and so OpenBLAS) thread count drops by
// one; after a quiet spell it tries one more, and backs off longer each time that brings the
// waiting back. Results never depend on the thread count, so nothing but the speed changes.
// OXMERA_ADAPTIVE_THREADS=0 turns it off (the count asked for is used as it is).

#include <chrono>
#include <cstdint>

namespace ox::detail {

// The count asked for on this thread (set_num_threads, OMP_NUM_THREADS), which the governor
// never exceeds.
void note_requested_threads(int n);
int requested_threads();

void sample_thread_load(int64_t now_ns);
extern thread_local constinit int64_t t_next_load_sample_ns;  // constinit: no TLS wrapper call

// Called as each CPU op starts: a clock read, and a sample every 100 ms.
inline void govern_threads() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  if (now >= t_next_load_sample_ns) [[unlikely]]
    sample_thread_load(now);
}

// The decision alone, for tests: the limit after an interval in which `waited_ns` of
// `runnable_ns` was spent waiting for a core, at time `now_ns`.
struct GovernorState {
  int requested = 0;  // the ceiling
  int limit = 0;      // the count in use
  int64_t probe_at_ns = 0;
  int64_t backoff_ns = 1'000'000'000;
  bool probing = false;  // the last change was a try upwards
};
void govern_step(GovernorState& state, int64_t runnable_ns, int64_t waited_ns, int64_t now_ns);

}  // namespace ox::detail
