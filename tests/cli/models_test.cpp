// `oxmera generate` and `oxmera inspect DIR` on a Hugging Face folder (tests/models/fixtures,
// scripts/make-model-fixtures.py), run as a user runs them.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/cli_run.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using oxtest::describe;
using oxtest::run_oxmera;

fs::path fixture(const std::string& name) {
  return fs::path(oxtest::kSourceDir) / "tests" / "models" / "fixtures" / name;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A working folder of the test's own: run_oxmera captures stderr into a file there, and ctest
// runs these cases side by side.
fs::path own_folder() {
  const fs::path dir =
      fs::temp_directory_path() / ("oxmera-cli-models-" + std::to_string(::getpid()) + "-" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::create_directories(dir);
  return dir;
}

TEST(GenerateCli, StreamsTheTextTransformersGenerates) {
  std::ifstream in(fixture("gpt2_with_tokenizer") / "expected.json");
  std::stringstream text;
  text << in.rdbuf();
  const auto expected = nlohmann::json::parse(text.str());
  const auto r = run_oxmera({"generate", fixture("gpt2_with_tokenizer").string(), "--prompt",
                             expected["prompt"], "--max-new-tokens", "12"},
                            own_folder());
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_EQ(r.out, expected["text"].get<std::string>() + "\n");
  EXPECT_TRUE(has(r.err, "prompt: 2 tokens")) << r.err;
  EXPECT_TRUE(has(r.err, "generated: 12 tokens")) << r.err;
  // Sampling with a seed repeats itself.
  const std::vector<std::string> sample{"generate",      fixture("gpt2_with_tokenizer").string(),
                                        "--prompt",      "The",
                                        "--temperature", "0.8",
                                        "--seed",        "5"};
  const auto a = run_oxmera(sample, own_folder());
  const auto b = run_oxmera(sample, own_folder());
  ASSERT_EQ(a.code, 0) << describe(a);
  EXPECT_EQ(a.out, b.out);
}

TEST(GenerateCli, BadFoldersAndFlagsExitTwo) {
  const auto none = run_oxmera({"generate", "/nonexistent", "--prompt", "x"}, own_folder());
  EXPECT_EQ(none.code, 2) << describe(none);
  EXPECT_TRUE(has(none.err, "Io error")) << none.err;
  // A model folder without a tokenizer.
  const auto no_tokenizer =
      run_oxmera({"generate", fixture("gpt2").string(), "--prompt", "x"}, own_folder());
  EXPECT_EQ(no_tokenizer.code, 2) << describe(no_tokenizer);
  EXPECT_TRUE(has(no_tokenizer.err, "tokenizer.json")) << no_tokenizer.err;
  const auto bad = run_oxmera(
      {"generate", fixture("gpt2_with_tokenizer").string(), "--prompt", "x", "--top-p", "2"},
      own_folder());
  EXPECT_EQ(bad.code, 2) << describe(bad);
}

TEST(InspectCli, AFolderShowsItsConfigTokenizerAndWeights) {
  const auto r = run_oxmera({"inspect", fixture("gpt2_sharded").string()}, own_folder());
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "model_type: \"gpt2\"")) << r.out;
  EXPECT_TRUE(has(r.out, "model-00004-of-00004.safetensors")) << r.out;
  // GPT-2 of fixtures: wte 64x32 + wpe 32x32 + 2 blocks of 12,608 + ln_f 64 = 28,544.
  EXPECT_TRUE(has(r.out, "parameters: 28544")) << r.out;
  const auto with_tokenizer =
      run_oxmera({"inspect", fixture("gpt2_with_tokenizer").string()}, own_folder());
  EXPECT_TRUE(has(with_tokenizer.out, "tokenizer.json: 1501 tokens")) << with_tokenizer.out;
}

}  // namespace

namespace {

TEST(TrainLmCli, FineTunesAFolderOnTextAndWritesOneTransformersReads) {
  const fs::path dir = fs::temp_directory_path() / ("oxmera-cli-lm-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string text =
      (fs::path(oxtest::kSourceDir) / "tests" / "tokenizers" / "fixtures" / "corpus.txt").string();
  const auto r = run_oxmera({"train",
                             "--recipe",
                             "lm",
                             "--model",
                             fixture("gpt2_with_tokenizer").string(),
                             "--text",
                             text,
                             "--limit",
                             "64",
                             "--eval-limit",
                             "8",
                             "--batch-size",
                             "8",
                             "--lr",
                             "1e-3",
                             "--seed",
                             "3",
                             "--save",
                             (dir / "run.safetensors").string(),
                             "--save-pretrained",
                             (dir / "tuned").string()},
                            dir);
  ASSERT_EQ(r.code, 0) << describe(r);
  EXPECT_TRUE(has(r.out, "model saved to")) << r.out;
  EXPECT_TRUE(has(r.out, "sample:")) << r.out;
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json"})
    EXPECT_TRUE(fs::exists(dir / "tuned" / file)) << file;
  // Trained: the weights moved; and the folder generates like any other.
  const auto before =
      ox::models::AutoModelForCausalLM::from_pretrained(fixture("gpt2_with_tokenizer"));
  const auto after = ox::models::AutoModelForCausalLM::from_pretrained(dir / "tuned");
  const auto name = "transformer.h.0.attn.c_attn.weight";
  EXPECT_FALSE(ox::equal(*before->state_dict().find(name), *after->state_dict().find(name)));
  const auto g = run_oxmera(
      {"generate", (dir / "tuned").string(), "--prompt", "The tensor", "--max-new-tokens", "5"},
      dir);
  EXPECT_EQ(g.code, 0) << describe(g);
  // Without --model the recipe says what it needs.
  const auto no_model = run_oxmera({"train", "--recipe", "lm", "--text", text}, dir);
  EXPECT_EQ(no_model.code, 2) << describe(no_model);
  EXPECT_TRUE(has(no_model.err, "--model DIR")) << no_model.err;
  fs::remove_all(dir);
}

}  // namespace
