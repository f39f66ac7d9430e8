// The NVRTC fallback without a GPU (src/backend/cuda/nvrtc.h): every family embeds its sources,
// NVRTC compiles each for sm_75 and sm_90 into a cubin that carries the family's stamp (NVRTC
// runs without a GPU), the disk cache round-trips and ignores corrupt or foreign entries, and
// OXMERA_CUDA_NVRTC is read strictly.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "proven.h"
#include "test_util.h"

#ifdef OXMERA_TEST_WITH_CUDA
#include "backend/cuda/image.h"
#include "backend/cuda/libraries.h"
#include "backend/cuda/nvrtc.h"
#include "sanitized.h"

namespace {

namespace cuda = ox::cuda::detail;
namespace fs = std::filesystem;
using oxtest::kind_of;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Sets (or, with nullptr, unsets) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) {
      old_ = old;
      had_ = true;
    }
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// A fresh folder, removed with its contents at the end of the scope.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/oxmera-nvrtc-test-XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Why NVRTC cannot compile here (empty when it can): CI has the toolkit, so this skips only on
// a machine with the driver and no toolkit.
std::string nvrtc_missing() {
  for (const cuda::Library& lib : cuda::optional_libraries())
    if (lib.name == "nvrtc" && lib.handle == nullptr) return "no libnvrtc: " + lib.reason;
  if (cuda::nvrtc_include_dirs().empty()) return "no libcu++ headers (the toolkit's include/cccl)";
  return "";
}

cuda::NvrtcCode fake_cubin(const std::string& payload) {
  cuda::NvrtcCode code;
  code.cubin = true;
  code.target = 90;
  const std::string bytes =
      "\x7f"
      "ELF" +
      payload;
  code.bytes.assign(bytes.begin(), bytes.end());
  return code;
}

TEST(CudaNvrtc, EveryFamilyEmbedsItsSources) {
  for (const cuda::KernelImage* image : cuda::kernel_images()) {
    ASSERT_GT(image->source_count, 1u) << image->family << ": the .cu and its headers";
    const std::string cu = image->sources[0].name;
    EXPECT_EQ(cu, "src/backend/cuda/kernels/" + std::string(image->family) + ".cu");
    const std::string text(reinterpret_cast<const char*>(image->sources[0].text));
    EXPECT_TRUE(contains(text, "OXMERA_DEFINE_KERNEL_STAMP")) << cu;
    bool common = false;
    for (size_t i = 1; i < image->source_count; ++i) {
      const std::string name = image->sources[i].name;
      EXPECT_FALSE(name.starts_with("src/") || name.starts_with("include/")) << name;
      EXPECT_GT(std::strlen(reinterpret_cast<const char*>(image->sources[i].text)), 0u) << name;
      common = common || name == "backend/cuda/kernels/common.cuh";
    }
    EXPECT_TRUE(common) << image->family << " embeds no backend/cuda/kernels/common.cuh";
  }
}

// Every family for sm_75, the oldest target (a GPU the fallback serves is newer than the
// embedded code, but sm_75 compiles fastest and takes every source), and fill for sm_90 too:
// compiling all for both took two minutes of CI's 2 cores. A family whose cache key (its stamp,
// the target, NVRTC's version) compiled before is not compiled again (proven.h).
TEST(CudaNvrtc, CompilesEveryFamilyForSm75AndFillForSm90WithItsStamp) {
  OXTEST_SKIP_ON_TEST_DEVICE("host-only: the parity runs need not compile the kernels again");
  // Nearly all of its time is NVRTC's own (five minutes in release, eight under the sanitizers);
  // the sanitized run of our side of the compile is NvrtcCodeCompilesOnceThenReadsTheCache.
  if (oxtest::sanitized())
    GTEST_SKIP() << "the release build compiles every family; one is compiled below";
  if (const std::string why = nvrtc_missing(); !why.empty()) GTEST_SKIP() << why;
  for (const cuda::KernelImage* image : cuda::kernel_images()) {
    for (const int arch : {75, 90}) {
      if (arch == 90 && std::string_view(image->family) != "fill") continue;
      const std::string key = "nvrtc-" + cuda::nvrtc_cache_key(*image, arch, 0);
      if (oxtest::proven_before(key)) continue;
      cuda::NvrtcCode code;
      try {
        code = cuda::nvrtc_compile(*image, arch);
      } catch (const std::exception& e) {
        ADD_FAILURE() << image->family << " for sm_" << arch << ": " << e.what();
        continue;
      }
      EXPECT_TRUE(code.cubin) << image->family;
      EXPECT_EQ(code.target, arch);
      const std::string bytes(code.bytes.begin(), code.bytes.end());
      ASSERT_GT(bytes.size(), 4u);
      EXPECT_EQ(bytes.substr(0, 4),
                "\x7f"
                "ELF")
          << image->family << " sm_" << arch;
      EXPECT_TRUE(contains(bytes, "oxmera_kernel_stamp")) << image->family << " sm_" << arch;
      EXPECT_TRUE(contains(bytes, image->stamp))
          << image->family << " sm_" << arch << " does not carry its stamp " << image->stamp;
      if (!::testing::Test::HasFailure()) oxtest::remember_proven(key);
    }
  }
}

TEST(CudaNvrtc, NvrtcCodeCompilesOnceThenReadsTheCache) {
  if (const std::string why = nvrtc_missing(); !why.empty()) GTEST_SKIP() << why;
  TempDir dir;
  ScopedEnv cache("OXMERA_CUDA_CACHE_DIR", dir.path.c_str());
  const cuda::KernelImage& fill = cuda::kernel_image("fill");
  const cuda::NvrtcCode first = cuda::nvrtc_code(fill, 90, 13000);
  const std::string key = cuda::nvrtc_cache_key(fill, 90, 13000);
  const std::string path = dir.path + "/" + key + ".bin";
  ASSERT_TRUE(fs::exists(path)) << path;
  // The next call reads the entry: one planted under the same key comes back.
  const cuda::NvrtcCode planted = fake_cubin("planted");
  ASSERT_TRUE(cuda::cache_store(dir.path, key, planted));
  EXPECT_EQ(cuda::nvrtc_code(fill, 90, 13000).bytes, planted.bytes);
  // A corrupt entry is compiled again and replaced.
  write_bytes(path, "garbage");
  EXPECT_EQ(cuda::nvrtc_code(fill, 90, 13000).bytes, first.bytes);
  EXPECT_EQ(cuda::cache_load(dir.path, key)->bytes, first.bytes);
}

TEST(CudaNvrtc, TheCacheRoundTripsAndIgnoresBadEntries) {
  TempDir dir;
  const std::string sub = dir.path + "/a/b";  // made on the first store
  const std::string key = "0123456789abcdef-fill-fedcba9876543210-sm90-driver13000-nvrtc13.0";
  const cuda::NvrtcCode code = fake_cubin(std::string("\0payload\n\xff", 10));
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  ASSERT_TRUE(cuda::cache_store(sub, key, code));
  std::optional<cuda::NvrtcCode> back = cuda::cache_load(sub, key);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->bytes, code.bytes);
  EXPECT_TRUE(back->cubin);
  EXPECT_EQ(back->target, 90);
  // PTX too (NUL-terminated text).
  cuda::NvrtcCode ptx;
  ptx.target = 75;
  const std::string text = ".version 9.0\n.target sm_75\n";
  ptx.bytes.assign(text.begin(), text.end());
  ptx.bytes.push_back('\0');
  ASSERT_TRUE(cuda::cache_store(sub, key + "-ptx", ptx));
  back = cuda::cache_load(sub, key + "-ptx");
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->cubin);
  EXPECT_EQ(back->bytes, ptx.bytes);
  // Nothing but the entries is left behind (the temporary files were renamed).
  int files = 0;
  for (const auto& e : fs::directory_iterator(sub)) {
    ++files;
    EXPECT_EQ(e.path().extension(), ".bin") << e.path();
  }
  EXPECT_EQ(files, 2);

  const std::string path = sub + "/" + key + ".bin";
  const std::string good = file_bytes(path);
  // Another key's entry under this key's name (a renamed or foreign file).
  write_bytes(path, file_bytes(sub + "/" + key + "-ptx.bin"));
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  // Truncated, extended, a wrong magic, a wrong size, a cubin that is no ELF, PTX without NUL.
  write_bytes(path, good.substr(0, good.size() - 1));
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  write_bytes(path, good + "x");
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  write_bytes(path, "oxmera-nvrtc-cache 2" + good.substr(good.find('\n')));
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  write_bytes(path, "");
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  EXPECT_FALSE(cuda::cache_store(sub, key, cuda::NvrtcCode{})) << "nothing to store";
  cuda::NvrtcCode not_elf = fake_cubin("x");
  not_elf.bytes[1] = 'X';
  ASSERT_TRUE(cuda::cache_store(sub, key, not_elf));
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  cuda::NvrtcCode no_nul = ptx;
  no_nul.bytes.pop_back();
  ASSERT_TRUE(cuda::cache_store(sub, key, no_nul));
  EXPECT_FALSE(cuda::cache_load(sub, key).has_value());
  // Stored again, it reads back.
  write_bytes(path, good);
  EXPECT_TRUE(cuda::cache_load(sub, key).has_value());
  // No folder: no cache, no error.
  EXPECT_FALSE(cuda::cache_load("", key).has_value());
  EXPECT_FALSE(cuda::cache_store("", key, code));
}

TEST(CudaNvrtc, TheCacheKeyNamesTheFingerprintFamilyDeviceAndDriver) {
  const cuda::KernelImage& fill = cuda::kernel_image("fill");
  const std::string key = cuda::nvrtc_cache_key(fill, 90, 13000);
  EXPECT_TRUE(key.starts_with(cuda::combined_fingerprint() + "-fill-" + fill.stamp +
                              "-sm90-driver13000-nvrtc"))
      << key;
  EXPECT_NE(key, cuda::nvrtc_cache_key(fill, 89, 13000));
  EXPECT_NE(key, cuda::nvrtc_cache_key(fill, 90, 12080));
}

TEST(CudaNvrtc, TheCacheFolderFollowsTheEnvironment) {
  ScopedEnv dir("OXMERA_CUDA_CACHE_DIR", nullptr);
  ScopedEnv xdg("XDG_CACHE_HOME", "/x/cache");
  ScopedEnv home("HOME", "/home/u");
  EXPECT_EQ(cuda::kernel_cache_dir(), "/x/cache/oxmera/kernels");
  {
    ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
    EXPECT_EQ(cuda::kernel_cache_dir(), "/home/u/.cache/oxmera/kernels");
  }
  ScopedEnv own("OXMERA_CUDA_CACHE_DIR", "/own");
  EXPECT_EQ(cuda::kernel_cache_dir(), "/own");
}

TEST(CudaNvrtc, OxmeraCudaNvrtcIsReadStrictly) {
  {
    ScopedEnv unset("OXMERA_CUDA_NVRTC", nullptr);
    EXPECT_FALSE(cuda::nvrtc_forced());
  }
  {
    ScopedEnv zero("OXMERA_CUDA_NVRTC", "0");
    EXPECT_FALSE(cuda::nvrtc_forced());
  }
  {
    ScopedEnv one("OXMERA_CUDA_NVRTC", "1");
    EXPECT_TRUE(cuda::nvrtc_forced());
  }
  ScopedEnv yes("OXMERA_CUDA_NVRTC", "yes");
  EXPECT_EQ(kind_of([] { cuda::nvrtc_forced(); }), ox::ErrorKind::Value);
}

}  // namespace
#endif  // OXMERA_TEST_WITH_CUDA
