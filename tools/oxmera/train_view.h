#pragma once
// What `oxmera train` shows while it runs: the progress line (progress.h) or the full-screen
// dashboard (train_dashboard.h). The loop tells its view what happened and asks it, after each
// step, whether to go on; a view may pause the loop inside poll().

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace oxcli {

// The run as it starts.
struct RunInfo {
  std::string recipe = {}, optimizer = {}, scheduler = {};
  std::string precision = {};  // --precision
  std::string test_name = {};  // what evaluations read ("t10k", "held-out text")
  std::string summary = {};    // the model's layer table (views that show it ask for it)
  std::string save = {};       // the checkpoint path
  int64_t epochs = 0, batches_per_epoch = 0, batch_size = 0, train_examples = 0;
  int64_t first_step = 0;  // nonzero when resumed
  double lr = 0;
  uint64_t seed = 0;
  int threads = 0;
};

struct StepInfo {
  int64_t step = 0, epoch = 0;  // step counts from 1 over the run; epoch from 0
  int64_t samples = 0;
  double loss = 0, lr = 0;
  double grad_norm = 0;  // when the view asked for gradient norms, else 0
  // Each parameter's gradient norm, largest first (when the view asked for them).
  std::vector<std::pair<std::string, double>> layer_norms = {};
};

struct EvalInfo {
  int64_t step = 0, epoch = 0;
  double loss = 0, accuracy = 0;
};

enum class Request { kContinue, kQuit };

class TrainView {
 public:
  virtual ~TrainView() = default;
  // `done` batches of `epoch` (0-based) were trained before this process (a resumed run).
  virtual void start_epoch(int64_t epoch, int64_t done) = 0;
  virtual void step(const StepInfo& info) = 0;
  virtual void end_epoch() = 0;
  virtual void evaluating() {}
  virtual void evaluated(const EvalInfo& info) = 0;
  // Called between steps and evaluation batches: kQuit asks the loop to save and stop.
  virtual Request poll() { return Request::kContinue; }
  // The run is over (`message` says how); a view may wait for the user to read it.
  virtual void finished(const std::string& message) { (void)message; }
  // The run failed (`message` says why; the caller prints it too after close()).
  virtual void failed(const std::string& message) { (void)message; }
  // Gives the terminal back (ends an open line, leaves full screen) before plain output.
  virtual void close() = 0;
  // Whether step() wants grad_norm and layer_norms filled (they cost a reduction each).
  virtual bool wants_gradient_norms() const { return false; }
  virtual double samples_per_s() const = 0;
};

}  // namespace oxcli
