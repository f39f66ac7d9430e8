// A small character-level transformer language model (a mini GPT): token and position
// embeddings, pre-norm TransformerEncoderLayers with a causal mask, and a head predicting the
// next character. Trains for a few hundred steps on a text file, then samples from it.
//
//   char_transformer [TEXT_FILE] [--steps N]
//
// TEXT_FILE defaults to /usr/share/common-licenses/GPL-3; N to 600 (under a minute on two
// cores). Exits 1 if the loss did not fall below that of guessing uniformly.

#include <oxmera/oxmera.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace data = ox::data;
namespace nn = ox::nn;

constexpr int64_t kContext = 48, kWidth = 64, kHeads = 4, kLayers = 2;

class CharTransformerImpl : public nn::Module {
 public:
  explicit CharTransformerImpl(int64_t vocab) : Module("CharTransformer") {
    tokens = register_module("tokens", nn::Embedding(vocab, kWidth));
    positions = register_module("positions", nn::Embedding(kContext, kWidth));
    for (int64_t i = 0; i < kLayers; ++i)
      blocks.push_back(register_module(
          "block" + std::to_string(i),
          nn::TransformerEncoderLayer(kWidth, kHeads,
                                      {.dim_feedforward = 4 * kWidth,
                                       .dropout = 0.0,  // too few steps to overfit
                                       .activation = "gelu",
                                       .batch_first = true,     // [batch, time, width]
                                       .norm_first = true})));  // pre-norm trains more stably
    norm = register_module("norm", nn::LayerNorm(ox::Shape{kWidth}));
    head = register_module("head", nn::Linear(kWidth, vocab));
  }

  // ids i64 [B, T], T <= kContext -> logits [B, T, vocab].
  ox::Tensor forward(const ox::Tensor& ids) {
    ox::Tensor x = tokens(ids) + positions(ox::arange(ids.size(1), {.dtype = ox::kI64}));
    // is_causal: position t attends to positions <= t only, so it cannot see what it predicts.
    for (const auto& block : blocks) x = block(x, ox::Tensor(), ox::Tensor(), /*is_causal=*/true);
    return head(norm(x));
  }

  nn::Embedding tokens = nullptr, positions = nullptr;
  std::vector<nn::TransformerEncoderLayer> blocks;
  nn::LayerNorm norm = nullptr;
  nn::Linear head = nullptr;
};
OX_MODULE(CharTransformer);

// Continues `prompt` by `length` characters, each drawn from the softmax of the last position's
// logits divided by `temperature` (lower: safer, more repetitive text).
std::string sample(CharTransformer& model, const data::Vocabulary& vocabulary,
                   const std::string& prompt, int length, double temperature) {
  ox::NoGradGuard no_grad;
  model->eval();
  std::vector<int64_t> ids = vocabulary.encode(prompt).to_vector<int64_t>();
  for (int i = 0; i < length; ++i) {
    const size_t begin = ids.size() > size_t(kContext) ? ids.size() - kContext : 0;
    const std::vector<int64_t> context(ids.begin() + int64_t(begin), ids.end());
    const ox::Tensor logits =
        model(ox::tensor(context, {1, int64_t(context.size())})).select(0, 0).select(0, -1);
    const std::vector<double> probs =
        ox::softmax(logits.to(ox::kF64) / temperature, 0).to_vector<double>();
    // Inverse-CDF sampling from one uniform draw (from the seeded default generator).
    const double u = ox::rand({1}, {.dtype = ox::kF64}).item<double>();
    double cumulative = 0;
    size_t next = probs.size() - 1;
    for (size_t k = 0; k < probs.size(); ++k)
      if ((cumulative += probs[k]) > u) {
        next = k;
        break;
      }
    ids.push_back(int64_t(next));
  }
  return vocabulary.decode(ids);
}

int main(int argc, char** argv) {
  std::string path = "/usr/share/common-licenses/GPL-3";
  int64_t steps = 600;
  for (int i = 1; i < argc; ++i) {
    if (const std::string arg = argv[i]; arg == "--steps" && i + 1 < argc)
      steps = std::stoll(argv[++i]);
    else
      path = argv[i];
  }
  ox::manual_seed(0);

  try {
    // Each example is a window x = text[i, i + 48) and its target y = text[i + 1, i + 49):
    // the model learns to predict every next character at once.
    auto text = std::make_shared<data::TextDataset>(path, kContext);
    const data::Vocabulary& vocabulary = text->vocabulary();
    std::printf("%s: %lld characters, vocabulary of %lld\n", path.c_str(),
                (long long)text->ids().numel(), (long long)vocabulary.size());
    data::DataLoader loader(text, {.batch_size = 16, .shuffle = true, .seed = 0});

    CharTransformer model(vocabulary.size());
    ox::optim::AdamW optimizer(model->parameters(), {.lr = 4e-3});
    ox::optim::CosineAnnealingLR scheduler(
        optimizer, std::max<int64_t>(steps, 1));  // decays to 0 by the last step

    const double uniform_loss = std::log(double(vocabulary.size()));
    std::printf("loss of a uniform guess: %.3f\n", uniform_loss);
    const auto start = std::chrono::steady_clock::now();
    double loss_sum = 0, last_loss = uniform_loss;  // mean loss of the last 50 steps
    for (int64_t step = 0; step < steps;) {
      for (data::Example& batch : loader) {  // a new shuffle each pass over the text
        optimizer.zero_grad();
        // cross_entropy wants [N, classes] logits and [N] targets: flatten batch and time.
        const ox::Tensor loss = nn::functional::cross_entropy(
            model(batch.data).reshape({-1, vocabulary.size()}), batch.target.reshape({-1}));
        loss.backward();
        nn::utils::clip_grad_norm_(model->parameters(), 1.0);  // tames early loss spikes
        optimizer.step();
        scheduler.step();
        loss_sum += loss.item<double>();
        if (++step % 50 == 0 || step == steps) {
          last_loss = loss_sum / double((step - 1) % 50 + 1);
          loss_sum = 0;
          const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
          std::printf("step %4lld  loss %.3f  (%.1f s)\n", (long long)step, last_loss,
                      elapsed.count());
          std::fflush(stdout);
        }
        if (step == steps) break;
      }
    }

    std::printf("--- sample ---\n%s\n--------------\n",
                sample(model, vocabulary, "The ", 300, 0.8).c_str());
    if (!(last_loss < uniform_loss)) {
      std::printf("FAILED: the loss did not fall below a uniform guess's\n");
      return 1;
    }
  } catch (const ox::Error& e) {  // Io for a missing file, Format for invalid UTF-8
    std::fprintf(stderr, "char_transformer: %s error: %s\n", ox::error_kind_name(e.kind()),
                 e.what());
    return 2;
  }
  return 0;
}
