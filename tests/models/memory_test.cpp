// Loading holds the model and one shard, not the folder twice: a ~80 MB llama written in 16 MB
// shards is opened by a fresh process of this program (the child case below), which reports
// its peak resident memory above what it held before loading.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "oxmera/models.h"
#include "sanitized.h"

namespace {

namespace fs = std::filesystem;

constexpr const char* kConfig = R"({"model_type": "llama", "vocab_size": 8192, "hidden_size": 512,
  "intermediate_size": 1376, "num_hidden_layers": 4, "num_attention_heads": 8,
  "num_key_value_heads": 4, "max_position_embeddings": 256, "tie_word_embeddings": false})";
constexpr int64_t kShardBytes = int64_t(16) << 20;

// /proc/self/status's value of `field` (kB) in bytes.
int64_t status_bytes(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(field + ":", 0) == 0) return std::stoll(line.substr(field.size() + 1)) * 1024;
  }
  return -1;
}

// Run only as the child of PeakIsTheModelAndOneShard, which names the folder.
TEST(PretrainedMemory, ChildLoads) {
  const char* dir = std::getenv("OXMERA_TEST_MEMORY_DIR");
  if (!dir) GTEST_SKIP() << "run by PretrainedMemory.PeakIsTheModelAndOneShard";
  const int64_t before = status_bytes("VmRSS");
  const auto model = ox::models::AutoModelForCausalLM::from_pretrained(dir);
  std::printf("PEAK_ABOVE_START=%lld\n", static_cast<long long>(status_bytes("VmHWM") - before));
}

TEST(PretrainedMemory, PeakIsTheModelAndOneShard) {
  if (oxtest::sanitized()) GTEST_SKIP() << "the sanitizers' shadow memory is not the model's";
  const fs::path dir = fs::temp_directory_path() / ("oxmera_memory_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  int64_t model_bytes = 0;
  {
    const auto model = ox::models::AutoModelForCausalLM::from_config(kConfig);
    for (const auto& [name, p] : model->state_dict()) model_bytes += p.numel() * 4;
    model->save_pretrained(dir, {.max_shard_bytes = kShardBytes});
  }
  ASSERT_TRUE(fs::exists(dir / "model.safetensors.index.json"));
  const std::string command = "OXMERA_TEST_MEMORY_DIR=" + dir.string() + " " +
                              fs::read_symlink("/proc/self/exe").string() +
                              " --gtest_filter=PretrainedMemory.ChildLoads 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof(buffer), pipe)) out.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << out;
  fs::remove_all(dir);
  const size_t at = out.find("PEAK_ABOVE_START=");
  ASSERT_NE(at, std::string::npos) << out;
  const int64_t peak = std::stoll(out.substr(at + 17));
  // A largest shard is at most kShardBytes plus one tensor (the embedding, 16 MB).
  const int64_t bound = model_bytes * 12 / 10 + 2 * kShardBytes;
  EXPECT_LE(peak, bound) << "model " << model_bytes << " bytes";
  std::printf("peak above the start while loading: %.1f MB for a %.1f MB model (bound %.1f MB)\n",
              double(peak) / 1e6, double(model_bytes) / 1e6, double(bound) / 1e6);
}

}  // namespace
