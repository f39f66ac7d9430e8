// fmnist_epoch, oxmera's side, and the Fashion-MNIST both sides read: one epoch of cnn_step's
// model over the 60,000 training images as a user writes it (Subset in the bench's batch order,
// DataLoader, Adam), timed with the batching, then the test accuracy.

#include <oxmera/oxmera.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "harness.h"
#include "models.h"

namespace oxbench {

namespace {

struct Split {
  ox::Tensor images, labels;  // standardized f32 [N, 1, 28, 28], i64 [N]
};

Split standardized(const ox::data::MnistDataset& set) {
  const ox::Tensor& raw = set.images();
  const ox::Tensor pixels = raw.to(ox::kF32).reshape({raw.size(0), 1, raw.size(1), raw.size(2)});
  return {((pixels / 255.0 - kFmnistMean) / kFmnistStd).contiguous(), set.labels().contiguous()};
}

struct Loaded {
  Split train, test;
  FashionMnist view;
};

const Loaded& loaded() {
  static const Loaded data = [] {
    Loaded out;
    const char* env = std::getenv("OXMERA_FASHION_MNIST");
    const std::filesystem::path dir = env && *env ? env : kFmnistDefaultDir;
    if (!std::filesystem::is_directory(dir)) {
      out.view.missing = "no Fashion-MNIST at " + dir.string() + " (set OXMERA_FASHION_MNIST)";
      return out;
    }
    try {
      out.train = standardized(ox::data::MnistDataset(dir, true));
      out.test = standardized(ox::data::MnistDataset(dir, false));
    } catch (const std::exception& e) {
      out.view.missing = std::string("Fashion-MNIST unreadable: ") + e.what();
      return out;
    }
    const auto view = [](const Split& s) {
      return ImageSplit{s.images.data_ptr<float>(), s.labels.data_ptr<int64_t>(), s.images.size(0)};
    };
    out.view.train = view(out.train);
    out.view.test = view(out.test);
    return out;
  }();
  return data;
}

// Every parameter from default_init, in the order of parameters() (LibTorch's is the same).
void shared_init(ox::nn::Module& model) {
  ox::NoGradGuard no_grad;
  int64_t fan_in = 1;
  uint64_t seed = kFmnistInitSeed;
  for (ox::Tensor& p : model.parameters()) {
    if (p.dim() > 1) fan_in = p.numel() / p.size(0);  // a bias follows its weight
    p.copy_(ox::tensor(default_init(p.numel(), fan_in, seed++), p.shape()));
  }
}

double test_accuracy(ox::nn::Sequential& model, const Split& test) {
  ox::NoGradGuard no_grad;
  model->eval();
  const int64_t n = test.images.size(0);
  const std::vector<int64_t> labels = test.labels.to_vector<int64_t>();
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += 1000) {
    const int64_t len = std::min<int64_t>(1000, n - start);
    const std::vector<int64_t> predicted =
        model(test.images.narrow(0, start, len)).argmax(1).to_vector<int64_t>();
    for (int64_t i = 0; i < len; ++i) correct += predicted[size_t(i)] == labels[size_t(start + i)];
  }
  return double(correct) / double(n);
}

std::optional<double> g_accuracy;

}  // namespace

const FashionMnist& fashion_mnist() { return loaded().view; }

std::string row_unavailable(std::string_view id) {
  if (id == "tokenize_bytelevel" &&
      !std::filesystem::exists(std::filesystem::path(tokenizer_fixture_dir()) / "corpus.txt")) {
    return "the tokenizer fixtures are not in " + tokenizer_fixture_dir() +
           " (set OXMERA_TOKENIZER_FIXTURES)";
  }
  return id == "fmnist_epoch" ? fashion_mnist().missing : std::string();
}

std::optional<double> oxmera_accuracy(std::string_view id) {
  return id == "fmnist_epoch" ? g_accuracy : std::nullopt;
}

Timing oxmera_fmnist_epoch() {
  const Loaded& data = loaded();
  if (!data.view.missing.empty()) return std::nullopt;
  const auto train =
      std::make_shared<ox::data::TensorDataset>(data.train.images, data.train.labels);
  const std::vector<int64_t> order = permutation(train->size(), kFmnistOrderSeed);

  ox::nn::Sequential model = cnn_model();
  const auto step = [&](ox::optim::Adam& opt, const ox::Tensor& x, const ox::Tensor& y) {
    opt.zero_grad();
    ox::nn::functional::cross_entropy(model(x), y).backward();
    opt.step();
  };
  {  // Warm-up: a few steps on a throwaway optimizer, then the weights start over.
    ox::optim::Adam warm(model->parameters(), {.lr = 1e-3});
    for (int64_t i = 0; i < 3; ++i)
      step(warm, data.train.images.narrow(0, i * kCnnBatch, kCnnBatch),
           data.train.labels.narrow(0, i * kCnnBatch, kCnnBatch));
  }
  shared_init(*model);
  model->train();
  ox::optim::Adam opt(model->parameters(), {.lr = 1e-3});

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  // Batches made in this thread (num_workers = 0): the bench's threads all go to the compute,
  // as LibTorch's do; a 64-image gather is a small share of a step.
  ox::data::DataLoader loader(std::make_shared<ox::data::Subset>(train, order),
                              {.batch_size = kCnnBatch, .shuffle = false, .num_workers = 0});
  for (ox::data::Example& batch : loader) step(opt, batch.data, batch.target);
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  g_accuracy = test_accuracy(model, data.test);
  return seconds;
}

}  // namespace oxbench
