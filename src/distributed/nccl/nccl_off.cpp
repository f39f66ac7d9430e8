// The "nccl" process group in a build without CUDA: refused with the reason (nccl_group.cpp is
// the group itself).

#include "distributed/backends.h"

namespace ox::distributed::detail {

std::string nccl_unavailable_reason() { return OXMERA_CUDA_REASON; }
std::string describe_nccl_library(const std::string&) { return OXMERA_CUDA_REASON; }
ProcessGroupPtr make_nccl_group(const GroupSpec&) {
  OX_FAIL(Backend, "init_process_group", "the nccl backend is not available: ", OXMERA_CUDA_REASON);
}

}  // namespace ox::distributed::detail
