#pragma once
// The progress of `oxmera train`: on a terminal one line per epoch redrawn in place (epoch, bar,
// batches, samples/s, ETA, running loss); otherwise plain lines, one about every tenth of an
// epoch and one when it ends, so logs and pipes read well.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "train_view.h"

namespace oxcli {

class Progress : public TrainView {
 public:
  Progress(std::FILE* out, bool terminal, const RunInfo& run);
  void start_epoch(int64_t epoch, int64_t done) override;
  void step(const StepInfo& info) override;
  void end_epoch() override;
  // Every evaluation but the last is a line of its own; the run's end states the last one.
  void evaluated(const EvalInfo& info) override;
  void close() override;
  double samples_per_s() const override;
  double epoch_loss() const { return batches_ > 0 ? loss_sum_ / double(batches_) : 0.0; }

 private:
  void draw(bool final_line);
  std::FILE* out_;
  bool terminal_;
  int64_t epochs_, batches_per_epoch_;
  std::string test_name_;
  int64_t epoch_ = 0, done_ = 0, batches_ = 0, samples_ = 0;
  int64_t next_report_ = 0;  // plain output: the batch count of the next line
  double loss_sum_ = 0;
  bool open_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace oxcli
