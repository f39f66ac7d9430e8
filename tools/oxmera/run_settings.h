#pragma once
// The settings that shape an `oxmera train` run, stored in each checkpoint (its extra tensors
// "train.*") so that --resume continues exactly that run.

#include <oxmera/oxmera.h>

#include <cstdint>
#include <string>
#include <vector>

#include "recipes.h"

namespace oxcli {

// Bound of --lr: a rate above this only makes NaNs.
inline constexpr double kMaxLearningRate = 1000;

// Everything that shapes a run (its model, batches, rates, schedule and precision): a flag left
// out on resume takes the checkpoint's value, a flag given that differs is refused by name.
struct RunSettings {
  std::string recipe, optimizer, scheduler;
  std::string data;  // --data (cnn, mlp) or --text (chargpt, char_lstm), absolute
  int64_t epochs = 0, batch_size = 0, limit = 0;
  uint64_t seed = 0;
  double lr = 0;
  uint64_t data_fingerprint = 0;
  std::string precision = "f32";
  int64_t world_size = 1;  // the processes of an --ddp run (each rank's shard depends on it)
};

void store_run_settings(ox::TensorDict& extra, const RunSettings& settings);

// The settings of checkpoint `path` (its tensors `all`, keys "extra.train.*"); Format for a file
// that `oxmera train` did not write.
RunSettings read_run_settings(const ox::TensorDict& all, const std::string& path);

// Makes `config` the checkpoint's run: each setting not given on the command line is taken
// (and listed in `inherited`, for the resume line), each given one must equal the stored one.
void settle_resumed_settings(TrainConfig& config, const RunSettings& stored,
                             std::vector<std::string>& inherited);

// The training data read for a resumed run must be the data the checkpoint was trained on.
void check_resumed_data(const TrainConfig& config, const Task& task, const RunSettings& stored,
                        const ox::TensorDict& all);

}  // namespace oxcli
