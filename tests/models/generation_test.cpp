// Generation on the fixture models: greedy tokens against transformers' (one prompt, and two
// left-padded ones with a mask), the KV cache against recomputing everything, sampling's seed,
// end tokens, streaming, and the errors of bad calls.

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "oxmera/core/error.h"
#include "oxmera/models.h"
#include "oxmera/ops.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using ox::models::AutoModelForCausalLM;
using ox::models::CausalLM;

const char* const kModels[] = {"gpt2", "llama", "llama_linear_rope", "mistral", "qwen2"};

fs::path fixture(const std::string& name) {
  return fs::path(oxtest::kSourceDir) / "tests" / "models" / "fixtures" / name;
}

nlohmann::json expected(const std::string& name) {
  std::ifstream in(fixture(name) / "expected.json");
  std::ostringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

ox::Tensor ids_tensor(const nlohmann::json& rows) {
  std::vector<int64_t> flat;
  for (const auto& row : rows)
    for (const auto& id : row) flat.push_back(id.get<int64_t>());
  const int64_t b = int64_t(rows.size());
  return ox::tensor(flat, {b, int64_t(flat.size()) / b});
}

std::vector<int64_t> values(const ox::Tensor& t) {
  const ox::Tensor c = t.cpu().to(ox::kI64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST(Generation, GreedyTokensAreTransformers) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const auto model = AutoModelForCausalLM::from_pretrained(fixture(name));
    const auto e = expected(name)["greedy"];
    const ox::Tensor out = model->generate(ids_tensor(e["prompt"]),
                                           {.max_new_tokens = e["max_new_tokens"].get<int64_t>()});
    EXPECT_EQ(values(out), values(ids_tensor(e["output"])));
  }
}

TEST(Generation, LeftPaddedBatchesAreTransformers) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const auto model = AutoModelForCausalLM::from_pretrained(fixture(name));
    const auto e = expected(name)["batched"];
    const ox::Tensor out = model->generate(ids_tensor(e["input_ids"]),
                                           {.max_new_tokens = e["max_new_tokens"].get<int64_t>(),
                                            .pad_token_id = 0,
                                            .attention_mask = ids_tensor(e["attention_mask"])});
    EXPECT_EQ(values(out), values(ids_tensor(e["output"])));
  }
}

TEST(Generation, PaddedRowsGenerateAsTheyDoAlone) {
  const auto model = AutoModelForCausalLM::from_pretrained(fixture("llama"));
  const ox::Tensor padded =
      ox::tensor(std::vector<int64_t>{0, 0, 9, 4, 33, 12, 7, 50, 2, 19}, {2, 5});
  const ox::Tensor mask = ox::tensor(std::vector<int64_t>{0, 0, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 5});
  const auto batch = values(model->generate(padded, {.max_new_tokens = 6, .attention_mask = mask}));
  const auto first = values(
      model->generate(ox::tensor(std::vector<int64_t>{9, 4, 33}, {1, 3}), {.max_new_tokens = 6}));
  const auto second = values(model->generate(
      ox::tensor(std::vector<int64_t>{12, 7, 50, 2, 19}, {1, 5}), {.max_new_tokens = 6}));
  EXPECT_EQ(std::vector<int64_t>(batch.begin() + 2, batch.begin() + 11), first);
  EXPECT_EQ(std::vector<int64_t>(batch.begin() + 11, batch.end()), second);
}

TEST(Generation, CachedDecodingEqualsRecomputingEverything) {
  for (const char* name : kModels) {
    SCOPED_TRACE(name);
    const auto model = AutoModelForCausalLM::from_pretrained(fixture(name));
    const ox::Tensor ids = ids_tensor(expected(name)["input_ids"]);  // [2, 10]
    const ox::Tensor full = model->forward(ids);
    ox::models::KVCache cache(16);
    // Four tokens, then one at a time, then the rest at once.
    std::vector<ox::Tensor> parts{model->forward(ids.narrow(1, 0, 4), cache)};
    for (int64_t i = 4; i < 7; ++i) parts.push_back(model->forward(ids.narrow(1, i, 1), cache));
    parts.push_back(model->forward(ids.narrow(1, 7, 3), cache));
    EXPECT_EQ(cache.length(), 10);
    const ox::Tensor stepped = ox::cat(parts, 1);
    EXPECT_TRUE(ox::allclose(stepped, full, 1e-4, 1e-5))
        << "max difference " << ox::abs(stepped - full).max().item<float>();
  }
}

TEST(Generation, SamplingFollowsItsSeedAndStopsAtTheEnd) {
  const auto model = AutoModelForCausalLM::from_pretrained(fixture("llama"));
  const ox::Tensor prompt = ox::tensor(std::vector<int64_t>{5, 17, 3}, {1, 3});
  const auto sample = [&](uint64_t seed) {
    return values(model->generate(prompt, {.max_new_tokens = 10,
                                           .do_sample = true,
                                           .temperature = 1.5,
                                           .top_k = 20,
                                           .top_p = 0.9,
                                           .repetition_penalty = 1.2,
                                           .seed = seed}));
  };
  EXPECT_EQ(sample(7), sample(7));
  EXPECT_NE(sample(7), sample(8));  // 10 tokens from 20 candidates: equal by chance ~never
  // The greedy run's third new token as the end: generation stops there, streaming each step.
  const auto greedy = values(model->generate(prompt, {.max_new_tokens = 10}));
  std::vector<int64_t> streamed;
  const auto stopped = values(model->generate(
      prompt, {.max_new_tokens = 10,
               .eos_token_id = {greedy[5]},
               .on_tokens = [&](std::span<const int64_t> t) { streamed.push_back(t[0]); }}));
  const auto end = std::find(greedy.begin() + 3, greedy.end(), greedy[5]);
  EXPECT_EQ(stopped, std::vector<int64_t>(greedy.begin(), end + 1));
  EXPECT_EQ(streamed, std::vector<int64_t>(greedy.begin() + 3, end + 1));
}

TEST(Generation, BadCallsAreErrors) {
  const auto model = AutoModelForCausalLM::from_pretrained(fixture("gpt2"));
  const ox::Tensor ids = ox::tensor(std::vector<int64_t>{1, 2, 3}, {1, 3});
  ox::models::KVCache small(4);
  model->forward(ids, small);
  EXPECT_THROW(model->forward(ids, small), ox::Error);  // 3 + 3 > 4
  ox::models::KVCache cache(8);
  EXPECT_THROW(model->forward(ids, cache, ox::ones({1, 2}, ox::dtype(ox::kI64))), ox::Error);
  EXPECT_THROW(model->forward(ox::tensor(std::vector<int64_t>{1, 2, 3})), ox::Error);  // 1-D
  EXPECT_THROW(model->forward(ox::ones({1, 3})), ox::Error);                           // f32
  EXPECT_THROW(model->generate(ids, {.max_new_tokens = 40}), ox::Error);  // past n_positions 32
  EXPECT_THROW(model->generate(ids, {.do_sample = true, .temperature = 0}), ox::Error);
  EXPECT_THROW(model->generate(ids, {.top_p = 1.5}), ox::Error);
}

}  // namespace
