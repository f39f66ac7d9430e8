#include "backend/thread_governor.h"

#include <fcntl.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ox::detail {

namespace {

constexpr int64_t kIntervalNs = 100'000'000;
constexpr int64_t kMinRunnableNs = 20'000'000;  // less says too little to act on
constexpr int64_t kMaxBackoffNs = 16'000'000'000;

bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("OXMERA_ADAPTIVE_THREADS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return on;
}

// This thread's time on a CPU and time runnable but waiting for one, in ns; false where the
// kernel does not say (no procfs, no schedstat).
bool read_schedstat(int64_t& running, int64_t& waiting) {
  const int fd = ::open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char text[128];
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  if (n <= 0) return false;
  text[n] = '\0';
  long long run = 0, wait = 0;
  if (std::sscanf(text, "%lld %lld", &run, &wait) != 2) return false;
  running = run;
  waiting = wait;
  return true;
}

struct ThreadLoad {
  GovernorState state;
  int64_t running = -1, waiting = 0;  // at the last sample; -1 before the first
  bool off = false;
};
thread_local ThreadLoad t_load;
thread_local int t_requested = 0;

}  // namespace

constinit thread_local int64_t t_next_load_sample_ns = 0;

void note_requested_threads(int n) {
  t_requested = n;
  t_load.state = GovernorState{};  // a new ceiling starts at the ceiling
}

int requested_threads() {
  if (t_requested == 0) t_requested = omp_get_max_threads();  // before the governor lowers it
  return t_requested;
}

void govern_step(GovernorState& s, int64_t runnable_ns, int64_t waited_ns, int64_t now_ns) {
  if (runnable_ns < kMinRunnableNs) return;
  const bool crowded = 3 * waited_ns > runnable_ns;
  const bool quiet = 10 * waited_ns < runnable_ns;
  if (crowded && s.limit > 1) {
    --s.limit;
    // A try upwards that brought the waiting back: wait twice as long before the next.
    s.backoff_ns = s.probing ? std::min(2 * s.backoff_ns, kMaxBackoffNs) : s.backoff_ns;
    s.probing = false;
    s.probe_at_ns = now_ns + s.backoff_ns;
  } else if (quiet && s.limit < s.requested && now_ns >= s.probe_at_ns) {
    ++s.limit;
    s.probing = true;
    s.probe_at_ns = now_ns + s.backoff_ns;
  } else if (quiet && s.probing) {  // the try held
    s.probing = false;
    s.backoff_ns = GovernorState{}.backoff_ns;
  }
}

void sample_thread_load(int64_t now_ns) {
  t_next_load_sample_ns = now_ns + kIntervalNs;
  ThreadLoad& l = t_load;
  if (l.off || omp_in_parallel()) return;
  int64_t running = 0, waiting = 0;
  if (!enabled() || !read_schedstat(running, waiting)) {
    l.off = true;
    return;
  }
  GovernorState& s = l.state;
  if (s.requested == 0) s.requested = s.limit = requested_threads();  // since the last request
  if (l.running >= 0) {
    const int before = s.limit;
    govern_step(s, (running - l.running) + (waiting - l.waiting), waiting - l.waiting, now_ns);
    // OpenBLAS follows the calling thread's OpenMP count, so this one call sets both.
    if (s.limit != before) omp_set_num_threads(s.limit);
  }
  l.running = running;
  l.waiting = waiting;
}

}  // namespace ox::detail
