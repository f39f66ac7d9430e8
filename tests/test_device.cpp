// OXMERA_TEST_DEVICE runs a test program on another device: every tensor the tests make
// without naming a device is made there (the default device), and every value they read comes
// back through a copy to the host, so the suite's independent expected values check that
// device's kernels. `cuda` (or `cuda:N`) uses a GPU; `stand-in` registers the host stand-in
// for a GPU (device_stand_in.h) as cuda, so that CI proves the harness and finds ops that make
// tensors on the CPU behind the caller's back. With OXMERA_PRIMITIVES_SEEN=FILE a stand-in run
// writes the primitives it called to FILE, for the parity coverage check (device_test.cpp).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "device_stand_in.h"

namespace {

class RecordPrimitives : public ::testing::Environment {
 public:
  explicit RecordPrimitives(std::string path) : path_(std::move(path)) {}
  void TearDown() override {
    std::ofstream out(path_);
    for (const std::string& name : oxtest::primitives_called()) out << name << '\n';
    if (!out) ADD_FAILURE() << "cannot write " << path_;
  }

 private:
  std::string path_;
};

// The tests that set two threads check how work splits between them: the thread governor
// (backend/thread_governor.h) would take one away whenever ctest runs another program beside
// them. Its decisions are tested directly (registry_test.cpp); the `oxmera` runs of the CLI
// tests keep it on.
const bool g_fixed_threads = [] { return ::setenv("OXMERA_ADAPTIVE_THREADS", "0", 0) == 0; }();

const bool g_device_chosen = [] {
  const char* env = std::getenv("OXMERA_TEST_DEVICE");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "cpu") return false;
  if (std::string_view(env) == "stand-in") {
    oxtest::use_device_stand_in();
    ox::set_default_device(ox::Device::cuda(0));
    if (const char* seen = std::getenv("OXMERA_PRIMITIVES_SEEN"))
      ::testing::AddGlobalTestEnvironment(new RecordPrimitives(seen));
  } else {
    const ox::Device device = ox::Device::parse(env);
    if (const char* seen = std::getenv("OXMERA_PRIMITIVES_SEEN")) {
      oxtest::record_cuda_primitives();
      ::testing::AddGlobalTestEnvironment(new RecordPrimitives(seen));
    }
    ox::set_default_device(device);
  }
  std::fprintf(stderr, "oxmera tests: tensors made on %s by default (OXMERA_TEST_DEVICE=%s)\n",
               ox::default_device().str().c_str(), env);
  return true;
}();

}  // namespace
