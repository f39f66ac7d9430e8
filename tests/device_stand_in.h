#pragma once
// A stand-in for a GPU, so that CI (which has none) tests everything about devices except
// kernel execution: the CPU backend's kernels over host memory, registered as two CUDA devices.
// Like a GPU it defers the checks kernels make on device values (a bad index is raised at the
// next synchronizing call or copy to the host, and the device stays usable), and it counts the
// copies to the host, so that a test can prove a path never reads a device value back.

#include <cstdint>
#include <string>
#include <vector>

namespace oxtest {

// Registers the stand-in as the CUDA backend (once per process).
void use_device_stand_in();

// Wraps the real CUDA backend (where one can be made) so that its primitives are recorded as
// the stand-in's are: scripts/gpu-check.sh's parity runs feed the same coverage check.
void record_cuda_primitives();

// Copies from a stand-in device to the host since the process started.
int64_t device_to_host_copies();
// Calls of the stand-in's synchronize() since the process started.
int64_t synchronizations();

// The primitives called on the stand-in (or the recorded CUDA backend) since the process
// started, sorted.
std::vector<std::string> primitives_called();

}  // namespace oxtest
