#pragma once
// The models and data sets `oxmera train` knows (its --recipe values): each gives a model, its
// training and test data, and how to turn a batch into class logits, so one loop trains all.

#include <oxmera/oxmera.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

namespace oxcli {

// What `oxmera train` was asked to do; unset numbers (0, negative lr) take the recipe's default.
// `given` holds the flags the command line set (a resumed run takes the others from its
// checkpoint).
struct TrainConfig {
  std::string recipe = "cnn";
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string text = "/usr/share/common-licenses/GPL-3";
  std::string model;            // lm: a Hugging Face causal model folder
  std::string save_pretrained;  // lm: where to write the trained model as such a folder
  int64_t epochs = 1;
  int64_t batch_size = 0;
  double lr = 0;
  std::string optimizer;  // "" = the recipe's
  std::string scheduler = "none";
  std::string precision = "f32";  // precision.h
  uint64_t seed = 0;
  int threads = 0;
  std::string device = "cpu";
  int64_t limit = 0;
  int64_t eval_limit = 0;  // evaluate on the first N test examples (0: all)
  std::string save;
  std::string resume;
  std::string log;
  std::string tensorboard;
  bool tui = false;
  bool overwrite = false;        // --save may replace a file that is not a checkpoint
  bool allow_nonfinite = false;  // train on past a NaN or infinite loss
  // One rank of a data-parallel run (oxmera launch sets RANK, WORLD_SIZE, MASTER_*): each
  // trains on its shard of every epoch, gradients averaged over the ranks; rank 0 alone
  // writes the checkpoint and logs and prints.
  bool ddp = false;
  std::set<std::string> given;
  bool was_given(const std::string& flag) const { return given.count(flag) != 0; }
};

const std::vector<std::string>& recipe_names();
// Whether the recipe trains on --text (chargpt, char_lstm, lm) rather than on --data images.
bool is_text_recipe(const std::string& recipe);

// A recipe made concrete: the model is built (from the current default generator) and the data
// read. `logits` maps a batch's data to [N, classes] and `targets` its targets to [N].
struct Task {
  ox::nn::ModulePtr model;
  std::function<ox::Tensor(const ox::Tensor&)> logits;
  std::function<ox::Tensor(const ox::Tensor&)> targets;
  ox::data::DatasetPtr train, test;
  std::string test_name;  // what `test` is, for the output
  int64_t batch_size = 64;
  double lr = 1e-3;
  std::string optimizer = "adam";
  // Stored in the checkpoint beside the model (chargpt, char_lstm: the vocabulary).
  ox::TensorDict extra;
  // What the training examples are, to tell on resume whether the data is the checkpoint's:
  // a hash of the bytes trained on (images and labels of the examples used; the text).
  uint64_t data_fingerprint = 0;
  // Text to print when training ends (chargpt, char_lstm: a sample), empty when none.
  std::function<std::string(uint64_t seed)> sample;
  // Run by the leader after the last checkpoint (lm: --save-pretrained); returns what to print.
  std::function<std::string()> finish;
};

// Reads the recipe's data (Io/Format errors for a missing or bad file, a path that is not a
// regular file or folder, images that are not 28x28, labels outside the 10 classes) and builds
// its model.
Task make_task(const TrainConfig& config);

}  // namespace oxcli
