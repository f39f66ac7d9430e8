#pragma once
// ox::nn::SyncBatchNorm, as torch.nn.SyncBatchNorm: BatchNorm whose training statistics are
// taken over the whole batch of every rank of a process group, so 2 ranks with batch B each
// normalize (and differentiate) as one process with batch 2B. Included on its own
// (`#include <oxmera/nn/sync_batchnorm.h>`), beside oxmera.h.
//
//   ox::distributed::init_process_group({.backend = "gloo"});
//   ox::nn::SyncBatchNorm bn(64);        // in place of BatchNorm2d(64): any input [N, C, ...]
//
// Every rank of the group must call it in training (two all-reduces forward, two in backward,
// in the same order on every rank); in eval mode, or without a group of more than one rank,
// it is BatchNorm.

#include <memory>
#include <optional>

#include "oxmera/distributed.h"
#include "oxmera/nn/normalization.h"

namespace ox::nn {

struct SyncBatchNormOptions {
  OX_NAMED_FIELDS_ONLY;
  double eps = 1e-5;
  std::optional<double> momentum = 0.1;
  bool affine = true;
  bool track_running_stats = true;
  distributed::ProcessGroupPtr process_group{};  // null: the default group, when one exists
};

class SyncBatchNormImpl : public BatchNormImpl {
 public:
  using Options = SyncBatchNormOptions;
  explicit SyncBatchNormImpl(int64_t num_features, const SyncBatchNormOptions& options = {});
  Tensor forward(const Tensor& input);

  distributed::ProcessGroupPtr process_group;
};
OX_MODULE(SyncBatchNorm);

}  // namespace ox::nn
