// Hugging Face folders (tests/models/fixtures, tiny random models written by transformers through
// scripts/make-model-fixtures.py) opened by AutoModelForCausalLM: logits against transformers'
// for the same ids; then folders broken on purpose.

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

fs::path fixture(const std::string& name) {
  return fs::path(oxtest::kSourceDir) / "tests" / "models" / "fixtures" / name;
}

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

void expect_logits_match(const std::string& name, const ox::models::PretrainedOptions& options) {
  const auto model = AutoModelForCausalLM::from_pretrained(fixture(name), options);
  const auto expected = read_json(fixture(name) / "expected.json");
  std::vector<int64_t> ids;
  for (const auto& row : expected["input_ids"])
    for (const auto& id : row) ids.push_back(id.get<int64_t>());
  const int64_t rows = int64_t(expected["input_ids"].size());
  const ox::Tensor input = ox::tensor(ids, {rows, int64_t(ids.size()) / rows});
  const ox::Tensor logits = model->forward(input).cpu().to(ox::kF32).contiguous();
  const auto shape = expected["shape"].get<std::vector<int64_t>>();
  ASSERT_EQ(logits.shape(), ox::Shape(shape));
  const auto want = expected["logits"].get<std::vector<double>>();
  const float* got = logits.data_ptr<float>();
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::abs(double(got[i]) - want[i]) > 1e-5 + 1e-4 * std::abs(want[i]) && ++bad <= 5) {
      ADD_FAILURE() << name << " logit " << i << ": " << got[i] << ", transformers " << want[i];
    }
  }
  EXPECT_EQ(bad, 0) << name;
}

TEST(PretrainedCausalLM, LogitsMatchTransformers) {
  for (const char* name : {"gpt2", "llama", "llama_linear_rope", "mistral", "qwen2"}) {
    SCOPED_TRACE(name);
    expect_logits_match(name, {});
  }
}

TEST(PretrainedCausalLM, ReadsShardsPickleFilesAndBf16Weights) {
  expect_logits_match("gpt2_sharded", {});
  expect_logits_match("gpt2_bin", {});
  // Stored in bf16; transformers' logits are of those bf16 weights computed in f32.
  expect_logits_match("llama_bf16", {.dtype = ox::kF32});
  const auto kept = AutoModelForCausalLM::from_pretrained(fixture("llama_bf16"));
  EXPECT_EQ(kept->state_dict().begin()->second.dtype(), ox::kBF16);
}

TEST(PretrainedCausalLM, StateDictKeepsHuggingFaceNames) {
  const auto model = AutoModelForCausalLM::from_pretrained(fixture("qwen2"));
  const auto state = model->state_dict();
  EXPECT_TRUE(state.contains("model.layers.1.self_attn.q_proj.bias"));
  EXPECT_FALSE(state.contains("model.layers.1.self_attn.o_proj.bias"));  // Qwen2: q, k, v only
  EXPECT_FALSE(state.contains("lm_head.weight"));                        // tied
  EXPECT_EQ(model->model_type(), "qwen2");
  EXPECT_EQ(model->vocab_size(), 64);
  const auto gpt2 = AutoModelForCausalLM::from_pretrained(fixture("gpt2"))->state_dict();
  EXPECT_EQ(gpt2.find("transformer.h.0.attn.c_attn.weight")->shape(), ox::Shape({32, 96}));
}

// The weights go where the options say, else to the default device, as any module's parameters
// (a run with OXMERA_TEST_DEVICE makes that a GPU or its stand-in; every test here then runs
// the models there).
TEST(PretrainedCausalLM, WeightsOnTheChosenOrTheDefaultDevice) {
  const auto placed = AutoModelForCausalLM::from_pretrained(fixture("gpt2"));
  for (const auto& [name, tensor] : placed->state_dict())
    EXPECT_EQ(tensor.device(), ox::default_device()) << name;
  const auto on_cpu =
      AutoModelForCausalLM::from_pretrained(fixture("llama"), {.device = ox::Device::cpu()});
  for (const auto& [name, tensor] : on_cpu->state_dict())
    EXPECT_EQ(tensor.device(), ox::Device::cpu()) << name;
  const ox::Tensor ids =
      ox::tensor(std::vector<int64_t>{3, 1, 4}, {1, 3}, ox::device(ox::Device::cpu()));
  EXPECT_EQ(on_cpu->forward(ids).device(), ox::Device::cpu());
}

class BrokenFolder : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("oxmera_broken_model_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::copy(fixture("gpt2_sharded"), dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void expect_error(ox::ErrorKind kind, const std::string& fragment) {
    try {
      AutoModelForCausalLM::from_pretrained(dir_);
      ADD_FAILURE() << "no error; expected one containing \"" << fragment << "\"";
    } catch (const ox::Error& e) {
      EXPECT_EQ(e.kind(), kind) << e.what();
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    }
  }
  void edit_config(const std::function<void(nlohmann::json&)>& edit) {
    auto config = read_json(dir_ / "config.json");
    edit(config);
    std::ofstream(dir_ / "config.json") << config.dump();
  }
  fs::path dir_;
};

TEST_F(BrokenFolder, NoConfig) {
  fs::remove(dir_ / "config.json");
  expect_error(ox::ErrorKind::Io, "has no config.json");
}

TEST_F(BrokenFolder, UnknownModelType) {
  edit_config([](auto& c) { c["model_type"] = "t5"; });
  expect_error(ox::ErrorKind::Value,
               "\"t5\" is not supported by AutoModelForCausalLM (gpt2, llama, mistral, qwen2)");
}

TEST_F(BrokenFolder, MistypedConfigField) {
  edit_config([](auto& c) { c["n_layer"] = "two"; });
  expect_error(ox::ErrorKind::Format, "\"n_layer\" is not an integer");
}

TEST_F(BrokenFolder, ConfigNestedTooDeep) {  // refused before the recursive parser sees it
  std::ofstream(dir_ / "config.json") << std::string(200000, '[');
  expect_error(ox::ErrorKind::Format, "nested deeper than 64 levels");
}

TEST_F(BrokenFolder, MissingShard) {
  fs::remove(dir_ / "model-00002-of-00004.safetensors");
  expect_error(ox::ErrorKind::Io, "model-00002-of-00004.safetensors");
}

TEST_F(BrokenFolder, TruncatedShard) {
  fs::resize_file(dir_ / "model-00001-of-00004.safetensors", 100);
  expect_error(ox::ErrorKind::Format, "model-00001-of-00004.safetensors");
}

TEST_F(BrokenFolder, MissingWeight) {
  edit_config([](auto& c) { c["n_layer"] = 3; });  // the files hold two layers
  expect_error(ox::ErrorKind::Format, "transformer.h.2.");
}

TEST_F(BrokenFolder, UnexpectedWeight) {
  edit_config([](auto& c) { c["n_layer"] = 1; });
  expect_error(ox::ErrorKind::Format, "no place for: transformer.h.1.");
}

TEST_F(BrokenFolder, MisshapedWeight) {
  edit_config([](auto& c) { c["n_embd"] = 16; });
  expect_error(ox::ErrorKind::Value, "weights of the wrong shape");
}

TEST_F(BrokenFolder, NoWeights) {
  for (const auto& entry : fs::directory_iterator(dir_))
    if (entry.path().extension() == ".safetensors" || entry.path().extension() == ".json")
      if (entry.path().filename() != "config.json") fs::remove(entry.path());
  expect_error(ox::ErrorKind::Io, "has no weights");
}

}  // namespace

namespace {

std::vector<double> run_bert(const std::string& name, bool classifier) {
  const auto e = read_json(fixture(name) / "expected.json");
  const auto tensor_of = [&](const char* key) {
    std::vector<int64_t> flat;
    for (const auto& row : e[key])
      for (const auto& v : row) flat.push_back(v.get<int64_t>());
    return ox::tensor(flat, {int64_t(e[key].size()), int64_t(flat.size() / e[key].size())});
  };
  const ox::Tensor ids = tensor_of("input_ids"), mask = tensor_of("attention_mask"),
                   types = tensor_of("token_type_ids");
  const ox::Tensor out =
      classifier ? ox::models::AutoModelForSequenceClassification::from_pretrained(fixture(name))
                       ->forward(ids, mask, types)
                 : ox::models::AutoModel::from_pretrained(fixture(name))->forward(ids, mask, types);
  EXPECT_EQ(out.shape(), ox::Shape(e["shape"].get<std::vector<int64_t>>()));
  const ox::Tensor c = out.cpu().to(ox::kF64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (std::abs(got[i] - want[i]) > 1e-5 + 1e-4 * std::abs(want[i]) && ++bad <= 5)
      ADD_FAILURE() << "value " << i << ": " << got[i] << ", transformers " << want[i];
  EXPECT_EQ(bad, 0);
}

TEST(PretrainedEncoder, HiddenStatesAndClassifierLogitsMatchTransformers) {
  expect_close(run_bert("bert", false),
               read_json(fixture("bert") / "expected.json")["values"].get<std::vector<double>>());
  const auto classifier =
      ox::models::AutoModelForSequenceClassification::from_pretrained(fixture("bert_classifier"));
  EXPECT_EQ(classifier->num_labels(), 3);
  expect_close(
      run_bert("bert_classifier", true),
      read_json(fixture("bert_classifier") / "expected.json")["values"].get<std::vector<double>>());
}

TEST(PretrainedEncoder, AutoModelTakesTheEncoderOfAClassifierAndTheReverse) {
  // The classifier's folder as AutoModel: its "bert." weights, the head left out.
  const auto encoder = ox::models::AutoModel::from_pretrained(fixture("bert_classifier"));
  EXPECT_FALSE(encoder->state_dict().contains("classifier.weight"));
  EXPECT_EQ(encoder->hidden_size(), 32);
  // The encoder's folder as a classifier (to fine-tune): a new head, the encoder loaded.
  const auto fresh =
      ox::models::AutoModelForSequenceClassification::from_pretrained(fixture("bert"));
  const auto base = ox::models::AutoModel::from_pretrained(fixture("bert"));
  const auto weight = [](const ox::nn::Module& m, const std::string& name) {
    return *m.state_dict().find(name);
  };
  EXPECT_TRUE(ox::equal(weight(*fresh, "bert.encoder.layer.1.output.dense.weight"),
                        weight(*base, "encoder.layer.1.output.dense.weight")));
  EXPECT_EQ(fresh->num_labels(), 2);
  // A causal model's folder is not an encoder's.
  EXPECT_THROW(ox::models::AutoModel::from_pretrained(fixture("gpt2")), ox::Error);
}

}  // namespace

namespace {

TEST(SavePretrained, WritesAFolderThatOpensToTheSameModel) {
  const fs::path dir = fs::temp_directory_path() / ("oxmera_saved_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto model = AutoModelForCausalLM::from_pretrained(fixture("llama"));
  model->save_pretrained(dir);
  EXPECT_TRUE(fs::exists(dir / "model.safetensors"));
  const auto config = read_json(dir / "config.json");
  EXPECT_EQ(config["model_type"], "llama");
  EXPECT_EQ(config["torch_dtype"], "float32");
  const ox::Tensor ids = ox::tensor(std::vector<int64_t>{3, 1, 4, 1, 5, 9}, {2, 3});
  const auto reopened = AutoModelForCausalLM::from_pretrained(dir);
  EXPECT_TRUE(ox::equal(reopened->forward(ids), model->forward(ids)));
  // Sharded: every tensor of ~2 KB and more in a file of its own, and the index naming them.
  fs::remove_all(dir);
  model->save_pretrained(dir, {.max_shard_bytes = 2048});
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
  const auto index = read_json(dir / "model.safetensors.index.json");
  EXPECT_EQ(index["weight_map"].size(), model->state_dict().size());
  EXPECT_TRUE(fs::exists(dir / index["weight_map"]["model.norm.weight"].get<std::string>()));
  EXPECT_TRUE(
      ox::equal(AutoModelForCausalLM::from_pretrained(dir)->forward(ids), model->forward(ids)));
  // bf16 weights say so in config.json.
  fs::remove_all(dir);
  AutoModelForCausalLM::from_pretrained(fixture("llama_bf16"))->save_pretrained(dir);
  EXPECT_EQ(read_json(dir / "config.json")["torch_dtype"], "bfloat16");
  // An encoder with a new head, saved and reopened: the head comes back.
  fs::remove_all(dir);
  const auto classifier =
      ox::models::AutoModelForSequenceClassification::from_pretrained(fixture("bert"));
  classifier->save_pretrained(dir);
  const auto back = ox::models::AutoModelForSequenceClassification::from_pretrained(dir);
  EXPECT_TRUE(ox::equal(*back->state_dict().find("classifier.weight"),
                        *classifier->state_dict().find("classifier.weight")));
  fs::remove_all(dir);
}

}  // namespace
