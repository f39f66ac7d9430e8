#pragma once
// `oxmera train --tui`: a full-screen dashboard of the run. Loss curves (training per step,
// validation per epoch), the evaluations, learning rate, samples/s, progress with ETA, gradient
// norms (global over time and the largest per parameter) and the model summary. Keys: q saves a
// checkpoint and quits, p pauses, tab cycles the lower panel. A resize redraws.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "canvas.h"
#include "terminal.h"
#include "train_view.h"

namespace oxcli {

// What the dashboard draws, kept apart from the terminal so a layout can be drawn in a test.
struct TrainHistory {
  RunInfo run;
  std::vector<double> steps, losses, lrs, grad_norms, rates;  // one entry a step
  std::vector<double> eval_steps, eval_losses, accuracies;    // one entry an evaluation
  std::vector<std::pair<std::string, double>> layer_norms;    // the last step's, largest first
  int64_t epoch = 0, batch = 0, step = 0;                     // batch: done in this epoch
  double samples_per_s = 0, elapsed_s = 0, eta_s = -1;
  std::string status = "training";
  std::string message;  // shown in place of the key help when set (the run's result)
};

enum class Panel { kGradients, kCurves, kModel, kCount };
const char* panel_name(Panel panel);

Canvas render_train_dashboard(const TrainHistory& history, Panel panel, int rows, int cols);

class TrainDashboard : public TrainView {
 public:
  // `stop_requested` tells a paused dashboard to let the loop see a signal.
  TrainDashboard(const RunInfo& run, std::function<bool()> stop_requested);
  void start_epoch(int64_t epoch, int64_t done) override;
  void step(const StepInfo& info) override;
  void end_epoch() override;
  void evaluating() override;
  void evaluated(const EvalInfo& info) override;
  Request poll() override;
  void finished(const std::string& message) override;
  void failed(const std::string& message) override;
  void close() override { terminal_.close(); }
  bool wants_gradient_norms() const override { return true; }
  double samples_per_s() const override { return history_.samples_per_s; }

 private:
  using Clock = std::chrono::steady_clock;
  // Seconds the run has trained in this process, pauses left out.
  double active_seconds() const;
  void toggle_pause();
  // Handles one key; kQuit when it asks to quit.
  Request handle(int key);
  void draw(bool force);
  // The end of the run on screen until the user has read it.
  void show_end(const char* status, const std::string& message);

  Terminal terminal_;
  TrainHistory history_;
  std::function<bool()> stop_requested_;
  Panel panel_ = Panel::kGradients;
  bool paused_ = false;
  Clock::time_point started_, paused_at_, last_draw_, last_step_;
  Clock::duration paused_for_{};
  int64_t epoch_samples_ = 0;
  double epoch_started_s_ = 0;  // active_seconds() when the epoch began
  int64_t steps_here_ = 0;      // steps trained by this process
};

}  // namespace oxcli
