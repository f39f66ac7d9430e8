// oxmera's side of the Hugging Face rows (harness.h): prefill and decode of GPT-2-small and a
// Llama-style model with random weights (AutoModelForCausalLM::from_config, on the default
// device: a GPU under `oxmera bench --device cuda`), and byte-level BPE tokenization.
// bench/hf_reference.py is the transformers side, measured the same way (bench/gpu_torch.py
// runs it on a GPU).

#include <oxmera/oxmera.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness.h"

namespace oxbench {
namespace {

using Clock = std::chrono::steady_clock;

// The prompt ids of every row: (7 i + 3 b) mod 1000, in both frameworks.
ox::Tensor prompt_ids(int64_t batch, int64_t length) {
  std::vector<int64_t> ids;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < length; ++i) ids.push_back((7 * i + 3 * b) % 1000);
  return ox::tensor(ids, {batch, length});
}

// The median of `reps` timings of `timed`, each after an untimed `setup` (one warm-up first).
template <class Setup, class Timed>
double median_after_setup(int reps, Setup&& setup, Timed&& timed) {
  std::vector<double> times;
  for (int r = -1; r < reps; ++r) {
    auto state = setup();
    const auto t0 = Clock::now();
    timed(state);
    const double t = std::chrono::duration<double>(Clock::now() - t0).count();
    if (r >= 0) times.push_back(t);
  }
  return median_of(times);
}

Timing model_row(const HfRow& row) {
  ox::manual_seed(0);
  ox::NoGradGuard no_grad;
  const auto model = ox::models::AutoModelForCausalLM::from_config(
      row.config, {.dtype = std::string_view(row.dtype) == "bf16" ? ox::kBF16 : ox::kF32});
  if (std::string_view(row.kind) == "prefill") {
    const ox::Tensor ids = prompt_ids(row.batch, kPrefillTokens);
    return median_after_setup(
        5, [] { return ox::models::KVCache(kPrefillTokens); },
        [&](ox::models::KVCache& cache) {
          const ox::Tensor logits = model->forward(ids, cache);
          // On a device (`oxmera bench --device cuda`) the pass ends when the device has finished.
          if (!logits.device().is_cpu()) ox::synchronize(logits.device());
        });
  }
  // Decode: the prompt into a fresh cache (untimed), then kDecodeTokens greedy steps.
  const ox::Tensor prompt = prompt_ids(row.batch, kDecodePrompt);
  struct State {
    ox::models::KVCache cache{kDecodePrompt + kDecodeTokens};
    ox::Tensor logits;
  };
  return median_after_setup(
      5,
      [&] {
        State s;
        s.logits = model->forward(prompt, s.cache);
        return s;
      },
      [&](State& s) {
        for (int64_t step = 0; step < kDecodeTokens; ++step) {
          const ox::Tensor next = s.logits.select(1, s.logits.size(1) - 1).argmax(-1, true);
          s.logits = model->forward(next, s.cache);
        }
        (void)s.logits.sum().item<float>();
      });
}

std::vector<std::string> corpus_lines() {
  std::ifstream in(std::filesystem::path(tokenizer_fixture_dir()) / "corpus.txt");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::string tokenizer_fixture_dir() {
  if (const char* dir = std::getenv("OXMERA_TOKENIZER_FIXTURES")) return dir;
  // The bench programs live in <source>/build/<tree>/<folder>/.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (exe.parent_path().parent_path().parent_path().parent_path() / "tests" / "tokenizers" /
          "fixtures")
      .string();
}

double tokenizer_corpus_bytes() {
  double bytes = 0;
  for (const auto& line : corpus_lines()) bytes += double(line.size());
  return bytes;
}

Timing oxmera_hf_seconds(std::string_view id) {
  const HfRow row = hf_row(id);
  if (std::string_view(row.kind) != "tokenize") return model_row(row);
  // One thread, as the tokenizers library's with RAYON_NUM_THREADS=1.
  ox::set_num_threads(1);
  const auto tokenizer = ox::tokenizers::Tokenizer::from_file(
      std::filesystem::path(tokenizer_fixture_dir()) / "gpt2" / "tokenizer.json");
  const std::vector<std::string> lines = corpus_lines();
  return median_seconds([&] { (void)tokenizer.encode_batch(lines); });
}

}  // namespace oxbench
