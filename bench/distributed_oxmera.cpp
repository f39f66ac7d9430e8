// oxmera's distributed rows: ddp_cnn_step (DistributedDataParallel over Gloo, as a user writes
// it) and allreduce64M, each rank a process of its own (as_ranks).

#include <oxmera/oxmera.h>

#include <string>

#include "harness.h"
#include "models.h"

namespace oxbench {

namespace {

void join_group(const RankInfo& me) {
  ox::set_num_threads(me.threads);
  ox::distributed::init_process_group({.backend = "gloo",
                                       .init_method = "tcp://127.0.0.1:" + std::to_string(me.port),
                                       .rank = me.rank,
                                       .world_size = me.world});
}

Timing ddp_cnn_step(const RankInfo& me) {
  join_group(me);
  ox::manual_seed(0);
  ox::nn::Sequential model = cnn_model();
  ox::nn::parallel::DistributedDataParallel ddp(model);
  ox::optim::Adam opt(model->parameters(), {.lr = 1e-3});
  // This rank's share of cnn_step's batch.
  const ox::Tensor x = ox::tensor(random_floats(kDdpBatch * 28 * 28, kSeedA + uint64_t(me.rank)),
                                  {kDdpBatch, 1, 28, 28});
  const ox::Tensor y = ox::tensor(random_classes(kDdpBatch, 10, kSeedB + uint64_t(me.rank)));
  const double seconds = median_seconds(
      [&] {
        opt.zero_grad();
        ox::nn::functional::cross_entropy(ddp->forward(x), y).backward();
        opt.step();
      },
      fixed_runs(3, 30));
  ox::distributed::destroy_process_group();
  return seconds;
}

Timing allreduce64M(const RankInfo& me) {
  join_group(me);
  ox::Tensor buffer = ox::ones({kAllReduceFloats});
  const double seconds =
      median_seconds([&] { ox::distributed::all_reduce(buffer)->wait(); }, fixed_runs(2, 15));
  ox::distributed::destroy_process_group();
  return seconds;
}

}  // namespace

Timing oxmera_distributed_seconds(std::string_view id) {
  if (id == "ddp_cnn_step") return as_ranks(id, ddp_cnn_step);
  if (id == "allreduce64M") return as_ranks(id, allreduce64M);
  return std::nullopt;
}

}  // namespace oxbench
