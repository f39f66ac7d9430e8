#pragma once
// The progress of `oxmera train`: on a terminal one line per epoch redrawn in place (epoch, bar,
// batches, samples/s, ETA, running loss); otherwise plain lines, one about every tenth of an
// epoch and one when it ends, so logs and pipes read well.

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace oxcli {

class Progress {
 public:
  Progress(std::FILE* out, bool terminal, int64_t epochs, int64_t batches_per_epoch);
  // `done` batches of `epoch` (0-based) were skipped (a resumed run) before this one starts.
  void start_epoch(int64_t epoch, int64_t done);
  // One more batch of `samples` examples with this loss.
  void step(int64_t samples, double loss);
  // Ends the epoch's line.
  void end_epoch();
  // Ends a terminal line left open (before other output).
  void interrupt();
  double epoch_loss() const { return batches_ > 0 ? loss_sum_ / double(batches_) : 0.0; }
  double samples_per_s() const;

 private:
  void draw(bool final_line);
  std::FILE* out_;
  bool terminal_;
  int64_t epochs_, batches_per_epoch_;
  int64_t epoch_ = 0, done_ = 0, batches_ = 0, samples_ = 0;
  int64_t next_report_ = 0;  // plain output: the batch count of the next line
  double loss_sum_ = 0;
  bool open_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace oxcli
