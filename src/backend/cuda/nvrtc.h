#pragma once
// The NVRTC fallback (docs/CUDA.md "Modules"): when the driver cannot load a family's embedded
// code (a driver older than the PTX's ISA, a GPU newer than every embedded target), the loader
// compiles the family's embedded sources with NVRTC (libnvrtc, dlopen'd by soname) for that GPU,
// keeps the result in a disk cache, and loads that. OXMERA_CUDA_NVRTC=1 forces this path.
//
// NVRTC has no C++ standard library: the kernels' <cstdint>, <type_traits>, <cmath>, ... are
// given as small headers that include libcu++'s <cuda/std/...> and make its names visible in
// std, so NVRTC needs the toolkit's CCCL headers (<toolkit>/include/cccl) on the machine.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cuda/image.h"

namespace ox::cuda::detail {

// OXMERA_CUDA_NVRTC=1: compile every family with NVRTC instead of loading the embedded code
// ("0" or unset: only as a fallback; anything else is a Value error).
bool nvrtc_forced();

// What NVRTC made for a device of compute capability `arch` (75 for 7.5).
struct NvrtcCode {
  std::vector<char> bytes;  // a cubin (ELF), or NUL-terminated PTX the driver JITs
  bool cubin = false;
  int target = 0;  // the sm_ (cubin) or compute_ (PTX) target it was compiled for
};

// The directories NVRTC's std headers come from: libcu++'s (<toolkit>/include/cccl, from
// OXMERA_CUDA_INCLUDE, CUDA_HOME, CUDA_PATH, /usr/local/cuda or the toolkit this library was
// built with) and the toolkit's include folder. Empty when no CCCL is found.
std::vector<std::string> nvrtc_include_dirs();

// Compiles `image`'s sources with NVRTC: a cubin for sm_<arch> when this NVRTC has that target,
// else PTX for the newest target it has below `arch`. Throws ox::Error (Backend) naming why:
// libnvrtc missing, no CCCL headers, no target, or the compile log.
NvrtcCode nvrtc_compile(const KernelImage& image, int arch);

// The disk cache: $OXMERA_CUDA_CACHE_DIR, else $XDG_CACHE_HOME/oxmera/kernels, else
// $HOME/.cache/oxmera/kernels (empty: no cache).
std::string kernel_cache_dir();
// The key of a family's code for a device and driver: the kernel fingerprint, the family and
// its stamp, the compute capability, the driver's version and NVRTC's.
std::string nvrtc_cache_key(const KernelImage& image, int arch, int driver_version);
// The cached code under `key` in `dir`, or nothing when the entry is absent, unreadable,
// truncated or holds another key.
std::optional<NvrtcCode> cache_load(const std::string& dir, const std::string& key);
// Writes the entry atomically (a temporary file renamed over it); false when it could not (the
// cache is an optimization: a failure is not an error).
bool cache_store(const std::string& dir, const std::string& key, const NvrtcCode& code);

// The code the loader uses for `image` on a device of compute capability `arch`: from the cache
// when an entry is there, else compiled and stored.
NvrtcCode nvrtc_code(const KernelImage& image, int arch, int driver_version);

}  // namespace ox::cuda::detail
