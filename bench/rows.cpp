// What the bench program and `oxmera bench` share: the rows of docs/WORKLOADS.md (their
// units and how a figure follows from seconds per call) and the input generators.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "harness.h"

namespace oxbench {

std::vector<int64_t> random_classes(int64_t n, int64_t classes, uint64_t seed) {
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(n));
  for (float x : random_floats(n, seed))
    out.push_back(std::min<int64_t>(classes - 1, int64_t((x + 1.0f) * 0.5f * float(classes))));
  return out;
}

std::vector<float> random_floats(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull;
  for (float& x : v) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    x = float(int64_t(z >> 40) - (int64_t{1} << 23)) * 0x1p-23f;  // 24 random bits
  }
  return v;
}

std::vector<double> spd_matrices(int64_t batch, int64_t n, uint64_t seed) {
  const std::vector<float> m = random_floats(batch * n * n, seed);
  std::vector<double> out(m.size());
  for (int64_t b = 0; b < batch; ++b) {
    const float* x = m.data() + b * n * n;
    double* a = out.data() + b * n * n;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t k = 0; k < n; ++k) dot += double(x[i * n + k]) * double(x[j * n + k]);
        a[i * n + j] = dot / double(n) + (i == j ? 1.0 : 0.0);
      }
  }
  return out;
}

std::vector<double> symmetric_matrix(int64_t n, uint64_t seed) {
  const std::vector<float> m = random_floats(n * n, seed);
  std::vector<double> out(m.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      out[i * n + j] = 0.5 * (double(m[i * n + j]) + double(m[j * n + i]));
  return out;
}

namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

CpuHog::CpuHog() {
  pid_ = ::fork();
  if (pid_ == 0) {  // the child only spins: nothing it inherited is touched
    volatile uint64_t spins = 0;
    for (;;) spins = spins + 1;
  }
}

CpuHog::~CpuHog() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < order.size(); ++i) order[i] = int64_t(i);
  uint64_t state = seed * 0x9E3779B97F4A7C15ull;
  for (size_t i = order.size(); i > 1; --i) {
    const size_t j = splitmix64(state) % i;  // modulo bias below 2^-47 for i <= 60,000
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

std::vector<float> default_init(int64_t numel, int64_t fan_in, uint64_t seed) {
  std::vector<float> values = random_floats(numel, seed);
  const float bound = 1.0f / std::sqrt(float(std::max<int64_t>(fan_in, 1)));
  for (float& v : values) v *= bound;
  return values;
}

namespace {

constexpr double kGiga = 1e-9;
constexpr double flop_gemm(double b, double m, double k, double n) { return 2 * b * m * k * n; }
constexpr double kSq = double(kSquare) * double(kSquare);

}  // namespace

const std::vector<Spec>& specs() {
  static const std::vector<Spec> table = {
      {"sgemm256", "GFLOP/s", true, flop_gemm(1, 256, 256, 256) * kGiga},
      {"sgemm1024", "GFLOP/s", true, flop_gemm(1, 1024, 1024, 1024) * kGiga},
      {"sgemm2048", "GFLOP/s", true, flop_gemm(1, 2048, 2048, 2048) * kGiga},
      {"sgemm1024_bf16", "GFLOP/s", true, flop_gemm(1, 1024, 1024, 1024) * kGiga},
      {"bmm", "GFLOP/s", true, flop_gemm(kBatch, kBmmM, kBmmK, kBmmN) * kGiga},
      // Bytes the op must move: each input read once, the output written once.
      {"add16M", "GB/s", true, 12.0 * double(kVec) * kGiga},
      {"add16M_bcast", "GB/s", true, (8.0 * kSq + 4.0 * double(kSquare)) * kGiga},
      {"sum16M", "GB/s", true, 4.0 * double(kVec) * kGiga},
      {"sum_rows", "GB/s", true, (4.0 * kSq + 4.0 * double(kSquare)) * kGiga},
      {"softmax", "ms", false, 1e3},
      {"small_add", "µs/op", false, 1e6},
      {"transpose_copy", "GB/s", true, (8.0 * kSq) * kGiga},
      {"backward_overhead", "µs/op", false, 1e6},
      {"cholesky_batched", "ms", false, 1e3},
      {"solve", "ms", false, 1e3},
      {"eigh", "ms", false, 1e3},
      {"mlp_step", "ms", false, 1e3},
      {"mlp_step_busy", "ms", false, 1e3},
      {"cnn_step", "ms", false, 1e3},
      {"chargpt_step", "ms", false, 1e3},
      {"cnn_step_amp", "ms", false, 1e3},
      {"chargpt_step_amp", "ms", false, 1e3},
      {"fmnist_epoch", "s", false, 1.0},
      {"ddp_cnn_step", "ms", false, 1e3},
      {"allreduce64M", "GB/s", true, 4.0 * double(kAllReduceFloats) * kGiga},
      {"gpt2_prefill512", "ms", false, 1e3},
      {"gpt2_decode_b1", "tokens/s", true, double(kDecodeTokens)},
      {"gpt2_decode_b8", "tokens/s", true, 8.0 * double(kDecodeTokens)},
      {"gpt2_decode_b1_bf16", "tokens/s", true, double(kDecodeTokens)},
      {"llama_prefill512", "ms", false, 1e3},
      {"llama_prefill512_bf16", "ms", false, 1e3},
      {"llama_decode_b1", "tokens/s", true, double(kDecodeTokens)},
      {"llama_decode_b8", "tokens/s", true, 8.0 * double(kDecodeTokens)},
      {"llama_decode_b1_bf16", "tokens/s", true, double(kDecodeTokens)},
      // MB of the corpus per call (tokenizer_corpus_bytes()), set at first use.
      {"tokenize_bytelevel", "MB/s", true, 0.0},
  };
  return table;
}

std::optional<double> figure(const Spec& s, Timing seconds) {
  if (!seconds || *seconds <= 0) return std::nullopt;
  const double amount =
      std::string_view(s.id) == "tokenize_bytelevel" ? tokenizer_corpus_bytes() * 1e-6 : s.amount;
  return s.throughput ? amount / *seconds : *seconds * amount;
}

bool is_hf_row(std::string_view id) {
  return id.starts_with("gpt2_") || id.starts_with("llama_") || id == "tokenize_bytelevel";
}

HfRow hf_row(std::string_view id) {
  const char* config = id.starts_with("gpt2_") ? kGpt2Config : kLlamaConfig;
  const int64_t batch = id.find("_b8") != std::string_view::npos ? 8 : 1;
  const char* dtype = id.ends_with("_bf16") ? "bf16" : "f32";
  const char* kind = id.find("prefill") != std::string_view::npos  ? "prefill"
                     : id.find("decode") != std::string_view::npos ? "decode"
                                                                   : "tokenize";
  return {config, batch, dtype, kind};
}

}  // namespace oxbench
