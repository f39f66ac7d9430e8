// LibTorch's side of the benchmark table: the same rows, shapes and input values as
// oxmera_workloads.cpp. Alone in its translation unit because LibTorch's headers are heavy;
// built without them (OXMERA_BENCH_TORCH undefined) every row is nullopt and prints "n/a".

#include "harness.h"

#ifdef OXMERA_BENCH_TORCH

#include <torch/torch.h>
#include <torch/version.h>

#include <functional>
#include <map>

namespace oxbench {

namespace {

const void* volatile g_sink = nullptr;
void keep(const torch::Tensor& t) { g_sink = t.unsafeGetTensorImpl(); }

torch::Tensor host(std::vector<int64_t> shape, uint64_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  std::vector<float> values = random_floats(numel, seed);
  return torch::from_blob(values.data(), shape, torch::kFloat32).clone();
}

Timing sgemm(int64_t n) {
  const torch::Tensor a = host({n, n}, kSeedA), b = host({n, n}, kSeedB);
  return median_seconds([&] { keep(torch::matmul(a, b)); });
}

Timing sgemm_bf16(int64_t n) {
  const torch::Tensor a = host({n, n}, kSeedA).to(torch::kBFloat16);
  const torch::Tensor b = host({n, n}, kSeedB).to(torch::kBFloat16);
  return median_seconds([&] { keep(torch::matmul(a, b)); });
}

Timing bmm() {
  const torch::Tensor a = host({kBatch, kBmmM, kBmmK}, kSeedA);
  const torch::Tensor b = host({kBatch, kBmmK, kBmmN}, kSeedB);
  return median_seconds([&] { keep(torch::bmm(a, b)); });
}

Timing add16M() {
  const torch::Tensor a = host({kVec}, kSeedA), b = host({kVec}, kSeedB);
  return median_seconds([&] { keep(a + b); });
}

Timing add16M_bcast() {
  const torch::Tensor a = host({kSquare, kSquare}, kSeedA), row = host({kSquare}, kSeedB);
  return median_seconds([&] { keep(a + row); });
}

Timing sum16M() {
  const torch::Tensor x = host({kVec}, kSeedA);
  return median_seconds([&] { keep(x.sum()); });
}

Timing sum_rows() {
  const torch::Tensor x = host({kSquare, kSquare}, kSeedA);
  return median_seconds([&] { keep(x.sum(1)); });
}

Timing softmax() {
  const torch::Tensor x = host({kSoftmaxRows, kSoftmaxCols}, kSeedA);
  return median_seconds([&] { keep(torch::softmax(x, -1)); });
}

Timing small_add() {
  const torch::Tensor a = host({kSmallNumel}, kSeedA), b = host({kSmallNumel}, kSeedB);
  const double block = median_seconds([&] {
    for (int64_t i = 0; i < kSmallCalls; ++i) keep(a + b);
  });
  return block / double(kSmallCalls);
}

Timing transpose_copy() {
  const torch::Tensor x = host({kSquare, kSquare}, kSeedA);
  return median_seconds([&] { keep(x.t().contiguous()); });
}

Timing backward_overhead() {
  torch::Tensor x = host({kSmallNumel}, kSeedA).requires_grad_();
  const double chain = median_seconds([&] {
    torch::Tensor y = x;
    for (int64_t i = 0; i < kChainOps; i += 2) y = (y * 1.0001) + 0.0001;
    y.sum().backward();
  });
  return chain / double(kChainOps);
}

torch::Tensor host_f64(std::vector<double> values, std::vector<int64_t> shape) {
  return torch::from_blob(values.data(), shape, torch::kFloat64).clone();
}

Timing cholesky_batched() {
  const torch::Tensor a =
      host_f64(spd_matrices(kCholBatch, kCholN, kSeedA), {kCholBatch, kCholN, kCholN});
  return median_seconds([&] { keep(torch::linalg_cholesky(a)); });
}

Timing solve() {
  const torch::Tensor a = host({kSolveN, kSolveN}, kSeedA);
  const torch::Tensor b = host({kSolveN, kSolveRhs}, kSeedB);
  return median_seconds([&] { keep(torch::linalg_solve(a, b)); });
}

Timing eigh() {
  const torch::Tensor a = host_f64(symmetric_matrix(kEighN, kSeedA), {kEighN, kEighN});
  return median_seconds([&] { keep(std::get<1>(torch::linalg_eigh(a))); });
}

const std::map<std::string_view, std::function<Timing()>>& rows() {
  static const std::map<std::string_view, std::function<Timing()>> table = {
      {"sgemm256", [] { return sgemm(256); }},
      {"sgemm1024", [] { return sgemm(1024); }},
      {"sgemm2048", [] { return sgemm(2048); }},
      {"sgemm1024_bf16", [] { return sgemm_bf16(1024); }},
      {"bmm", bmm},
      {"add16M", add16M},
      {"add16M_bcast", add16M_bcast},
      {"sum16M", sum16M},
      {"sum_rows", sum_rows},
      {"softmax", softmax},
      {"small_add", small_add},
      {"transpose_copy", transpose_copy},
      {"backward_overhead", backward_overhead},
      {"cholesky_batched", cholesky_batched},
      {"solve", solve},
      {"eigh", eigh},
  };
  return table;
}

}  // namespace

bool libtorch_available() { return true; }
std::string libtorch_version() { return TORCH_VERSION; }
void libtorch_set_threads(int n) { torch::set_num_threads(n); }

Timing libtorch_seconds(std::string_view id) {
  if (skipped_here(id)) return std::nullopt;
  if (is_distributed_row(id)) return libtorch_distributed_seconds(id);
  const auto it = rows().find(id);
  return it == rows().end() ? libtorch_model_seconds(id) : it->second();
}

}  // namespace oxbench

#else  // built without LibTorch

namespace oxbench {

bool libtorch_available() { return false; }
std::string libtorch_version() { return ""; }
void libtorch_set_threads(int) {}
Timing libtorch_seconds(std::string_view) { return std::nullopt; }

}  // namespace oxbench

#endif
