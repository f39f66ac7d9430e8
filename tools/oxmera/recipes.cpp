// The recipes of `oxmera train`: the cnn and mlp of docs/WORKLOADS.md on (Fashion-)MNIST, and
// a character GPT and a character LSTM on a text file, and a Hugging Face causal model
// fine-tuned on one (lm).

#include "recipes.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include <oxmera/nn/rnn.h>

#include "checks.h"
#include "models.h"

namespace oxcli {

namespace {

using oxbench::CharGpt;
using oxbench::kGptContext;
// Held-out windows the chargpt evaluation reads, spread over the last tenth of the text.
constexpr int64_t kGptEvalWindows = 512;

std::vector<int64_t> first_indices(int64_t count) {
  std::vector<int64_t> indices(size_t(std::max<int64_t>(count, 0)));
  std::iota(indices.begin(), indices.end(), int64_t(0));
  return indices;
}

// The first `limit` examples (all when limit is 0 or more than there are).
ox::data::DatasetPtr limited(ox::data::DatasetPtr dataset, int64_t limit) {
  if (limit <= 0 || limit >= dataset->size()) return dataset;
  return std::make_shared<ox::data::Subset>(std::move(dataset), first_indices(limit));
}

// FNV-1a over bytes: not for security, only to tell one data set from another.
uint64_t fingerprint(const void* data, size_t bytes, uint64_t hash = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ p[i]) * 0x100000001b3ull;
  return hash;
}

uint64_t fingerprint(const ox::Tensor& t, uint64_t hash = 0xcbf29ce484222325ull) {
  const ox::Tensor c = t.contiguous();
  return fingerprint(c.raw_data_ptr(c.dtype()), size_t(c.numel()) * ox::dtype_size(c.dtype()),
                     hash);
}

constexpr int64_t kImageClasses = 10;
constexpr int64_t kImageSide = 28;

// Both image recipes take 28x28 pictures of 10 classes; other files are refused here, not by a
// shape error a step into training.
std::shared_ptr<ox::data::MnistDataset> image_set(const std::string& root, bool train) {
  auto set = std::make_shared<ox::data::MnistDataset>(root, train, kImageClasses);
  const ox::Tensor& images = set->images();
  OX_CHECK(images.size(1) == kImageSide && images.size(2) == kImageSide, Format, "oxmera train",
           "the ", train ? "training" : "test", " images in '", root, "' are ", images.size(1), "x",
           images.size(2), "; the cnn and mlp recipes take ", kImageSide, "x", kImageSide);
  return set;
}

Task image_task(const TrainConfig& config, ox::nn::Sequential model) {
  check_input_folder(config.data, "--data");
  Task task;
  const auto train = image_set(config.data, true);
  const auto test = image_set(config.data, false);
  const int64_t used = config.limit > 0 ? std::min(config.limit, train->size()) : train->size();
  task.data_fingerprint = fingerprint(train->labels().narrow(0, 0, used),
                                      fingerprint(train->images().narrow(0, 0, used)));
  // Pixels standardized with the training set's mean and std (Fashion-MNIST's; MNIST's are
  // close), as the usual PyTorch recipes do.
  const ox::data::Normalize normalize{{0.2860}, {0.3530}};
  task.train = limited(std::make_shared<ox::data::MapDataset>(train, normalize), config.limit);
  task.test = std::make_shared<ox::data::MapDataset>(test, normalize);
  task.test_name = "t10k";
  task.model = model.ptr();
  task.logits = [model](const ox::Tensor& x) { return model(x); };
  task.targets = [](const ox::Tensor& y) { return y; };
  return task;
}

// A character-level LSTM language model: embedding, a 2-layer LSTM, the vocabulary head.
constexpr int64_t kLstmEmbedding = 64, kLstmHidden = 128, kLstmLayers = 2;
class CharLstmImpl : public ox::nn::Module {
 public:
  explicit CharLstmImpl(int64_t vocab) : Module("CharLstm") {
    tokens = register_module("tokens", ox::nn::Embedding(vocab, kLstmEmbedding));
    lstm = register_module("lstm", ox::nn::LSTM(kLstmEmbedding, kLstmHidden,
                                                {.num_layers = kLstmLayers, .batch_first = true}));
    head = register_module("head", ox::nn::Linear(kLstmHidden, vocab));
  }
  // ids i64 [B, T]: logits [B, T, vocab].
  ox::Tensor forward(const ox::Tensor& ids) { return head(std::get<0>(lstm(tokens(ids)))); }
  ox::nn::Embedding tokens = nullptr;
  ox::nn::LSTM lstm = nullptr;
  ox::nn::Linear head = nullptr;
};
OX_MODULE(CharLstm);

// A model over character ids: ids [B, T] → logits [B, T, vocab].
struct TextModel {
  ox::nn::ModulePtr module;
  std::function<ox::Tensor(const ox::Tensor&)> forward;
};

// A character model on windows of kGptContext characters of a text file (chargpt, char_lstm).
Task text_task(const TrainConfig& config,
               const std::function<TextModel(int64_t vocab)>& make_model) {
  check_input_file(config.text, "--text");
  auto text = std::make_shared<ox::data::TextDataset>(config.text, kGptContext);
  // Windows are trained on from the first nine tenths and evaluated on from the rest, so the
  // two never share a character.
  const int64_t windows = text->size();
  const int64_t train_end = windows * 9 / 10;
  const int64_t test_begin = std::min(windows, train_end + kGptContext);
  OX_CHECK(test_begin < windows, Value, "oxmera train", "text file '", config.text,
           "' is too short for ", config.recipe, ": ", windows, " windows of ", kGptContext,
           " characters");
  std::vector<int64_t> test_indices;
  const int64_t test_count = std::min(kGptEvalWindows, windows - test_begin);
  for (int64_t i = 0; i < test_count; ++i)
    test_indices.push_back(test_begin + i * (windows - test_begin) / test_count);

  const ox::data::Vocabulary vocabulary = text->vocabulary();
  const TextModel text_model = make_model(vocabulary.size());
  const auto& model = text_model.forward;
  Task task;
  task.model = text_model.module;
  task.train =
      limited(std::make_shared<ox::data::Subset>(text, first_indices(train_end)), config.limit);
  task.test = std::make_shared<ox::data::Subset>(text, std::move(test_indices));
  task.test_name = "held-out text";
  task.logits = [model, vocab = vocabulary.size()](const ox::Tensor& ids) {
    return model(ids).reshape({-1, vocab});
  };
  task.targets = [](const ox::Tensor& ids) { return ids.reshape({-1}); };
  task.batch_size = 64;
  task.lr = 3e-4;
  task.optimizer = "adamw";
  task.extra.insert("vocabulary", vocabulary.to_tensor());
  task.data_fingerprint = fingerprint(text->ids(), fingerprint(vocabulary.to_tensor()));
  // Continues the text's first character for 200 characters, drawing each next one from the
  // model's softmax with a generator of its own (seeded, so the sample is reproducible).
  task.sample = [text_model, vocabulary,
                 first = text->ids().select(0, 0).item<int64_t>()](uint64_t seed) {
    ox::NoGradGuard no_grad;
    text_model.module->eval();
    const auto& model = text_model.forward;
    ox::Generator gen(seed);
    std::vector<int64_t> ids = {first};
    for (int i = 0; i < 200; ++i) {
      const size_t begin = ids.size() > size_t(kGptContext) ? ids.size() - kGptContext : 0;
      const std::vector<int64_t> context(ids.begin() + int64_t(begin), ids.end());
      const ox::Tensor logits = model(ox::tensor(context, {1, int64_t(context.size())}))
                                    .select(0, 0)
                                    .select(0, int64_t(context.size()) - 1);
      const std::vector<double> probs = ox::softmax(logits.to(ox::kF64), 0).to_vector<double>();
      const double u = ox::rand({1}, {.dtype = ox::kF64}, &gen).item<double>();
      double cumulative = 0;
      size_t next = probs.size() - 1;
      for (size_t k = 0; k < probs.size(); ++k) {
        cumulative += probs[k];
        if (u < cumulative) {
          next = k;
          break;
        }
      }
      ids.push_back(int64_t(next));
    }
    return vocabulary.decode(ids);
  };
  return task;
}

// A Hugging Face causal model (--model DIR, with its tokenizer.json) fine-tuned on --text: the
// text's tokens in windows of up to kLmContext (the model's positions permitting), each
// predicting its next tokens; the last tenth of the windows held out.
constexpr int64_t kLmContext = 128;

Task lm_task(const TrainConfig& config) {
  OX_CHECK(!config.model.empty(), Value, "oxmera train",
           "--recipe lm needs --model DIR: a Hugging Face causal model folder with tokenizer.json");
  check_input_file(config.text, "--text");
  const auto tokenizer = std::make_shared<const ox::tokenizers::Tokenizer>(
      ox::tokenizers::Tokenizer::from_file(config.model));
  // f32 weights: --precision decides what the steps compute in, as for every recipe.
  const auto model =
      ox::models::AutoModelForCausalLM::from_pretrained(config.model, {.dtype = ox::kF32});
  model->train();
  const auto settings = nlohmann::json::parse(model->config_json());
  int64_t context = kLmContext;
  for (const char* key : {"n_positions", "max_position_embeddings"})
    if (settings.contains(key) && settings[key].is_number_integer())
      context = std::min(context, settings[key].get<int64_t>());
  std::ifstream in(config.text, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  const std::vector<int64_t> ids = tokenizer->encode(text.str(), /*add_special_tokens=*/false);
  const int64_t windows = ids.empty() ? 0 : (int64_t(ids.size()) - 1) / context;
  OX_CHECK(windows >= 2, Value, "oxmera train", "text file '", config.text, "' is ", ids.size(),
           " tokens: too short for two windows of ", context, " tokens");
  std::vector<int64_t> inputs, targets;
  for (int64_t w = 0; w < windows; ++w) {
    inputs.insert(inputs.end(), ids.begin() + w * context, ids.begin() + (w + 1) * context);
    targets.insert(targets.end(), ids.begin() + w * context + 1,
                   ids.begin() + (w + 1) * context + 1);
  }
  auto all = std::make_shared<ox::data::TensorDataset>(ox::tensor(inputs, {windows, context}),
                                                       ox::tensor(targets, {windows, context}));
  const int64_t train_end = std::max<int64_t>(1, windows * 9 / 10);
  std::vector<int64_t> held_out;
  for (int64_t w = train_end; w < windows; ++w) held_out.push_back(w);
  Task task;
  task.model = model;
  task.train =
      limited(std::make_shared<ox::data::Subset>(all, first_indices(train_end)), config.limit);
  task.test = std::make_shared<ox::data::Subset>(all, std::move(held_out));
  task.test_name = "held-out text";
  task.logits = [model](const ox::Tensor& batch) {
    return model->forward(batch).reshape({-1, model->vocab_size()});
  };
  task.targets = [](const ox::Tensor& batch) { return batch.reshape({-1}); };
  task.batch_size = 8;
  task.lr = 5e-5;  // transformers' Trainer default
  task.optimizer = "adamw";
  task.data_fingerprint = fingerprint(all->data());
  // Continues the text's first tokens for 40 tokens, sampled with the run's seed.
  task.sample = [model, tokenizer,
                 start = std::vector<int64_t>(
                     ids.begin(), ids.begin() + std::min<int64_t>(8, int64_t(ids.size())))](
                    uint64_t seed) {
    model->eval();
    const ox::Tensor out = model->generate(ox::tensor(start, {1, int64_t(start.size())})
                                               .to(model->state_dict().begin()->second.device()),
                                           {.max_new_tokens = 40, .do_sample = true, .seed = seed});
    const ox::Tensor all_ids = out.to(ox::Device::cpu()).contiguous();
    return tokenizer->decode(std::vector<int64_t>(all_ids.data_ptr<int64_t>(),
                                                  all_ids.data_ptr<int64_t>() + all_ids.numel()));
  };
  if (!config.save_pretrained.empty()) {
    task.finish = [model, out = config.save_pretrained, dir = config.model] {
      model->save_pretrained(out);
      std::filesystem::copy_file(std::filesystem::path(dir) / "tokenizer.json",
                                 std::filesystem::path(out) / "tokenizer.json",
                                 std::filesystem::copy_options::overwrite_existing);
      return "model saved to " + out + " (config.json, safetensors, tokenizer.json)";
    };
  }
  return task;
}

Task recipe_task(const TrainConfig& config) {
  if (config.recipe == "lm") return lm_task(config);
  if (config.recipe == "cnn") return image_task(config, oxbench::cnn_model());
  if (config.recipe == "mlp") return image_task(config, oxbench::mlp_model());
  if (config.recipe == "chargpt")
    return text_task(config, [](int64_t vocab) {
      CharGpt model(vocab);
      return TextModel{model.ptr(), [model](const ox::Tensor& ids) { return model(ids); }};
    });
  if (config.recipe == "char_lstm") {
    Task task = text_task(config, [](int64_t vocab) {
      CharLstm model(vocab);
      return TextModel{model.ptr(), [model](const ox::Tensor& ids) { return model(ids); }};
    });
    task.lr = 3e-3;
    task.optimizer = "adam";
    return task;
  }
  OX_FAIL(Value, "oxmera train", "unknown recipe '", config.recipe,
          "' (cnn, mlp, chargpt, char_lstm, lm)");
}

}  // namespace

const std::vector<std::string>& recipe_names() {
  static const std::vector<std::string> names = {"cnn", "mlp", "chargpt", "char_lstm", "lm"};
  return names;
}

bool is_text_recipe(const std::string& recipe) {
  return recipe == "chargpt" || recipe == "char_lstm" || recipe == "lm";
}

Task make_task(const TrainConfig& config) {
  Task task = recipe_task(config);
  task.test = limited(std::move(task.test), config.eval_limit);
  return task;
}

}  // namespace oxcli
