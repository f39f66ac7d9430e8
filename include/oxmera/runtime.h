#pragma once
// Process-wide settings and what the backends report about themselves.

#include <string>
#include <utility>
#include <vector>

namespace ox {

// Threads for intra-op parallelism on the CPU (OpenMP and BLAS). Results do not depend on it.
void set_num_threads(int n);
int get_num_threads();

struct BackendInfo {
  std::string name;                                           // "cpu", "cuda"
  bool available = false;                                     // usable in this process
  std::string reason;                                         // why not, when it is not
  std::vector<std::string> devices;                           // one line each
  std::vector<std::pair<std::string, std::string>> features;  // key, value
};
// Every backend built into this library, available or not, with what it reports.
std::vector<BackendInfo> backend_infos();

// Returns memory cached by the allocators to the system.
void empty_cache();

}  // namespace ox
