// torch::data::datasets::MNIST through the compatibility header, on the installed Fashion-MNIST
// files (skipped when they are absent): sizes, dtypes and ranges as LibTorch gives them, pixels
// and labels against the raw IDX bytes read here, and the data code of LibTorch's MNIST example.

#include <gtest/gtest.h>

#include <oxmera/compat/torch.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

const std::string kRoot = "/usr/share/datasets/fashion-mnist";

bool has(const std::string& name) {
  return fs::exists(fs::path(kRoot) / name) || fs::exists(fs::path(kRoot) / (name + ".gz"));
}

// The file's bytes, decompressed by the gzip command when only the .gz is there (independent of
// oxmera's reader); empty when it cannot be read.
std::vector<uint8_t> raw_bytes(const std::string& name) {
  const fs::path plain = fs::path(kRoot) / name;
  if (fs::exists(plain)) {
    std::ifstream in(plain, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  const std::string command = "gzip -dc '" + plain.string() + ".gz'";
  std::vector<uint8_t> out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return out;
  uint8_t buffer[1 << 16];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    out.insert(out.end(), buffer, buffer + n);
  if (pclose(pipe) != 0) out.clear();
  return out;
}

#define SKIP_WITHOUT(name) \
  if (!has(name)) GTEST_SKIP() << name << " is not installed in " << kRoot

TEST(CompatDataMnist, TestSplitMatchesTheRawIdxBytes) {
  SKIP_WITHOUT("t10k-images-idx3-ubyte");
  torch::data::datasets::MNIST mnist(kRoot, torch::data::datasets::MNIST::Mode::kTest);
  EXPECT_FALSE(mnist.is_train());
  ASSERT_EQ(mnist.size().value(), 10000u);
  EXPECT_EQ(mnist.images().sizes(), torch::IntArrayRef({10000, 1, 28, 28}));
  EXPECT_EQ(mnist.images().dtype(), torch::kFloat);
  EXPECT_EQ(mnist.targets().sizes(), torch::IntArrayRef({10000}));
  EXPECT_EQ(mnist.targets().dtype(), torch::kLong);
  EXPECT_GE(mnist.images().min().item<float>(), 0.0f);
  EXPECT_LE(mnist.images().max().item<float>(), 1.0f);
  EXPECT_EQ(mnist.targets().min().item<int64_t>(), 0);
  EXPECT_EQ(mnist.targets().max().item<int64_t>(), 9);

  const std::vector<uint8_t> images = raw_bytes("t10k-images-idx3-ubyte");
  const std::vector<uint8_t> labels = raw_bytes("t10k-labels-idx1-ubyte");
  if (images.empty() || labels.empty()) GTEST_SKIP() << "cannot decompress the files here";
  ASSERT_EQ(images.size(), 16u + 10000u * 784u);
  ASSERT_EQ(labels.size(), 8u + 10000u);
  // Every label, and the pixels of a few examples, at their IDX offsets (header 8 / 16 bytes).
  const std::vector<int64_t> targets = mnist.targets().to_vector<int64_t>();
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(targets[i], int64_t(labels[8 + i])) << i;
  for (const int64_t i : {0, 1, 4321, 9999}) {
    const torch::data::Example<> example = mnist.get(size_t(i));
    EXPECT_EQ(example.data.sizes(), torch::IntArrayRef({1, 28, 28}));
    EXPECT_EQ(example.target.item<int64_t>(), int64_t(labels[8 + size_t(i)]));
    const std::vector<float> pixels = example.data.to_vector<float>();
    for (size_t p = 0; p < 784; ++p) {
      const double want = double(images[16 + size_t(i) * 784 + p]) / 255.0;
      ASSERT_NEAR(pixels[p], want, 1.3e-6 + 1e-5 * want) << i << " " << p;
    }
  }
  // One known pixel through the tensor's own indexing: row 14, column 14 of example 0.
  EXPECT_NEAR(mnist.images()[0][0][14][14].item<float>(), images[16 + 14 * 28 + 14] / 255.0,
              1.3e-6);
  EXPECT_EQ(oxtest::kind_of([&] { mnist.get(10000); }), ox::ErrorKind::Index);
}

TEST(CompatDataMnist, MissingFolderIsAnIoError) {
  const ox::Error e = oxtest::caught([] {
    torch::data::datasets::MNIST("/nonexistent/mnist", torch::data::datasets::MNIST::Mode::kTest);
  });
  EXPECT_EQ(e.kind(), ox::ErrorKind::Io) << e.what();
}

// The loops of the example's train() and test(), which take the loader by reference.
template <typename DataLoader>
void train(torch::Device device, DataLoader& data_loader, size_t dataset_size) {
  size_t batch_idx = 0, seen = 0;
  for (auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    const int64_t expected = batch_idx < 937 ? 64 : 60000 - 937 * 64;
    ASSERT_EQ(data.sizes(), torch::IntArrayRef({expected, 1, 28, 28}));
    ASSERT_EQ(targets.sizes(), torch::IntArrayRef({expected}));
    ASSERT_EQ(targets.dtype(), torch::kLong);
    if (batch_idx == 0) {
      // The first image normalized: (x - 0.1307) / 0.3081 from the raw pixels.
      const std::vector<uint8_t> images = raw_bytes("train-images-idx3-ubyte");
      if (!images.empty()) {
        const std::vector<float> got = data[0].template to_vector<float>();
        for (size_t p = 0; p < 784; ++p) {
          const double want = (double(images[16 + p]) / 255.0 - 0.1307) / 0.3081;
          ASSERT_NEAR(got[p], want, 1.3e-6 + 1e-5 * std::abs(want)) << p;
        }
      }
    }
    seen += size_t(targets.size(0));
    ++batch_idx;
  }
  EXPECT_EQ(batch_idx, 938u);
  EXPECT_EQ(seen, dataset_size);
}

template <typename DataLoader>
void test(torch::Device device, DataLoader& data_loader, size_t dataset_size) {
  int64_t test_seen = 0, label_sum = 0;
  for (const auto& batch : data_loader) {
    auto data = batch.data.to(device), targets = batch.target.to(device);
    EXPECT_EQ(data.sizes(), torch::IntArrayRef({1000, 1, 28, 28}));
    test_seen += targets.size(0);
    label_sum += targets.sum().template item<int64_t>();
  }
  EXPECT_EQ(size_t(test_seen), dataset_size);
  EXPECT_EQ(label_sum, 1000 * 45);  // 1000 of each class 0..9
}

// LibTorch's examples/cpp/mnist data code, as written there apart from the include.
TEST(CompatDataMnist, TheLibTorchExampleDataCode) {
  SKIP_WITHOUT("train-images-idx3-ubyte");
  const std::string kDataRoot = kRoot;
  const int64_t kTrainBatchSize = 64;
  const int64_t kTestBatchSize = 1000;
  torch::Device device(torch::kCPU);

  auto train_dataset = torch::data::datasets::MNIST(kDataRoot)
                           .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
                           .map(torch::data::transforms::Stack<>());
  const size_t train_dataset_size = train_dataset.size().value();
  auto train_loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      std::move(train_dataset), kTrainBatchSize);

  auto test_dataset =
      torch::data::datasets::MNIST(kDataRoot, torch::data::datasets::MNIST::Mode::kTest)
          .map(torch::data::transforms::Normalize<>(0.1307, 0.3081))
          .map(torch::data::transforms::Stack<>());
  const size_t test_dataset_size = test_dataset.size().value();
  auto test_loader = torch::data::make_data_loader(std::move(test_dataset), kTestBatchSize);

  EXPECT_EQ(train_dataset_size, 60000u);
  EXPECT_EQ(test_dataset_size, 10000u);

  train(device, *train_loader, train_dataset_size);
  test(device, *test_loader, test_dataset_size);
}

}  // namespace
