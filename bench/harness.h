#pragma once
// The benchmark table's harness: timing, shared inputs and the per-framework entry points.
// Framework-free on purpose: oxmera_workloads.cpp and libtorch_workloads.cpp both include it,
// and neither framework's headers may reach the other's translation unit.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oxbench {

// Seconds per call of one workload, or nullopt when the framework lacks the op.
using Timing = std::optional<double>;

// Shapes shared by both frameworks (docs/WORKLOADS.md).
inline constexpr int64_t kBatch = 64, kBmmM = 128, kBmmK = 64, kBmmN = 128;
inline constexpr int64_t kVec = int64_t{1} << 24;  // add16M, sum16M
inline constexpr int64_t kSquare = 4096;           // add16M_bcast, sum_rows, transpose_copy
inline constexpr int64_t kSoftmaxRows = 4096, kSoftmaxCols = 1024;
inline constexpr int64_t kSmallNumel = 8, kSmallCalls = 10000;
// backward_overhead: a chain of kChainOps elementwise ops on kSmallNumel elements, forward and
// backward, so the figure is the framework's per-op cost of recording and running the graph.
inline constexpr int64_t kChainOps = 1000;

// How long a workload is timed. Warm-up and timed runs each stop at their count or once their
// share of budget_s is spent, but never before one warm-up and min_reps timed runs, so a slow
// op (a naive GEMM) costs a few runs, not minutes.
struct Policy {
  int warmup = 3;
  int min_reps = 5;
  int max_reps = 101;
  double budget_s = 1.0;
};

// The median of v (the mean of the middle two for an even count); v must not be empty.
inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Median wall time of fn() in seconds, after untimed warm-up calls. The median, not the
// minimum: it is what a user sees, and steadier than the mean when other jobs share the cores.
template <class F>
double median_seconds(F&& fn, Policy p = {}) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const auto warm = Clock::now();
  for (int i = 0; i < p.warmup && (i == 0 || seconds_since(warm) < p.budget_s / 4); ++i) fn();
  std::vector<double> times;
  const auto start = Clock::now();
  while (static_cast<int>(times.size()) < p.max_reps) {
    const auto t0 = Clock::now();
    fn();
    const auto t1 = Clock::now();
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
    const double spent = std::chrono::duration<double>(t1 - start).count();
    if (static_cast<int>(times.size()) >= p.min_reps && spent >= p.budget_s) break;
  }
  return median_of(std::move(times));
}

// Uniform in [-1, 1) from splitmix64: both frameworks copy their inputs from these host
// vectors, so they see identical numbers whatever their own random generators do.
std::vector<float> random_floats(int64_t n, uint64_t seed);

// The linear-algebra rows (issue 7's table): cholesky_batched, kCholBatch symmetric positive-
// definite kCholN x kCholN matrices in f64; solve, a kSolveN x kSolveN f32 system with kSolveRhs
// right-hand sides; eigh, one kEighN x kEighN symmetric f64 matrix with its eigenvectors.
inline constexpr int64_t kCholBatch = 4096, kCholN = 32, kSolveN = 512, kSolveRhs = 64,
                         kEighN = 256;
// Row-major f64 inputs from random_floats: M Mᵀ / n + I per matrix (well conditioned), and
// (M + Mᵀ) / 2.
std::vector<double> spd_matrices(int64_t batch, int64_t n, uint64_t seed);
std::vector<double> symmetric_matrix(int64_t n, uint64_t seed);

// Seeds of the inputs, one per operand role.
inline constexpr uint64_t kSeedA = 1, kSeedB = 2;

// The training-step rows (mlp_step, cnn_step, chargpt_step): model sizes of docs/WORKLOADS.md.
inline constexpr int64_t kMlpBatch = 128, kCnnBatch = 64;
inline constexpr int64_t kGptVocab = 96, kGptContext = 64, kGptWidth = 128, kGptHeads = 4,
                         kGptBlocks = 2, kGptBatch = 32;
// Class targets in [0, classes) from the same splitmix64 stream, for both frameworks.
std::vector<int64_t> random_classes(int64_t n, int64_t classes, uint64_t seed);

// fmnist_epoch: one epoch of cnn_step's model over Fashion-MNIST's training set, batches of
// kCnnBatch in the order of permutation(kFmnistTrain, kFmnistOrderSeed), then test accuracy.
inline constexpr uint64_t kFmnistOrderSeed = 3, kFmnistInitSeed = 1000;
inline constexpr double kFmnistMean = 0.2860, kFmnistStd = 0.3530;  // tools/oxmera/recipes.cpp
inline constexpr const char* kFmnistDefaultDir = "/usr/share/datasets/fashion-mnist";

// 0..n-1 shuffled by Fisher-Yates on splitmix64: one batch order for both frameworks.
std::vector<int64_t> permutation(int64_t n, uint64_t seed);
// Uniform in [-1/sqrt(fan_in), 1/sqrt(fan_in)): the bound of PyTorch's default Conv/Linear
// weight and bias init, drawn from splitmix64, so both frameworks start from the same weights.
std::vector<float> default_init(int64_t numel, int64_t fan_in, uint64_t seed);

// mlp_step_busy: mlp_step while another process keeps one core busy (a shared machine, a CI
// runner): what a framework's threads do when they cannot all run. The hog is a child process
// spinning from construction to destruction.
class CpuHog {
 public:
  CpuHog();
  ~CpuHog();
  CpuHog(const CpuHog&) = delete;
  CpuHog& operator=(const CpuHog&) = delete;

 private:
  int pid_ = -1;
};

// Fashion-MNIST read once by oxmera (ox::data::MnistDataset) and standardized with kFmnistMean
// and kFmnistStd: f32 images [count, 1, 28, 28] and i64 labels, contiguous, alive for the
// program. LibTorch reads the same buffers, so both train on identical numbers. The directory
// is $OXMERA_FASHION_MNIST or kFmnistDefaultDir; `missing` says why it could not be read
// (the pointers are then null).
struct ImageSplit {
  const float* images = nullptr;
  const int64_t* labels = nullptr;
  int64_t count = 0;
};
struct FashionMnist {
  ImageSplit train, test;
  std::string missing;
};
const FashionMnist& fashion_mnist();

// The distributed rows (docs/WORKLOADS.md via issue 20): ddp_cnn_step, cnn_step's model and
// batch of 64 trained as kRanks ranks x kDdpBatch with gradients averaged after each backward;
// allreduce64M, the sum over kRanks ranks of kAllReduceFloats f32 (64 MiB) on loopback. Each
// rank has cores / kRanks threads.
inline constexpr int kRanks = 2;
inline constexpr int64_t kDdpBatch = 32;
inline constexpr int64_t kAllReduceFloats = int64_t{16} << 20;
struct RankInfo {
  int rank = 0, world = 1, port = 0, threads = 1;
};
bool is_distributed_row(std::string_view id);
// Runs row `id` as rank 0 of kRanks processes on 127.0.0.1 and returns rank 0's timing: this
// program is started again (the same arguments, from /proc/self) as ranks 1.. with
// OXBENCH_RANK, OXBENCH_PORT and OXBENCH_ROW in their environment, and in those processes
// as_ranks runs `fn` as that rank while every other row is skipped (skipped_here).
Timing as_ranks(std::string_view id, const std::function<Timing(const RankInfo&)>& fn);
// True in a rank process started by as_ranks for a row other than `id`.
bool skipped_here(std::string_view id);
Timing oxmera_distributed_seconds(std::string_view id);
Timing libtorch_distributed_seconds(std::string_view id);
// A fixed count of warm-up and timed runs: every rank must call the collectives equally often.
inline Policy fixed_runs(int warmup, int reps) {
  Policy p;
  p.warmup = warmup;
  p.min_reps = p.max_reps = reps;
  p.budget_s = 1e30;
  return p;
}

// Hugging Face rows (oxmera_hf.cpp; their reference is transformers on PyTorch, run by
// bench/hf_reference.py with the same configs, shapes and ids): GPT-2-small and a ~100 M
// Llama-style model with random weights; prefill is one forward pass of kPrefillTokens into a
// cache; decode is kDecodeTokens greedy steps after a kDecodePrompt-token prompt (untimed), at
// a batch of 1 or 8; tokenize encodes the tokenizer fixture corpus with a byte-level BPE.
inline constexpr int64_t kPrefillTokens = 512, kDecodePrompt = 16, kDecodeTokens = 32;
inline constexpr const char* kGpt2Config =
    R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
        "n_layer": 12, "n_head": 12})";
inline constexpr const char* kLlamaConfig =
    R"({"model_type": "llama", "vocab_size": 32000, "hidden_size": 768, "intermediate_size": 2048,
        "num_hidden_layers": 12, "num_attention_heads": 12, "num_key_value_heads": 4,
        "max_position_embeddings": 2048, "tie_word_embeddings": false})";
bool is_hf_row(std::string_view id);
// The row's model config, batch, dtype ("f32"/"bf16") and kind ("prefill"/"decode"/"tokenize").
struct HfRow {
  const char* config;
  int64_t batch;
  const char* dtype;
  const char* kind;
};
HfRow hf_row(std::string_view id);
Timing oxmera_hf_seconds(std::string_view id);
// The byte-level tokenizer and corpus the tokenize row reads (tests/tokenizers/fixtures).
std::string tokenizer_fixture_dir();
double tokenizer_corpus_bytes();  // the bytes one call of tokenize_bytelevel encodes

// Why row `id` cannot run on this machine (its data set is missing), or "" when it can.
std::string row_unavailable(std::string_view id);
// Test accuracy in [0, 1] after a framework's last run of a row that trains (fmnist_epoch);
// nullopt for other rows or before a run.
std::optional<double> oxmera_accuracy(std::string_view id);
std::optional<double> libtorch_accuracy(std::string_view id);
Timing oxmera_fmnist_epoch();  // seconds for the epoch, data loading included
Timing libtorch_fmnist_epoch();

// How a row's figure follows from seconds per call: work / t for throughputs (bigger is
// better), t * scale for times (smaller is better).
struct Spec {
  const char* id;
  const char* unit;
  bool throughput;
  double amount;  // GFLOP or GB per call for throughputs; the scale to the unit for times
};
// Every row, in the table's order.
const std::vector<Spec>& specs();
std::optional<double> figure(const Spec& s, Timing seconds);

// Per framework: median seconds per call of workload `id` (one op for small_add; one full
// call otherwise), run with `threads` threads. Unknown or missing ops give nullopt.
Timing oxmera_seconds(std::string_view id);
Timing libtorch_seconds(std::string_view id);
Timing oxmera_model_seconds(std::string_view id);  // the training-step rows
Timing libtorch_model_seconds(std::string_view id);
void oxmera_set_threads(int n);
void libtorch_set_threads(int n);
bool libtorch_available();
std::string libtorch_version();  // "" when absent

// Machine ceilings (ceilings.cpp, built with -march=native), best of repeated runs.
double fma_peak_gflops(int threads);
double triad_GBps(int threads);
// allreduce64M's ceiling: the bytes a kRanks = 2 ring all-reduce moves, sent both ways at once
// over one TCP connection on 127.0.0.1 with no reduction, as GB/s of the reduced buffer (best
// of 10; 0 when sockets fail). Both sides' all-reduces run over such connections.
double loopback_ring_GBps();

}  // namespace oxbench
