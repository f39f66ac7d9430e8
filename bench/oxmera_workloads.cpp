// oxmera's side of the benchmark table: one small function per row of docs/WORKLOADS.md.
// A row whose op oxmera does not have yet returns not_yet() (the table then says "n/a (not yet
// in oxmera)"); filling it in is writing the same few lines as its LibTorch twin.

#include <oxmera/oxmera.h>

#include <functional>
#include <map>

#include "harness.h"
#include "models.h"

namespace oxbench {

namespace {

// Keeps a result observable without reading it, so no call is elided. The result is dropped
// right after, so every timed call allocates its output as a user's would. On a device (`oxmera
// bench --device cuda`) the call ends when the device has finished it.
const void* volatile g_sink = nullptr;
void keep(const ox::Tensor& t) {
  g_sink = t.impl();
  if (!t.device().is_cpu()) ox::synchronize(t.device());
}

[[maybe_unused]] Timing not_yet() { return std::nullopt; }

Timing sgemm(int64_t n) {
  const ox::Tensor a = host({n, n}, kSeedA), b = host({n, n}, kSeedB);
  return median_seconds([&] { keep(ox::matmul(a, b)); });
}

// The same values as sgemm, rounded to bf16 once before timing: products and sums in f32, one
// rounding of each result to bf16.
Timing sgemm_bf16(int64_t n) {
  const ox::Tensor a = host({n, n}, kSeedA).to(ox::DType::BF16);
  const ox::Tensor b = host({n, n}, kSeedB).to(ox::DType::BF16);
  return median_seconds([&] { keep(ox::matmul(a, b)); });
}

Timing bmm() {
  const ox::Tensor a = host({kBatch, kBmmM, kBmmK}, kSeedA);
  const ox::Tensor b = host({kBatch, kBmmK, kBmmN}, kSeedB);
  return median_seconds([&] { keep(ox::bmm(a, b)); });
}

Timing add16M() {
  const ox::Tensor a = host({kVec}, kSeedA), b = host({kVec}, kSeedB);
  return median_seconds([&] { keep(a + b); });
}

Timing add16M_bcast() {
  const ox::Tensor a = host({kSquare, kSquare}, kSeedA), row = host({kSquare}, kSeedB);
  return median_seconds([&] { keep(a + row); });
}

Timing sum16M() {
  const ox::Tensor x = host({kVec}, kSeedA);
  return median_seconds([&] { keep(x.sum()); });
}

Timing sum_rows() {
  const ox::Tensor x = host({kSquare, kSquare}, kSeedA);
  return median_seconds([&] { keep(x.sum(1)); });
}

Timing softmax() {
  const ox::Tensor x = host({kSoftmaxRows, kSoftmaxCols}, kSeedA);
  return median_seconds([&] { keep(ox::softmax(x, -1)); });
}

Timing small_add() {
  const ox::Tensor a = host({kSmallNumel}, kSeedA), b = host({kSmallNumel}, kSeedB);
  const double block = median_seconds([&] {
    for (int64_t i = 0; i < kSmallCalls; ++i) keep(a + b);
  });
  return block / double(kSmallCalls);
}

Timing transpose_copy() {
  const ox::Tensor x = host({kSquare, kSquare}, kSeedA);
  return median_seconds([&] { keep(x.t().contiguous()); });
}

Timing backward_overhead() {
  ox::Tensor x = host({kSmallNumel}, kSeedA).requires_grad_();
  const double chain = median_seconds([&] {
    ox::Tensor y = x;
    for (int64_t i = 0; i < kChainOps; i += 2) y = (y * 1.0001) + 0.0001;
    y.sum().backward();
  });
  return chain / double(kChainOps);
}

ox::Tensor host_f64(std::vector<double> values, const ox::Shape& shape) {
  return ox::tensor(values, shape);
}

Timing cholesky_batched() {
  const ox::Tensor a =
      host_f64(spd_matrices(kCholBatch, kCholN, kSeedA), {kCholBatch, kCholN, kCholN});
  return median_seconds([&] { keep(ox::linalg::cholesky(a)); });
}

Timing solve() {
  const ox::Tensor a = host({kSolveN, kSolveN}, kSeedA), b = host({kSolveN, kSolveRhs}, kSeedB);
  return median_seconds([&] { keep(ox::linalg::solve(a, b)); });
}

Timing eigh() {
  const ox::Tensor a = host_f64(symmetric_matrix(kEighN, kSeedA), {kEighN, kEighN});
  return median_seconds([&] { keep(ox::linalg::eigh(a).eigenvectors); });
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

void oxmera_set_threads(int n) { ox::set_num_threads(n); }

Timing oxmera_seconds(std::string_view id) {
  if (skipped_here(id)) return std::nullopt;
  if (is_distributed_row(id)) return oxmera_distributed_seconds(id);
  if (is_hf_row(id)) return oxmera_hf_seconds(id);
  const auto it = rows().find(id);
  return it == rows().end() ? oxmera_model_seconds(id) : it->second();
}

}  // namespace oxbench
