// LibTorch's distributed rows, on c10d's ProcessGroupGloo (Debian's libtorch is built with
// Gloo). LibTorch's C++ API has no DistributedDataParallel module (c10d's Reducer is internal to
// the Python one), so ddp_cnn_step is what a LibTorch C++ user writes: after backward, every
// gradient flattened into one buffer, one all-reduce, divided by the world size, copied back.

#include "harness.h"

#if defined(OXMERA_BENCH_TORCH_DISTRIBUTED)
#define USE_C10D_GLOO 1
#include <torch/torch.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include "libtorch_models.h"

namespace oxbench {

namespace {

c10::intrusive_ptr<c10d::ProcessGroupGloo> join_group(const RankInfo& me) {
  torch::set_num_threads(me.threads);
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<uint16_t>(me.port);
  store_options.isServer = me.rank == 0;
  store_options.numWorkers = me.world;
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", store_options);
  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, me.rank, me.world, options);
}

void all_reduce(c10d::ProcessGroupGloo& group, const torch::Tensor& t) {
  std::vector<torch::Tensor> tensors = {t};
  group.allreduce(tensors)->wait();
}

Timing ddp_cnn_step(const RankInfo& me) {
  auto group = join_group(me);
  torch::manual_seed(0);
  torch::nn::Sequential model = libtorch_cnn_model();
  {  // rank 0's weights everywhere, as DistributedDataParallel's construction
    torch::NoGradGuard no_grad;
    for (torch::Tensor& p : model->parameters()) {
      std::vector<torch::Tensor> tensors = {p};
      group->broadcast(tensors)->wait();
    }
  }
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
  std::vector<float> x_values = random_floats(kDdpBatch * 28 * 28, kSeedA + uint64_t(me.rank));
  std::vector<int64_t> y_values = random_classes(kDdpBatch, 10, kSeedB + uint64_t(me.rank));
  const torch::Tensor x =
      torch::from_blob(x_values.data(), {kDdpBatch, 1, 28, 28}, torch::kFloat32).clone();
  const torch::Tensor y = torch::from_blob(y_values.data(), {kDdpBatch}, torch::kInt64).clone();
  const std::vector<torch::Tensor> params = model->parameters();
  const double seconds = median_seconds(
      [&] {
        opt.zero_grad();
        torch::nn::functional::cross_entropy(model->forward(x), y).backward();
        std::vector<torch::Tensor> grads;
        for (const torch::Tensor& p : params) grads.push_back(p.grad().view(-1));
        torch::Tensor flat = torch::cat(grads);
        all_reduce(*group, flat);
        flat.div_(me.world);
        int64_t offset = 0;
        for (const torch::Tensor& p : params) {
          p.grad().copy_(flat.narrow(0, offset, p.numel()).view_as(p));
          offset += p.numel();
        }
        opt.step();
      },
      fixed_runs(3, 30));
  return seconds;
}

Timing allreduce64M(const RankInfo& me) {
  auto group = join_group(me);
  torch::Tensor buffer = torch::ones({kAllReduceFloats});
  return median_seconds([&] { all_reduce(*group, buffer); }, fixed_runs(2, 15));
}

}  // namespace

Timing libtorch_distributed_seconds(std::string_view id) {
  if (id == "ddp_cnn_step") return as_ranks(id, ddp_cnn_step);
  if (id == "allreduce64M") return as_ranks(id, allreduce64M);
  return std::nullopt;
}

}  // namespace oxbench

#else

namespace oxbench {
Timing libtorch_distributed_seconds(std::string_view) { return std::nullopt; }
}  // namespace oxbench

#endif
