#pragma once
// The backends a process group can be made of (init.cpp picks one by name).

#include <string>
#include <vector>

#include "oxmera/distributed.h"

namespace ox::distributed::detail {

// What a backend needs to join a group: the member's place, the group's store (prefixed per
// group), and how this machine is reached (Gloo: a host name or a network interface).
struct GroupSpec {
  int rank = 0;
  int size = 1;
  std::vector<int> global_ranks;
  StorePtr store;
  Milliseconds timeout = kDefaultTimeout;
  std::string hostname;   // Gloo binds its pairs here
  std::string interface;  // or on this interface ($GLOO_SOCKET_IFNAME)
};

ProcessGroupPtr make_gloo_group(const GroupSpec& spec);
// NCCL, for CUDA tensors (src/distributed/nccl/nccl_group.cpp; a Backend error in a build without
// CUDA or <nccl.h>). Why it cannot be used here ("" when it can): CUDA's reason, or NCCL's load.
std::string nccl_unavailable_reason();
ProcessGroupPtr make_nccl_group(const GroupSpec& spec);
// "NCCL 2.28.9 (libnccl.so.2)", or why it did not load: the process's NCCL (empty `file`), or
// the library file given, loaded afresh. Needs no GPU.
std::string describe_nccl_library(const std::string& file = "");
#if OXMERA_HAVE_MPI
// MPI_COMM_WORLD's processes (MPI initialized here when it is not yet), and a split of a group.
ProcessGroupPtr make_mpi_world(Milliseconds timeout);
ProcessGroupPtr make_mpi_subgroup(const ProcessGroupPtr& world, const std::vector<int>& ranks,
                                  Milliseconds timeout);
#endif

}  // namespace ox::distributed::detail
