// The nccl backend. Without a GPU (CI): it is reported unavailable with CUDA's reason, asking for
// it is a Backend error saying why, and the library itself loads and reports its version
// (no GPU needed). With one (scripts/gpu-check.sh): a 1-rank group runs every collective on
// CUDA tensors, refuses CPU ones, and DistributedDataParallel trains on it as the model alone.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <filesystem>

#include "distributed/backends.h"
#include "ranks.h"
#include "test_util.h"

namespace {

namespace dist = ox::distributed;

bool nccl_usable() { return dist::is_backend_available("nccl"); }

void init_one_rank(const std::string& backend) {
  dist::init_process_group({.backend = backend,
                            .init_method = "tcp://127.0.0.1:" + std::to_string(oxtest::free_port()),
                            .rank = 0,
                            .world_size = 1});
}

TEST(NcclBackend, UnavailableIsABackendErrorSayingWhy) {
  if (nccl_usable()) GTEST_SKIP() << "NCCL is usable here: the GPU tests below run instead";
  const std::string why = dist::detail::nccl_unavailable_reason();
  EXPECT_FALSE(why.empty());
  const ox::Error e = oxtest::caught([] { init_one_rank("nccl"); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Backend) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "'nccl' is not available")) << e.what();
  EXPECT_TRUE(oxtest::contains(e, why)) << e.what();
  EXPECT_FALSE(dist::is_initialized());
}

TEST(NcclBackend, TheLibraryLoadsAndNamesItsVersionWithoutAGpu) {
  if (!ox::cuda::is_built()) GTEST_SKIP() << "built without CUDA";
  const std::string missing = dist::detail::describe_nccl_library("/nonexistent/libnccl.so.2");
  EXPECT_NE(missing.find("could not be loaded"), std::string::npos) << missing;
  EXPECT_NE(missing.find("/nonexistent/libnccl.so.2"), std::string::npos) << missing;
  // The toolkit's copy, where the toolkit ships one (CUDA 13 here).
  for (const char* file :
       {"/usr/local/cuda/lib/libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2"}) {
    if (!std::filesystem::exists(file)) continue;
    const std::string loaded = dist::detail::describe_nccl_library(file);
    EXPECT_EQ(loaded.rfind("NCCL 2.", 0), 0u) << loaded;
    EXPECT_NE(loaded.find(file), std::string::npos) << loaded;
    return;
  }
  GTEST_SKIP() << "no libnccl.so.2 in the CUDA toolkit";
}

// ---- On a GPU (gpu-check.sh) -----------------------------------------------------------------

class NcclOnDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nccl_usable()) GTEST_SKIP() << "nccl: " << dist::detail::nccl_unavailable_reason();
    init_one_rank("nccl");
  }
  void TearDown() override {
    if (dist::is_initialized()) dist::destroy_process_group();
  }
  static ox::Tensor on_gpu(std::vector<double> values, ox::DType dtype = ox::kF32) {
    const int64_t n = int64_t(values.size());
    return ox::tensor(values, {n}).to(dtype).to(ox::Device::cuda());
  }
  static std::vector<double> host(const ox::Tensor& t) {
    return t.to(ox::Device::cpu()).to_vector<double>();
  }
};

TEST_F(NcclOnDevice, OneRankCollectivesOnEveryDtype) {
  for (const ox::DType dtype :
       {ox::kF32, ox::kF64, ox::kF16, ox::kBF16, ox::kI64, ox::kI32, ox::kI8, ox::kU8, ox::kBool}) {
    for (const dist::ReduceOp op :
         {dist::ReduceOp::Sum, dist::ReduceOp::Product, dist::ReduceOp::Min, dist::ReduceOp::Max}) {
      ox::Tensor t = on_gpu({1, 0, 3}, dtype);
      dist::all_reduce(t, op)->wait();  // one rank: every reduction is the identity
      EXPECT_EQ(host(t), (std::vector<double>{1, 0, dtype == ox::kBool ? 1.0 : 3.0}))
          << dtype << " " << dist::reduce_op_name(op);
    }
  }
  ox::Tensor avg = on_gpu({2, 4});
  dist::all_reduce(avg, dist::ReduceOp::Avg)->wait();
  EXPECT_EQ(host(avg), (std::vector<double>{2, 4}));
  ox::Tensor b = on_gpu({5, 6});
  dist::broadcast(b, 0)->wait();
  EXPECT_EQ(host(b), (std::vector<double>{5, 6}));
  std::vector<ox::Tensor> gathered = {ox::zeros({2}, {.device = ox::Device::cuda()})};
  dist::all_gather(gathered, on_gpu({7, 8}))->wait();
  EXPECT_EQ(host(gathered[0]), (std::vector<double>{7, 8}));
  ox::Tensor whole = ox::zeros({3}, {.device = ox::Device::cuda()});
  dist::all_gather_into_tensor(whole, on_gpu({1, 2, 3}))->wait();
  EXPECT_EQ(host(whole), (std::vector<double>{1, 2, 3}));
  ox::Tensor part = ox::zeros({3}, {.device = ox::Device::cuda()});
  dist::reduce_scatter_tensor(part, on_gpu({4, 5, 6}))->wait();
  EXPECT_EQ(host(part), (std::vector<double>{4, 5, 6}));
  dist::barrier()->wait();
  ox::Tensor empty = ox::zeros({0}, {.device = ox::Device::cuda()});
  dist::all_reduce(empty)->wait();
}

TEST_F(NcclOnDevice, RefusesCpuTensorsAndInt16) {
  ox::Tensor cpu = ox::ones({2});
  const ox::Error e = oxtest::caught([&] { dist::all_reduce(cpu); });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Device) << e.what();
  EXPECT_TRUE(oxtest::contains(e, "nccl")) << e.what();
  ox::Tensor i16 = ox::ones({2}, {.dtype = ox::kI16, .device = ox::Device::cuda()});
  EXPECT_EQ(oxtest::kind_of([&] { dist::all_reduce(i16); }), ox::ErrorKind::DType);
}

TEST_F(NcclOnDevice, DataParallelTrainsAsTheModelAlone) {
  ox::manual_seed(3);
  ox::nn::Linear alone(4, 3);
  alone->to(ox::Device::cuda());
  ox::nn::Linear model(4, 3);
  model->to(ox::Device::cuda());
  model->load_state_dict(alone->state_dict());
  ox::nn::parallel::DistributedDataParallel ddp(model);
  const ox::Tensor x = ox::randn({5, 4}).to(ox::Device::cuda());
  ddp->forward(x).square().sum().backward();
  alone(x).square().sum().backward();
  for (size_t i = 0; i < 2; ++i)
    EXPECT_TRUE(ox::allclose(model->parameters()[i].grad().to(ox::Device::cpu()),
                             alone->parameters()[i].grad().to(ox::Device::cpu()), 1e-6, 1e-6));
}

}  // namespace
