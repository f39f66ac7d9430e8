// The backend registry and the process-wide runtime settings (runtime.h).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <sched.h>

#include <algorithm>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/cpu_allocator.h"
#include "backend/thread_governor.h"
#include "test_util.h"

namespace {

using oxtest::caught;
using oxtest::kind_of;

const ox::BackendInfo* find_info(const std::vector<ox::BackendInfo>& infos,
                                 const std::string& name) {
  for (const auto& i : infos)
    if (i.name == name) return &i;
  return nullptr;
}

TEST(Backend, InfosListCpuAvailable) {
  const auto infos = ox::backend_infos();
  EXPECT_EQ(infos.size(), 2u);  // every backend this library knows, built or not
  const ox::BackendInfo* cpu = find_info(infos, "cpu");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->available);
  EXPECT_TRUE(cpu->reason.empty()) << cpu->reason;
  ASSERT_EQ(cpu->devices.size(), 1u);
  EXPECT_FALSE(cpu->devices[0].empty());
  EXPECT_FALSE(cpu->features.empty());
  for (const auto& [key, value] : cpu->features) {
    EXPECT_FALSE(key.empty());
    EXPECT_FALSE(value.empty()) << key;
  }
}

TEST(Backend, InfosListCudaUnavailableWithAReason) {
  OXTEST_SKIP_ON_TEST_DEVICE("a device backend is registered");
  const auto infos = ox::backend_infos();
  const ox::BackendInfo* cuda = find_info(infos, "cuda");
  ASSERT_NE(cuda, nullptr);
  EXPECT_FALSE(cuda->available);
  EXPECT_FALSE(cuda->reason.empty());
  EXPECT_TRUE(cuda->devices.empty());
}

TEST(Backend, CpuBackendIsRegistered) {
  ox::Backend* cpu = ox::find_backend(ox::DeviceType::CPU);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->device_type(), ox::DeviceType::CPU);
  EXPECT_EQ(cpu->device_count(), 1);
  EXPECT_EQ(&ox::backend_for(ox::Device::cpu(), "probe"), cpu);
  EXPECT_EQ(&ox::backend_for(ox::DeviceType::CPU, "probe"), cpu);
  EXPECT_EQ(&cpu->allocator(0), &ox::cpu::cpu_allocator());
}

TEST(Backend, MissingCudaBackendIsADeviceError) {
  OXTEST_SKIP_ON_TEST_DEVICE("a device backend is registered");
  EXPECT_EQ(ox::find_backend(ox::DeviceType::CUDA), nullptr);
  const ox::Error e = caught([] { ox::backend_for(ox::DeviceType::CUDA, "probe"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_EQ(std::string(e.what()).rfind("[probe]", 0), 0u) << e.what();
  EXPECT_EQ(kind_of([] { ox::backend_for(ox::Device::cuda(0), "probe"); }), ox::ErrorKind::Device);
  // Through the public API too.
  EXPECT_EQ(kind_of([] { ox::zeros({2}, {.device = ox::Device::cuda()}); }), ox::ErrorKind::Device);
  EXPECT_EQ(kind_of([] { ox::rand({2}, {.device = ox::Device::cuda()}); }), ox::ErrorKind::Device);
}

TEST(Backend, CpuDeviceIndexOutOfRangeIsADeviceError) {
  const ox::Error e = caught([] { ox::backend_for(ox::Device(ox::DeviceType::CPU, 1), "probe"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_EQ(kind_of([] { ox::backend_for(ox::Device(ox::DeviceType::CPU, -1), "probe"); }),
            ox::ErrorKind::Device);
  EXPECT_EQ(kind_of([] { ox::zeros({2}, {.device = ox::Device(ox::DeviceType::CPU, 1)}); }),
            ox::ErrorKind::Device);
}

TEST(Backend, EmptyCacheReturnsTheCpuCache) {
  const ox::DeviceGuard on_cpu(ox::Device::cpu());  // the CPU's cache, whatever the test device
  ox::cpu::CachingAllocator& global = ox::cpu::cpu_allocator();
  const size_t saved_limit = global.cache_limit();
  global.set_cache_limit(size_t{64} << 20);
  { ox::Tensor t = ox::zeros({int64_t{1} << 18}, ox::kF32); }  // 1 MiB, freed into the cache
  EXPECT_GE(global.cached_bytes(), size_t{1} << 20);
  ox::empty_cache();
  EXPECT_EQ(global.cached_bytes(), 0u);
  global.set_cache_limit(saved_limit);
}

TEST(Threads, SetAndGet) {
  const int saved = ox::get_num_threads();
  EXPECT_GE(saved, 1);
  // At most the hardware threads (a larger request is capped: out_of_memory_test.cpp).
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  ASSERT_EQ(sched_getaffinity(0, sizeof(cpus), &cpus), 0);
  const int n = std::min(3, CPU_COUNT(&cpus));
  ox::set_num_threads(n);
  EXPECT_EQ(ox::get_num_threads(), n);
  ox::set_num_threads(1);
  EXPECT_EQ(ox::get_num_threads(), 1);
  ox::set_num_threads(saved);
  EXPECT_EQ(ox::get_num_threads(), saved);
}

TEST(Threads, NonPositiveCountIsAValueErrorAndChangesNothing) {
  const int saved = ox::get_num_threads();
  EXPECT_EQ(kind_of([] { ox::set_num_threads(0); }), ox::ErrorKind::Value);
  EXPECT_EQ(kind_of([] { ox::set_num_threads(-4); }), ox::ErrorKind::Value);
  EXPECT_EQ(ox::get_num_threads(), saved);
}

}  // namespace

// ---- The thread governor's decisions (backend/thread_governor.h) ------------------------------

namespace governor {

using ox::detail::govern_step;
using ox::detail::GovernorState;
constexpr int64_t kMs = 1'000'000, kS = 1'000 * kMs;

TEST(ThreadGovernor, DropsAThreadWhenAThirdOfTheTimeWasSpentWaitingForACore) {
  GovernorState s{.requested = 4, .limit = 4};
  govern_step(s, 100 * kMs, 30 * kMs, 0);  // under a third: stays
  EXPECT_EQ(s.limit, 4);
  govern_step(s, 100 * kMs, 34 * kMs, 0);
  EXPECT_EQ(s.limit, 3);
  govern_step(s, 100 * kMs, 60 * kMs, 100 * kMs);
  govern_step(s, 100 * kMs, 60 * kMs, 200 * kMs);
  EXPECT_EQ(s.limit, 1);
  govern_step(s, 100 * kMs, 90 * kMs, 300 * kMs);  // never below one
  EXPECT_EQ(s.limit, 1);
}

TEST(ThreadGovernor, IgnoresIntervalsTooShortToTellAnything) {
  GovernorState s{.requested = 2, .limit = 2};
  govern_step(s, 19 * kMs, 19 * kMs, 0);  // under 20 ms runnable
  EXPECT_EQ(s.limit, 2);
}

TEST(ThreadGovernor, TriesOneMoreAfterAQuietSecondAndBacksOffWhenTheWaitingReturns) {
  GovernorState s{.requested = 2, .limit = 2};
  govern_step(s, 100 * kMs, 50 * kMs, 0);
  ASSERT_EQ(s.limit, 1);
  govern_step(s, 100 * kMs, 0, kS - kMs);  // quiet, but not yet a second
  EXPECT_EQ(s.limit, 1);
  govern_step(s, 100 * kMs, 0, kS);  // quiet for a second: one more
  EXPECT_EQ(s.limit, 2);
  govern_step(s, 100 * kMs, 50 * kMs, kS + 100 * kMs);  // crowded again: back, wait 2 s
  EXPECT_EQ(s.limit, 1);
  govern_step(s, 100 * kMs, 0, 3 * kS);
  EXPECT_EQ(s.limit, 1);
  govern_step(s, 100 * kMs, 0, 3 * kS + 100 * kMs);
  EXPECT_EQ(s.limit, 2);
  // Failed tries double the wait up to 16 s.
  int64_t now = 3 * kS + 200 * kMs;
  for (int i = 0; i < 10; ++i) {
    govern_step(s, 100 * kMs, 50 * kMs, now);
    ASSERT_EQ(s.limit, 1);
    now = s.probe_at_ns;
    govern_step(s, 100 * kMs, 0, now);
    ASSERT_EQ(s.limit, 2);
  }
  EXPECT_EQ(s.backoff_ns, 16 * kS);
  // A try that holds: back to a second, never above the count asked for.
  govern_step(s, 100 * kMs, 0, now + 100 * kMs);
  EXPECT_EQ(s.backoff_ns, kS);
  EXPECT_FALSE(s.probing);
  govern_step(s, 100 * kMs, 0, now + 100 * kS);
  EXPECT_EQ(s.limit, 2);
}

TEST(ThreadGovernor, TheCountAskedForIsWhatGetNumThreadsReports) {
  const int before = ox::get_num_threads();
  ox::set_num_threads(1);
  EXPECT_EQ(ox::get_num_threads(), 1);
  ox::set_num_threads(before);
  EXPECT_EQ(ox::get_num_threads(), before);
}

}  // namespace governor
