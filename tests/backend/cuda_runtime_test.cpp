// The CUDA runtime without a GPU (include/oxmera/cuda.h, src/backend/cuda/): the reasons CUDA is
// refused (no driver; the toolkit's stub driver, whose cuInit fails), the embedded kernel images
// (targets, stamps, PTX that ptxas assembles), the optional-library loader. Where a GPU is
// present, the kernels run (CudaOnDevice).

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/driver.h"
#include "backend/cuda/image.h"
#include "backend/cuda/libraries.h"
#include "backend/cuda/module.h"
#include "backend/cuda_ptx.h"
#include "proven.h"
#endif

namespace {

using oxtest::caught;
using oxtest::kind_of;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---- Every build ---------------------------------------------------------------------------

TEST(CudaRuntime, RefusedWithAReasonWhereNoDeviceRuns) {
  if (ox::cuda::is_available()) GTEST_SKIP() << "CUDA is available here";
  const std::string reason = ox::cuda::unavailable_reason();
  EXPECT_FALSE(reason.empty());
  if (!ox::cuda::is_built()) {
    EXPECT_TRUE(contains(reason, "nvcc was not found") || contains(reason, "OXMERA_CUDA=OFF"))
        << reason;
    EXPECT_EQ(ox::cuda::kernel_fingerprint(), "");
    EXPECT_TRUE(ox::cuda::kernel_targets().empty());
  } else if (getenv("OXMERA_CUDA_DRIVER") == nullptr && ox::cuda::driver_version() == 0) {
    // This machine (and CI) has no driver: the reason names the library dlopen could not load.
    EXPECT_TRUE(contains(reason, "libcuda.so.1")) << reason;
  } else if (getenv("OXMERA_TEST_STUB_DRIVER") != nullptr) {
    // ctest's cuda_stub_driver: OXMERA_CUDA_DRIVER names the toolkit's stub libcuda.so.
    EXPECT_EQ(reason.rfind("cuInit failed: CUDA_ERROR_STUB_LIBRARY", 0), 0u) << reason;
    EXPECT_EQ(ox::cuda::driver_version(), 0);
  }
  if (ox::cuda::device_count() == 0) {
    const ox::Error e = caught([] { ox::cuda::get_device_properties(0); });
    EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
    EXPECT_EQ(kind_of([] { ox::cuda::kernel_form(0); }), ox::ErrorKind::Device);
  }
  EXPECT_EQ(kind_of([] { ox::cuda::get_device_properties(-1); }), ox::ErrorKind::Device);
}

TEST(CudaRuntime, DoctorsReportSaysWhy) {
  OXTEST_SKIP_ON_TEST_DEVICE("a device backend is registered: its report replaces the runtime's");
  if (ox::cuda::is_available())
    GTEST_SKIP() << "a GPU is here: the CUDA backend's report is doctor's";
  const std::vector<ox::BackendInfo> infos = ox::backend_infos();
  const auto cuda = std::find_if(infos.begin(), infos.end(),
                                 [](const ox::BackendInfo& i) { return i.name == "cuda"; });
  ASSERT_NE(cuda, infos.end());
  EXPECT_FALSE(cuda->available);  // no GPU, so no CUDA backend
  EXPECT_FALSE(cuda->reason.empty());
  std::set<std::string> keys;
  for (const auto& [key, value] : cuda->features) {
    keys.insert(key);
    EXPECT_FALSE(value.empty()) << key;
  }
  EXPECT_TRUE(keys.count("build")) << "every build says how it was built";
  if (ox::cuda::is_built()) {
    for (const char* key : {"driver", "kernel fingerprint", "kernel targets", "kernel code",
                            "cublas", "cublasLt", "nvrtc", "cusolver"})
      EXPECT_TRUE(keys.count(key)) << key;
    for (const auto& [key, value] : cuda->features) {
      if (key == "kernel fingerprint") {
        EXPECT_EQ(value, ox::cuda::kernel_fingerprint());
      }
      if (key == "kernel code") {  // PTX alone is one target, compute_75
        const bool ptx_only = ox::cuda::kernel_targets().size() == 1;
        EXPECT_EQ(value.starts_with("PTX only, for compute capability 7.5"), ptx_only) << value;
        EXPECT_EQ(value.starts_with("machine code for sm_"), !ptx_only) << value;
      }
    }
    if (!ox::cuda::is_available()) {
      EXPECT_EQ(cuda->reason, ox::cuda::unavailable_reason());
    }
  }
  EXPECT_EQ(cuda->devices.size(), size_t(ox::cuda::device_count()));
}

#ifdef OXMERA_TEST_WITH_CUDA
namespace cuda = ox::cuda::detail;

bool is_hex(const std::string& s, size_t size) {
  return s.size() == size && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

// ---- The driver loader ----------------------------------------------------------------------

TEST(CudaDriver, AMissingLibraryIsRefusedWithTheDlopenError) {
  const cuda::DriverState s = cuda::load_driver("/nonexistent/libcuda.so.1");
  EXPECT_EQ(s.driver, nullptr);
  EXPECT_EQ(s.device_count, 0);
  EXPECT_TRUE(contains(s.reason, "/nonexistent/libcuda.so.1")) << s.reason;
  EXPECT_TRUE(contains(s.reason, "No such file")) << s.reason;
  EXPECT_TRUE(contains(s.status, "not loaded")) << s.status;
}

TEST(CudaDriver, TheStubDriverLoadsButCuInitRefusesIt) {
  if (std::string(OXMERA_TEST_CUDA_STUB).empty()) GTEST_SKIP() << "the toolkit has no stub";
  const cuda::DriverState s = cuda::load_driver(OXMERA_TEST_CUDA_STUB);
  EXPECT_EQ(s.driver, nullptr);
  EXPECT_EQ(s.device_count, 0);
  EXPECT_TRUE(contains(s.reason, "cuInit")) << s.reason;
  EXPECT_TRUE(contains(s.reason, "CUDA_ERROR_STUB_LIBRARY")) << s.reason;
  EXPECT_TRUE(contains(s.status, "cuInit failed")) << s.status;
}

TEST(CudaDriver, ResultsBecomeErrorsNamingTheCall) {
  const ox::Error oom = caught([] { cuda::check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc"); });
  EXPECT_EQ(oom.kind(), ox::ErrorKind::OutOfMemory);
  EXPECT_TRUE(contains(oom.what(), "cuMemAlloc")) << oom.what();
  EXPECT_TRUE(contains(oom.what(), "CUDA_ERROR_OUT_OF_MEMORY")) << oom.what();
  const ox::Error bad = caught([] { cuda::check(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel"); });
  EXPECT_EQ(bad.kind(), ox::ErrorKind::Backend);
  EXPECT_TRUE(contains(bad.what(), "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE"))
      << bad.what();
  EXPECT_NO_THROW(cuda::check(CUDA_SUCCESS, "cuInit"));
  EXPECT_EQ(cuda::describe(nullptr, static_cast<CUresult>(12345)), "CUresult 12345");
  EXPECT_TRUE(contains(cuda::describe(nullptr, CUDA_ERROR_NO_DEVICE), "no CUDA-capable device"));
}

TEST(CudaDriver, TheModuleLoaderRefusesWithoutADevice) {
  if (ox::cuda::is_available()) GTEST_SKIP() << "CUDA is available here";
  const ox::Error e = caught([] { cuda::kernel(0, "fill", "ox_fill_w4"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device);
  EXPECT_TRUE(contains(e.what(), ox::cuda::unavailable_reason())) << e.what();
}

// ---- The optional libraries ------------------------------------------------------------------

TEST(CudaLibraries, DlopenFirstTakesTheFirstThatLoadsAndRecordsEachFailure) {
  const cuda::Library none = cuda::dlopen_first("nope", {"libox_nope.so.2", "libox_nope.so.1"});
  EXPECT_EQ(none.handle, nullptr);
  EXPECT_EQ(none.name, "nope");
  EXPECT_TRUE(contains(none.reason, "libox_nope.so.2")) << none.reason;
  EXPECT_TRUE(contains(none.reason, "libox_nope.so.1")) << none.reason;
  const cuda::Library libc = cuda::dlopen_first("c", {"libox_nope.so.1", "libc.so.6"});
  EXPECT_NE(libc.handle, nullptr);
  EXPECT_EQ(libc.soname, "libc.so.6");
  EXPECT_TRUE(libc.reason.empty()) << libc.reason;
  const std::vector<cuda::Library>& libs = cuda::optional_libraries();
  ASSERT_EQ(libs.size(), 4u);
  for (const cuda::Library& lib : libs)
    EXPECT_TRUE(lib.handle != nullptr ? !lib.soname.empty() : !lib.reason.empty()) << lib.name;
}

// ---- The embedded kernels ----------------------------------------------------------------------

std::vector<int> configured_targets() {  // from CMake's list, not from the library's table
  std::vector<int> targets;
  std::string list = OXMERA_TEST_CUDA_TARGETS;
  for (size_t start = 0; start < list.size();) {
    const size_t end = std::min(list.find(',', start), list.size());
    targets.push_back(std::stoi(list.substr(start, end - start)));
    start = end + 1;
  }
  return targets;
}

TEST(CudaKernelImage, TheFingerprintIsStableAndCoversEveryFamily) {
  const std::string f = ox::cuda::kernel_fingerprint();
  EXPECT_TRUE(is_hex(f, 16)) << f;
  EXPECT_EQ(f, ox::cuda::kernel_fingerprint());
  ASSERT_FALSE(cuda::kernel_images().empty());
  std::set<std::string> stamps;
  for (const cuda::KernelImage* image : cuda::kernel_images()) {
    EXPECT_TRUE(is_hex(image->stamp, 16)) << image->family << ": " << image->stamp;
    stamps.insert(image->stamp);
  }
  EXPECT_EQ(stamps.size(), cuda::kernel_images().size()) << "each family has its own stamp";
  EXPECT_EQ(&cuda::kernel_image("fill"), &cuda::kernel_image("fill"));
  EXPECT_EQ(kind_of([] { cuda::kernel_image("no_such_family"); }), ox::ErrorKind::Internal);
}

TEST(CudaKernelImage, MachineCodeHoldsExactlyTheConfiguredTargets) {
  // Empty on a machine without a GPU (CI's): PTX only.
  const std::vector<int> expected = configured_targets();
  EXPECT_EQ(cuda::built_targets(), expected);
  std::vector<std::string> names;
  for (int t : expected) names.push_back("sm_" + std::to_string(t));
  names.push_back("compute_75");
  EXPECT_EQ(ox::cuda::kernel_targets(), names);
  EXPECT_EQ(cuda::kernel_build().ptx_target, 75);
  for (const cuda::KernelImage* image : cuda::kernel_images()) {
    if (expected.empty()) {
      EXPECT_EQ(image->machine_code, nullptr) << image->family;
      EXPECT_EQ(image->machine_code_size, 0u) << image->family;
      continue;
    }
    std::vector<int> archs;
    for (const cuda::FatbinEntry& e :
         cuda::parse_fatbin(image->machine_code, image->machine_code_size)) {
      EXPECT_FALSE(e.is_ptx) << image->family << ": PTX belongs in the PTX image";
      EXPECT_GT(e.payload_size, 0u);
      archs.push_back(e.arch);
    }
    std::sort(archs.begin(), archs.end());
    EXPECT_EQ(archs, expected) << image->family;
  }
}

// The decimal bytes PTX writes for the initializer of a char array holding `text`.
std::string ptx_bytes(const std::string& text) {
  std::string out;
  for (const char c : text) out += (out.empty() ? "" : ", ") + std::to_string(int(c));
  return out;
}

TEST(CudaKernelImage, PtxImageIsPlainPtxForTheLowestTargetWithTheStamp) {
  for (const cuda::KernelImage* image : cuda::kernel_images()) {
    // Stored gzip-compressed (magic 1f 8b), inflated once and kept.
    ASSERT_GE(image->ptx_gz_size, 18u);
    EXPECT_EQ(image->ptx_gz[0], 0x1f);
    EXPECT_EQ(image->ptx_gz[1], 0x8b);
    const std::span<const unsigned char> fatbin = cuda::ptx_fatbin(*image);
    EXPECT_LT(image->ptx_gz_size * 3, fatbin.size()) << image->family << ": PTX compresses well";
    EXPECT_EQ(cuda::ptx_fatbin(*image).data(), fatbin.data());
    const std::vector<cuda::FatbinEntry> entries = cuda::parse_fatbin(fatbin.data(), fatbin.size());
    ASSERT_EQ(entries.size(), 1u) << image->family;
    EXPECT_TRUE(entries[0].is_ptx);
    EXPECT_FALSE(entries[0].compressed);
    EXPECT_EQ(entries[0].arch, cuda::kernel_build().ptx_target);
    const std::string ptx(cuda::ptx_text(entries[0]));
    EXPECT_TRUE(contains(ptx, ".target sm_" + std::to_string(cuda::kernel_build().ptx_target)));
    EXPECT_TRUE(contains(ptx, "oxmera_kernel_stamp[17] = {" + ptx_bytes(image->stamp) + "}"))
        << image->family << " does not carry its stamp " << image->stamp;
  }
  const std::string ptx(oxtest::embedded_ptx("fill"));
  for (const char* kernel : {"ox_fill_w1", "ox_fill_w8", "ox_arange_f16", "ox_arange_i64",
                             "ox_arange_bool", "ox_linspace_bf16", "ox_linspace_u8"})
    EXPECT_TRUE(contains(ptx, std::string(".entry ") + kernel + "(")) << kernel;
}

TEST(CudaKernelImage, MalformedFatbinsAreRefused) {
  const unsigned char junk[64] = {1, 2, 3};
  EXPECT_EQ(kind_of([&] { cuda::parse_fatbin(junk, sizeof junk); }), ox::ErrorKind::Internal);
  EXPECT_EQ(kind_of([&] { cuda::parse_fatbin(nullptr, 0); }), ox::ErrorKind::Internal);
  const std::span<const unsigned char> fill = cuda::ptx_fatbin(cuda::kernel_image("fill"));
  // Cut short: the header's size (or an entry's) runs past the end.
  EXPECT_EQ(kind_of([&] { cuda::parse_fatbin(fill.data(), fill.size() / 2); }),
            ox::ErrorKind::Internal);
  std::vector<unsigned char> bytes(fill.begin(), fill.end());
  bytes[16] = 7;  // the first entry's kind
  EXPECT_EQ(kind_of([&] { cuda::parse_fatbin(bytes.data(), bytes.size()); }),
            ox::ErrorKind::Internal);
}

TEST(CudaKernelImage, EachComputeCapabilityGetsMachineCodePtxOrNothing) {
  using ox::cuda::KernelForm;
  const std::vector<int> all{75, 80, 86, 89, 90, 100, 110, 120};
  EXPECT_EQ(cuda::kernel_form_for(all, 75, 7, 5), KernelForm::MachineCode);
  EXPECT_EQ(cuda::kernel_form_for(all, 75, 8, 7), KernelForm::MachineCode);  // sm_86's code
  EXPECT_EQ(cuda::kernel_form_for(all, 75, 9, 0), KernelForm::MachineCode);
  EXPECT_EQ(cuda::kernel_form_for(all, 75, 10, 3), KernelForm::MachineCode);  // sm_100's code
  EXPECT_EQ(cuda::kernel_form_for(all, 75, 12, 1), KernelForm::MachineCode);  // sm_120's code
  EXPECT_EQ(cuda::kernel_form_for(all, 75, 7, 0), KernelForm::None);
  EXPECT_EQ(cuda::kernel_form_for(all, 75, 6, 1), KernelForm::None);
  const std::vector<int> narrow{86};  // OXMERA_CUDA_ARCHS=86 with PTX for 7.5 (say)
  EXPECT_EQ(cuda::kernel_form_for(narrow, 75, 8, 9), KernelForm::MachineCode);
  EXPECT_EQ(cuda::kernel_form_for(narrow, 75, 9, 0), KernelForm::PtxJit);  // no major 9 code
  EXPECT_EQ(cuda::kernel_form_for(narrow, 75, 8, 0), KernelForm::PtxJit);  // 8.6 code is newer
  EXPECT_EQ(cuda::kernel_form_for(narrow, 75, 7, 5), KernelForm::PtxJit);
  EXPECT_EQ(cuda::kernel_form_for(narrow, 75, 7, 2), KernelForm::None);
  const cuda::KernelImage& fill = cuda::kernel_image("fill");
  const int low = cuda::kernel_build().ptx_target;
  if (cuda::built_targets().empty())  // PTX only: every supported GPU JITs it
    EXPECT_EQ(cuda::module_image(fill, low / 10, low % 10).data, cuda::ptx_fatbin(fill).data());
  else
    EXPECT_EQ(cuda::module_image(fill, cuda::built_targets().front() / 10, 9).data,
              fill.machine_code);
  EXPECT_EQ(cuda::module_image(fill, 99, 9).data, cuda::ptx_fatbin(fill).data());  // JIT
  EXPECT_EQ(cuda::module_image(fill, 99, 9).form, KernelForm::PtxJit);
  EXPECT_EQ(cuda::module_image(fill, 6, 0).data, nullptr);
}

namespace {

// The output of `command` (stdout and stderr) and its exit status.
std::pair<std::string, int> run_command(const std::string& command) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return {"popen failed", -1};
  std::string output;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) output.append(buffer, n);
  return {output, pclose(pipe)};
}

}  // namespace

// ctest's cuda_ptxas sets OXMERA_TEST_PTXAS: the embedded PTX of every family assembles for its
// target, sm_75, the oldest and most restrictive a GPU JIT-compiles it for (PTX is forward
// compatible by the ISA's contract; NVRTC's fill for sm_90 covers a newer target). A family
// whose stamp (its PTX's sources, flags and compiler) passed with this ptxas before is not
// assembled again (proven.h).
TEST(CudaPtxas, EmbeddedPtxAssemblesForSm75) {
  const char* ptxas = getenv("OXMERA_TEST_PTXAS");
  if (ptxas == nullptr || *ptxas == '\0') GTEST_SKIP() << "run by ctest's cuda_ptxas";
  const auto [version, version_status] = run_command(std::string(ptxas) + " --version");
  ASSERT_EQ(version_status, 0) << version;
  const std::string release = version.substr(version.rfind("release"));
  for (const cuda::KernelImage* image : cuda::kernel_images()) {
    constexpr const char* arch = "sm_75";
    const std::string key =
        std::string("ptxas-") + image->family + "-" + image->stamp + "-" + arch + "-" + release;
    if (oxtest::proven_before(key)) continue;
    const std::string ptx(oxtest::embedded_ptx(image->family));
    char path[] = "/tmp/oxmera_ptxas_XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, ptx.data(), ptx.size()), ssize_t(ptx.size()));
    close(fd);
    const auto [output, status] =
        run_command(std::string(ptxas) + " -arch=" + arch + " " + path + " -o /dev/null");
    unlink(path);
    EXPECT_EQ(status, 0) << image->family << " for " << arch << ": " << output;
    EXPECT_EQ(output, "") << image->family << " for " << arch;
    if (status == 0 && output.empty()) oxtest::remember_proven(key);
  }
}

// ---- On a GPU -------------------------------------------------------------------------------

class CudaOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ox::cuda::is_available())
      GTEST_SKIP() << "no usable CUDA device: " << ox::cuda::unavailable_reason();
  }
};

TEST_F(CudaOnDevice, PropertiesAndKernelForm) {
  ASSERT_GE(ox::cuda::device_count(), 1);
  const ox::cuda::DeviceProperties p = ox::cuda::get_device_properties(0);
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.major, 7);
  EXPECT_GT(p.total_memory, 0u);
  EXPECT_GT(p.multiprocessor_count, 0);
  EXPECT_GE(ox::cuda::driver_version(), 13000);
  EXPECT_NE(ox::cuda::kernel_form(0), ox::cuda::KernelForm::None);
}

TEST_F(CudaOnDevice, FillArangeAndLinspaceRun) {
  const cuda::Driver& d = cuda::driver();
  cuda::set_device(0);
  constexpr int64_t n = 1000;
  CUdeviceptr buffer = 0;
  cuda::check(d.cuMemAlloc(&buffer, n * 8), "cuMemAlloc");
  auto launch = [&](const char* name, void** params) {
    CUfunction f = cuda::kernel(0, "fill", name);
    EXPECT_EQ(f, cuda::kernel(0, "fill", name)) << "looked up once";
    cuda::check(d.cuLaunchKernel(f, 4, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr),
                "cuLaunchKernel");
    cuda::check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  };
  int64_t count = n;
  uint32_t bits = 0x3fc00000u;  // 1.5f
  void* fill_params[] = {&buffer, &count, &bits};
  launch("ox_fill_w4", fill_params);
  std::vector<float> f32(n);
  cuda::check(d.cuMemcpyDtoH(f32.data(), buffer, n * 4), "cuMemcpyDtoH");
  EXPECT_EQ(std::count(f32.begin(), f32.end(), 1.5f), n);
  uint64_t start = uint64_t(int64_t(-5)), step = 3;
  void* arange_params[] = {&buffer, &count, &start, &step};
  launch("ox_arange_i64", arange_params);
  std::vector<int64_t> i64(n);
  cuda::check(d.cuMemcpyDtoH(i64.data(), buffer, n * 8), "cuMemcpyDtoH");
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(i64[i], -5 + 3 * i);
  double lo = -1, hi = 0.3;
  void* linspace_params[] = {&buffer, &count, &lo, &hi};
  launch("ox_linspace_f64", linspace_params);
  std::vector<double> f64(n);
  cuda::check(d.cuMemcpyDtoH(f64.data(), buffer, n * 8), "cuMemcpyDtoH");
  EXPECT_EQ(f64.front(), -1.0);
  EXPECT_EQ(f64.back(), 0.3);
  cuda::check(d.cuMemFree(buffer), "cuMemFree");
}

TEST_F(CudaOnDevice, ABadIndexSurfacesAtTheNextSynchronizationAndTheDeviceStaysUsable) {
  const ox::Device gpu = ox::Device::cuda(0);
  const ox::Tensor x = ox::arange(5.0).to(gpu);
  const ox::Tensor index = ox::tensor(std::vector<int64_t>{0, 7, 1}).to(gpu);
  ox::Tensor y;
  ASSERT_NO_THROW(y = ox::index_select(x, 0, index)) << "the kernel's check waits for a sync";
  const ox::Error e = caught([&] { ox::synchronize(); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Index) << e.what();
  EXPECT_TRUE(contains(e.what(), "index_select")) << e.what();
  EXPECT_TRUE(contains(e.what(), "7")) << e.what();
  ox::synchronize();  // reported once: nothing is pending any more
  EXPECT_EQ((x + 1).cpu().to_vector<double>(), (std::vector<double>{1, 2, 3, 4, 5}));
  // A copy to the host raises it too.
  y = ox::index_select(x, 0, index);
  EXPECT_EQ(caught([&] { y.cpu(); }).kind(), ox::ErrorKind::Index);
  EXPECT_EQ(ox::index_select(x, 0, index.narrow(0, 2, 1)).item<double>(), 1.0);
}
#endif  // OXMERA_TEST_WITH_CUDA

}  // namespace
