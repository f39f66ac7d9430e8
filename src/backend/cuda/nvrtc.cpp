// The NVRTC fallback: the embedded sources compiled at run time, and the disk cache.

#include "backend/cuda/nvrtc.h"

#include <dlfcn.h>
#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string_view>
#include <type_traits>

#include "backend/cuda/libraries.h"
#include "oxmera/core/error.h"

namespace ox::cuda::detail {

namespace {

namespace fs = std::filesystem;

// The std headers the kernels may include, for NVRTC: libcu++'s, with its names visible in std
// (qualified lookup follows the using-directive), so std::int64_t, std::is_same_v,
// std::numeric_limits, std::isnan and std::bit_cast mean what they mean under nvcc.
constexpr const char* kStdHeaders[] = {"array",       "bit",     "cfloat",   "climits", "cmath",
                                       "cstddef",     "cstdint", "cstdlib",  "cstring", "limits",
                                       "type_traits", "utility", "tuple",    "numbers", "concepts",
                                       "functional",  "complex", "optional", "span"};

std::string std_header(std::string_view name) {
  std::string text = "#pragma once\n#include <cuda/std/" + std::string(name) +
                     ">\nnamespace std { using namespace ::cuda::std; }\n";
  // libcu++'s <cmath> lacks these; NVRTC's device math library has them (global overloads).
  if (name == "cmath") text += "namespace std { using ::erf; using ::erfc; using ::fmod; }\n";
  return text;
}

// Headers libcu++ lacks, which oxmera/core/dtype.h includes for declarations kernels never call
// (dtype_name, operator<<): the names declared, nothing defined.
constexpr const char* kDeclarationHeaders[][2] = {
    {"iosfwd",
     "#pragma once\nnamespace std {\ntemplate <class C> struct char_traits;\n"
     "template <class C, class T> class basic_ostream;\n"
     "using ostream = basic_ostream<char, char_traits<char>>;\n}\n"},
    {"string_view",
     "#pragma once\nnamespace std {\ntemplate <class C> struct char_traits;\n"
     "template <class C, class T> class basic_string_view;\n"
     "using string_view = basic_string_view<char, char_traits<char>>;\n}\n"},
};

#ifndef OXMERA_CUDA_BUILD_INCLUDE
#define OXMERA_CUDA_BUILD_INCLUDE ""
#endif

struct Nvrtc {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetNumSupportedArchs) num_archs = nullptr;
  decltype(&::nvrtcGetSupportedArchs) archs = nullptr;
  decltype(&::nvrtcCreateProgram) create = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy = nullptr;
  decltype(&::nvrtcCompileProgram) compile = nullptr;
  decltype(&::nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) log = nullptr;
  decltype(&::nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) ptx = nullptr;
  decltype(&::nvrtcGetErrorString) error = nullptr;
  std::string reason;  // why it is unusable; empty when loaded
  int major = 0, minor = 0;
  std::vector<int> targets;  // the sm_ targets it compiles for, ascending
};

const Nvrtc& nvrtc() {
  static const Nvrtc api = [] {
    Nvrtc n;
    const Library* lib = nullptr;
    for (const Library& l : optional_libraries())
      if (l.name == "nvrtc") lib = &l;
    if (lib == nullptr || lib->handle == nullptr) {
      n.reason = "libnvrtc could not be loaded: " + (lib ? lib->reason : std::string("not probed"));
      return n;
    }
    bool ok = true;
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib->handle, symbol));
      if (fn == nullptr) {
        ok = false;
        n.reason += std::string(n.reason.empty() ? "" : ", ") + symbol;
      }
    };
    get(n.version, "nvrtcVersion");
    get(n.num_archs, "nvrtcGetNumSupportedArchs");
    get(n.archs, "nvrtcGetSupportedArchs");
    get(n.create, "nvrtcCreateProgram");
    get(n.destroy, "nvrtcDestroyProgram");
    get(n.compile, "nvrtcCompileProgram");
    get(n.log_size, "nvrtcGetProgramLogSize");
    get(n.log, "nvrtcGetProgramLog");
    get(n.cubin_size, "nvrtcGetCUBINSize");
    get(n.cubin, "nvrtcGetCUBIN");
    get(n.ptx_size, "nvrtcGetPTXSize");
    get(n.ptx, "nvrtcGetPTX");
    get(n.error, "nvrtcGetErrorString");
    if (!ok) {
      n.reason = lib->soname + " lacks " + n.reason;
      return n;
    }
    n.version(&n.major, &n.minor);
    int count = 0;
    if (n.num_archs(&count) == NVRTC_SUCCESS && count > 0) {
      n.targets.resize(static_cast<size_t>(count));
      if (n.archs(n.targets.data()) != NVRTC_SUCCESS) n.targets.clear();
    }
    std::sort(n.targets.begin(), n.targets.end());
    if (n.targets.empty()) n.reason = lib->soname + " lists no GPU targets";
    return n;
  }();
  return api;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

bool nvrtc_forced() {
  const std::string v = env("OXMERA_CUDA_NVRTC");
  if (v.empty() || v == "0") return false;
  OX_CHECK(v == "1", Value, "cuda", "OXMERA_CUDA_NVRTC='", v,
           "': use 1 (compile the kernels with NVRTC) or 0");
  return true;
}

std::vector<std::string> nvrtc_include_dirs() {
  std::vector<std::string> roots;
  if (std::string v = env("OXMERA_CUDA_INCLUDE"); !v.empty()) roots.push_back(v);
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string v = env(var); !v.empty()) roots.push_back(v + "/include");
  roots.push_back("/usr/local/cuda/include");
  if (*OXMERA_CUDA_BUILD_INCLUDE != '\0') roots.push_back(OXMERA_CUDA_BUILD_INCLUDE);
  std::error_code ec;
  for (const std::string& root : roots) {
    if (fs::exists(root + "/cccl/cuda/std/type_traits", ec)) return {root + "/cccl", root};
    if (fs::exists(root + "/cuda/std/type_traits", ec)) return {root};
  }
  return {};
}

NvrtcCode nvrtc_compile(const KernelImage& image, int arch) {
  const Nvrtc& n = nvrtc();
  OX_CHECK(n.reason.empty(), Backend, "cuda", "NVRTC is unavailable: ", n.reason);
  OX_CHECK(image.sources != nullptr && image.source_count > 0, Internal, "cuda", "the ",
           image.family, " kernels embed no sources");
  const std::vector<std::string> includes = nvrtc_include_dirs();
  OX_CHECK(!includes.empty(), Backend, "cuda",
           "NVRTC needs libcu++'s headers (<cuda/std/...>, "
           "in the toolkit's include/cccl) and none were found: set OXMERA_CUDA_INCLUDE to the "
           "toolkit's include folder");
  NvrtcCode code;
  // A cubin for the device's own target, else PTX for the newest target below it.
  if (std::find(n.targets.begin(), n.targets.end(), arch) != n.targets.end()) {
    code.cubin = true;
    code.target = arch;
  } else {
    for (const int t : n.targets)
      if (t < arch) code.target = t;
    OX_CHECK(code.target != 0, Backend, "cuda", "NVRTC ", n.major, ".", n.minor,
             " cannot compile for compute capability ", arch / 10, ".", arch % 10,
             " (its oldest target is sm_", n.targets.front(), ")");
  }

  std::vector<std::string> header_text;
  std::vector<const char*> header_names;
  for (size_t i = 1; i < image.source_count; ++i) {
    header_names.push_back(image.sources[i].name);
    header_text.emplace_back(reinterpret_cast<const char*>(image.sources[i].text));
  }
  for (const char* name : kStdHeaders) {
    header_names.push_back(name);
    header_text.push_back(std_header(name));
  }
  for (const auto& [name, text] : kDeclarationHeaders) {
    header_names.push_back(name);
    header_text.push_back(text);
  }
  std::vector<const char*> headers;
  for (const std::string& h : header_text) headers.push_back(h.c_str());

  nvrtcProgram program = nullptr;
  nvrtcResult r = n.create(&program, reinterpret_cast<const char*>(image.sources[0].text),
                           image.sources[0].name, static_cast<int>(headers.size()), headers.data(),
                           header_names.data());
  OX_CHECK(r == NVRTC_SUCCESS, Backend, "cuda", "nvrtcCreateProgram failed for the ", image.family,
           " kernels: ", n.error(r));
  struct Destroy {
    const Nvrtc& n;
    nvrtcProgram& p;
    ~Destroy() { n.destroy(&p); }
  } destroy{n, program};

  // nvcc's flags (cmake/cuda.cmake) as NVRTC spells them: it optimizes unless told otherwise,
  // and -default-device stands for --expt-relaxed-constexpr (the constexpr functions of
  // oxmera/core/half.h have no __device__: NVRTC compiles no host code, so every unannotated
  // function is a device function); -Isrc -Iinclude are the embedded headers.
  std::vector<std::string> options{
      "--std=c++20", "-default-device",
      std::string(code.cubin ? "--gpu-architecture=sm_" : "--gpu-architecture=compute_") +
          std::to_string(code.target),
      std::string("-DOXMERA_KERNEL_STAMP=\"") + image.stamp + "\""};
  for (const std::string& dir : includes) options.push_back("--include-path=" + dir);
  std::vector<const char*> option_ptrs;
  for (const std::string& o : options) option_ptrs.push_back(o.c_str());
  r = n.compile(program, static_cast<int>(option_ptrs.size()), option_ptrs.data());
  if (r != NVRTC_SUCCESS) {
    size_t size = 0;
    std::string log;
    if (n.log_size(program, &size) == NVRTC_SUCCESS && size > 1) {
      log.resize(size);
      n.log(program, log.data());
      log.resize(std::min<size_t>(std::strlen(log.c_str()), 4000));
    }
    OX_FAIL(Backend, "cuda", "NVRTC ", n.major, ".", n.minor, " could not compile the ",
            image.family, " kernels for ", code.cubin ? "sm_" : "compute_", code.target, ": ",
            n.error(r), "\n", log);
  }
  size_t size = 0;
  r = code.cubin ? n.cubin_size(program, &size) : n.ptx_size(program, &size);
  OX_CHECK(r == NVRTC_SUCCESS && size > 0, Backend, "cuda", "NVRTC produced no code for the ",
           image.family, " kernels: ", n.error(r));
  code.bytes.resize(size);
  r = code.cubin ? n.cubin(program, code.bytes.data()) : n.ptx(program, code.bytes.data());
  OX_CHECK(r == NVRTC_SUCCESS, Backend, "cuda", "NVRTC's code for the ", image.family,
           " kernels could not be read: ", n.error(r));
  return code;
}

std::string kernel_cache_dir() {
  if (std::string v = env("OXMERA_CUDA_CACHE_DIR"); !v.empty()) return v;
  if (std::string v = env("XDG_CACHE_HOME"); !v.empty()) return v + "/oxmera/kernels";
  if (std::string v = env("HOME"); !v.empty()) return v + "/.cache/oxmera/kernels";
  return "";
}

std::string nvrtc_cache_key(const KernelImage& image, int arch, int driver_version) {
  const Nvrtc& n = nvrtc();
  return combined_fingerprint() + "-" + image.family + "-" + image.stamp + "-sm" +
         std::to_string(arch) + "-driver" + std::to_string(driver_version) + "-nvrtc" +
         std::to_string(n.major) + "." + std::to_string(n.minor);
}

namespace {

constexpr std::string_view kCacheMagic = "oxmera-nvrtc-cache 1\n";

std::string cache_path(const std::string& dir, const std::string& key) {
  return dir + "/" + key + ".bin";
}

}  // namespace

// An entry: the magic line, the key line, "cubin|ptx <target> <size>\n", then the bytes.
std::optional<NvrtcCode> cache_load(const std::string& dir, const std::string& key) {
  if (dir.empty()) return std::nullopt;
  std::ifstream in(cache_path(dir, key), std::ios::binary);
  if (!in) return std::nullopt;
  std::string magic(kCacheMagic.size(), '\0');
  if (!in.read(magic.data(), static_cast<std::streamsize>(magic.size())) || magic != kCacheMagic)
    return std::nullopt;
  std::string stored_key, kind_line;
  if (!std::getline(in, stored_key) || stored_key != key || !std::getline(in, kind_line))
    return std::nullopt;
  std::istringstream kind_in(kind_line);
  std::string kind;
  NvrtcCode code;
  size_t size = 0;
  if (!(kind_in >> kind >> code.target >> size) || (kind != "cubin" && kind != "ptx") ||
      size == 0 || size > (size_t(1) << 30))
    return std::nullopt;
  code.cubin = kind == "cubin";
  code.bytes.resize(size);
  if (!in.read(code.bytes.data(), static_cast<std::streamsize>(size)) || in.peek() != EOF)
    return std::nullopt;
  // A cubin is an ELF file; PTX text ends with its NUL.
  const bool elf = size >= 4 && std::memcmp(code.bytes.data(),
                                            "\x7f"
                                            "ELF",
                                            4) == 0;
  if (code.cubin ? !elf : code.bytes.back() != '\0') return std::nullopt;
  return code;
}

bool cache_store(const std::string& dir, const std::string& key, const NvrtcCode& code) {
  if (dir.empty() || code.bytes.empty()) return false;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return false;
  const std::string path = cache_path(dir, key);
  const std::string tmp =
      path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(std::random_device{}());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << kCacheMagic << key << '\n'
        << (code.cubin ? "cubin" : "ptx") << ' ' << code.target << ' ' << code.bytes.size() << '\n';
    out.write(code.bytes.data(), static_cast<std::streamsize>(code.bytes.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, path, ec);  // atomic: a reader sees the old entry or the whole new one
  if (!ec) return true;
  fs::remove(tmp, ec);
  return false;
}

NvrtcCode nvrtc_code(const KernelImage& image, int arch, int driver_version) {
  const std::string dir = kernel_cache_dir();
  const std::string key = nvrtc_cache_key(image, arch, driver_version);
  if (std::optional<NvrtcCode> cached = cache_load(dir, key)) return *std::move(cached);
  NvrtcCode code = nvrtc_compile(image, arch);
  cache_store(dir, key, code);
  return code;
}

}  // namespace ox::cuda::detail
