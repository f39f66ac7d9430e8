#include "train_dashboard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace oxcli {

namespace {

constexpr int kMinRows = 16, kMinCols = 60;
const Style kDim{.dim = true};

std::string format(const char* pattern, auto... values) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, values...);
  return text;
}

// A bar of `width` cells, `fraction` of them filled.
std::string bar(double fraction, int width) {
  const int filled = std::clamp(int(fraction * width), 0, width);
  return std::string(size_t(filled), '#') + std::string(size_t(width - filled), '.');
}

void header(Canvas& canvas, const TrainHistory& h) {
  const RunInfo& run = h.run;
  const int64_t total_steps = run.epochs * run.batches_per_epoch;
  canvas.fill({0, 0, 1, canvas.cols()}, ' ', {.reverse = true});
  const std::string left =
      format(" oxmera train  %s | epoch %lld/%lld | step %lld/%lld | %.0f samples/s | %s elapsed",
             run.recipe.c_str(), (long long)std::min(h.epoch + 1, run.epochs),
             (long long)run.epochs, (long long)h.step, (long long)total_steps, h.samples_per_s,
             duration_text(h.elapsed_s).c_str());
  canvas.text(0, 0, left, {.bold = true, .reverse = true});
  const std::string status = " " + h.status + " ";
  const Style status_style{.color = h.status == "training" ? Color::kNormal : Color::kWarn,
                           .bold = true,
                           .reverse = true};
  canvas.text(0, std::max(int(left.size()) + 1, canvas.cols() - int(status.size())), status,
              status_style);

  const double epoch_fraction =
      run.batches_per_epoch > 0 ? double(h.batch) / double(run.batches_per_epoch) : 1.0;
  const double run_fraction = total_steps > 0 ? double(h.step) / double(total_steps) : 1.0;
  const int bar_cols = std::max(10, (canvas.cols() - 62) / 2);
  canvas.text(
      1, 1,
      format("epoch [%s] %3.0f%% %lld/%lld   run [%s] %3.0f%%   ETA %s",
             bar(epoch_fraction, bar_cols).c_str(), 100 * epoch_fraction, (long long)h.batch,
             (long long)run.batches_per_epoch, bar(run_fraction, bar_cols).c_str(),
             100 * run_fraction, duration_text(h.eta_s).c_str()));
}

void loss_panel(Canvas& canvas, Rect area, const TrainHistory& h) {
  canvas.box(area, "Loss", kTitle);
  const Rect inside = area.inner();
  canvas.text(area.row, area.col + 8, " * training  o validation ", kDim, area.cols - 10);
  canvas.chart(inside,
               {{"training", h.steps, h.losses, '*', Color::kTrain, true},
                {"validation", h.eval_steps, h.eval_losses, 'o', Color::kEval, false}},
               "step");
}

void metrics_panel(Canvas& canvas, Rect area, const TrainHistory& h) {
  canvas.box(area, "Metrics", kTitle);
  const Rect in = area.inner();
  int row = in.row;
  const auto line = [&](const std::string& name, const std::string& value) {
    if (row >= in.row + in.rows) return;
    canvas.text(row, in.col + 1, name, kDim, in.cols - 2);
    canvas.text(row++, in.col + 17, value, {.bold = true}, in.cols - 18);
  };
  line("loss (last 20)", compact_number(mean_of_last(h.losses, 20), 10));
  line("learning rate", h.lrs.empty() ? "-" : compact_number(h.lrs.back(), 10));
  line("grad norm", h.grad_norms.empty() ? "-" : compact_number(h.grad_norms.back(), 10));
  line("samples/s", format("%.0f", h.samples_per_s));
  line("batch size", std::to_string(h.run.batch_size));
  line("optimizer", h.run.optimizer);
  line("precision", h.run.precision);
  line("lr schedule", h.run.scheduler);
  ++row;
  if (row < in.row + in.rows)
    canvas.text(row++, in.col + 1, "epoch  val loss  accuracy (" + h.run.test_name + ")", kDim,
                in.cols - 2);
  if (h.accuracies.empty() && row < in.row + in.rows)
    canvas.text(row++, in.col + 1, "after the first epoch", kDim, in.cols - 2);
  // The latest evaluations that fit, with the best one marked.
  const auto best = std::max_element(h.accuracies.begin(), h.accuracies.end());
  const int room = in.row + in.rows - row;
  const size_t first = h.accuracies.size() > size_t(std::max(room, 0))
                           ? h.accuracies.size() - size_t(std::max(room, 0))
                           : 0;
  for (size_t i = first; i < h.accuracies.size(); ++i) {
    const bool is_best = h.accuracies.begin() + int64_t(i) == best;
    canvas.text(row++, in.col + 1,
                format("%5zu  %8.4f  %6.2f%%%s", i + 1, h.eval_losses[i], 100 * h.accuracies[i],
                       is_best ? "  best" : ""),
                {.color = is_best ? Color::kEval : Color::kNormal}, in.cols - 2);
  }
}

void gradients_panel(Canvas& canvas, Rect area, const TrainHistory& h) {
  const int left_cols = area.cols * 3 / 5;
  const Rect chart_area{area.row, area.col, area.rows, left_cols};
  canvas.box(chart_area, "Gradient norm (global)", kTitle);
  canvas.chart(chart_area.inner(), {{"global", h.steps, h.grad_norms, '*', Color::kThird, true}},
               "step");
  const Rect list{area.row, area.col + left_cols, area.rows, area.cols - left_cols};
  canvas.box(list, "Largest parameter gradients", kTitle);
  const Rect in = list.inner();
  if (h.layer_norms.empty()) return;
  const double largest = h.layer_norms.front().second;
  const int value_cols = 9, bar_cols = std::max(4, in.cols / 4);
  const int name_cols = in.cols - value_cols - bar_cols - 3;
  for (int i = 0; i < in.rows && size_t(i) < h.layer_norms.size(); ++i) {
    const auto& [name, norm] = h.layer_norms[size_t(i)];
    // Long dotted names keep their end, where the parameter's own name is.
    std::string_view shown = name;
    if (int(shown.size()) > name_cols && name_cols > 1) {
      shown.remove_prefix(shown.size() - size_t(name_cols - 1));
      canvas.put(in.row + i, in.col, '~');
    }
    canvas.text(in.row + i, in.col + 1, shown, {}, name_cols);
    canvas.text(in.row + i, in.col + 2 + name_cols, compact_number(norm, value_cols - 1),
                {.bold = true});
    const double fraction = largest > 0 ? norm / largest : 0;
    canvas.text(
        in.row + i, in.col + 2 + name_cols + value_cols,
        std::string(size_t(std::clamp(int(std::lround(fraction * bar_cols)), 0, bar_cols)), '#'),
        {.color = Color::kThird});
  }
}

void curves_panel(Canvas& canvas, Rect area, const TrainHistory& h) {
  const int third = area.cols / 3;
  const Rect accuracy{area.row, area.col, area.rows, third};
  const Rect lr{area.row, area.col + third, area.rows, third};
  const Rect rate{area.row, area.col + 2 * third, area.rows, area.cols - 2 * third};
  std::vector<double> percent(h.accuracies.size());
  std::transform(h.accuracies.begin(), h.accuracies.end(), percent.begin(),
                 [](double a) { return 100 * a; });
  canvas.box(accuracy, "Accuracy %", kTitle);
  // Over the steps trained so far, so the evaluations sit where they happened.
  std::optional<std::pair<double, double>> steps;
  if (!h.steps.empty()) steps = {{h.steps.front(), h.steps.back()}};
  canvas.chart(accuracy.inner(), {{"accuracy", h.eval_steps, percent, 'o', Color::kEval, false}},
               "step", steps);
  canvas.box(lr, "Learning rate", kTitle);
  canvas.chart(lr.inner(), {{"lr", h.steps, h.lrs, '*', Color::kAccent, false}}, "step");
  canvas.box(rate, "Samples/s", kTitle);
  canvas.chart(rate.inner(), {{"samples/s", h.steps, h.rates, '*', Color::kFourth, true}}, "step");
}

void model_panel(Canvas& canvas, Rect area, const TrainHistory& h) {
  canvas.box(area, "Model", kTitle);
  const Rect in = area.inner();
  std::istringstream lines(h.run.summary);
  std::string line;
  for (int row = in.row; row < in.row + in.rows && std::getline(lines, line); ++row)
    canvas.text(row, in.col + 1, line, {}, in.cols - 2);
}

void footer(Canvas& canvas, Panel panel, const std::string& message) {
  const int row = canvas.rows() - 1;
  if (!message.empty()) {
    canvas.text(row, 1, message, {.color = Color::kEval, .bold = true}, canvas.cols() - 2);
    return;
  }
  int col = canvas.text(row, 1, "q", {.bold = true}) + 1;
  col += canvas.text(row, col, " quit (saves a checkpoint)   ", kDim);
  col += canvas.text(row, col, "p", {.bold = true});
  col += canvas.text(row, col, " pause   ", kDim);
  col += canvas.text(row, col, "tab", {.bold = true});
  col += canvas.text(row, col, " panel:", kDim);
  for (int p = 0; p < int(Panel::kCount); ++p) {
    col += canvas.text(row, col, " ", kDim);
    col +=
        canvas.text(row, col, panel_name(Panel(p)),
                    {.color = Color::kAccent, .bold = p == int(panel), .reverse = p == int(panel)});
  }
}

}  // namespace

const char* panel_name(Panel panel) {
  switch (panel) {
    case Panel::kGradients:
      return "Gradients";
    case Panel::kCurves:
      return "Accuracy, lr, speed";
    case Panel::kModel:
      return "Model";
    case Panel::kCount:
      break;
  }
  return "";
}

Canvas render_train_dashboard(const TrainHistory& history, Panel panel, int rows, int cols) {
  Canvas canvas(rows, cols);
  if (rows < kMinRows || cols < kMinCols) {
    canvas.text(0, 0, format("the dashboard needs %dx%d", kMinCols, kMinRows));
    canvas.text(1, 0, format("(this terminal is %dx%d)", cols, rows));
    canvas.text(2, 0,
                format("step %lld, loss %s, %s", (long long)history.step,
                       compact_number(mean_of_last(history.losses, 20), 10).c_str(),
                       history.status.c_str()));
    return canvas;
  }
  header(canvas, history);
  const int body_rows = rows - 3;  // header, progress line, footer
  const int top_rows = body_rows * 11 / 20;
  const int loss_cols = cols * 3 / 5;
  loss_panel(canvas, {2, 0, top_rows, loss_cols}, history);
  metrics_panel(canvas, {2, loss_cols, top_rows, cols - loss_cols}, history);
  const Rect lower{2 + top_rows, 0, body_rows - top_rows, cols};
  switch (panel) {
    case Panel::kGradients:
      gradients_panel(canvas, lower, history);
      break;
    case Panel::kCurves:
      curves_panel(canvas, lower, history);
      break;
    case Panel::kModel:
      model_panel(canvas, lower, history);
      break;
    case Panel::kCount:
      break;
  }
  footer(canvas, panel, history.message);
  return canvas;
}

TrainDashboard::TrainDashboard(const RunInfo& run, std::function<bool()> stop_requested)
    : terminal_("oxmera train --tui"), stop_requested_(std::move(stop_requested)) {
  history_.run = run;
  history_.step = run.first_step;
  started_ = last_draw_ = last_step_ = Clock::now();
  draw(true);
}

double TrainDashboard::active_seconds() const {
  const Clock::time_point now = paused_ ? paused_at_ : Clock::now();
  return std::chrono::duration<double>(now - started_ - paused_for_).count();
}

void TrainDashboard::start_epoch(int64_t epoch, int64_t done) {
  history_.epoch = epoch;
  history_.batch = done;
  epoch_samples_ = 0;
  epoch_started_s_ = active_seconds();
  history_.status = "training";
  draw(true);
}

void TrainDashboard::step(const StepInfo& info) {
  const Clock::time_point now = Clock::now();
  const double step_seconds = std::chrono::duration<double>(now - last_step_).count();
  last_step_ = now;
  history_.step = info.step;
  ++history_.batch;
  ++steps_here_;
  epoch_samples_ += info.samples;
  const double epoch_seconds = active_seconds() - epoch_started_s_;
  history_.samples_per_s = epoch_seconds > 0 ? double(epoch_samples_) / epoch_seconds : 0;
  history_.steps.push_back(double(info.step));
  history_.losses.push_back(info.loss);
  history_.lrs.push_back(info.lr);
  history_.grad_norms.push_back(info.grad_norm);
  history_.rates.push_back(step_seconds > 0 ? double(info.samples) / step_seconds : NAN);
  history_.layer_norms = info.layer_norms;
  history_.elapsed_s = active_seconds();
  const int64_t left = history_.run.epochs * history_.run.batches_per_epoch - info.step;
  history_.eta_s = history_.elapsed_s / double(steps_here_) * double(left);
  draw(false);
}

void TrainDashboard::end_epoch() { draw(true); }

void TrainDashboard::evaluating() {
  history_.status = "evaluating";
  draw(true);
}

void TrainDashboard::evaluated(const EvalInfo& info) {
  history_.eval_steps.push_back(double(info.step));
  history_.eval_losses.push_back(info.loss);
  history_.accuracies.push_back(info.accuracy);
  history_.status = "training";
  draw(true);
}

void TrainDashboard::toggle_pause() {
  paused_ = !paused_;
  if (paused_) {
    paused_at_ = Clock::now();
  } else {
    paused_for_ += Clock::now() - paused_at_;
    last_step_ = Clock::now();  // the pause is not the next step's time
  }
  history_.status = paused_ ? "paused" : "training";
  draw(true);
}

Request TrainDashboard::handle(int key) {
  switch (key) {
    case 'q':
    case 'Q':
      return Request::kQuit;
    case 'p':
    case 'P':
      toggle_pause();
      break;
    case Terminal::kTab:
      panel_ = Panel((int(panel_) + 1) % int(Panel::kCount));
      draw(true);
      break;
    case Terminal::kResize:
      draw(true);
      break;
    default:
      break;
  }
  return Request::kContinue;
}

Request TrainDashboard::poll() {
  // Every key waiting is handled; while paused, keys are waited for until p again.
  for (;;) {
    const int key = terminal_.key(paused_ ? 100 : 0);
    if (handle(key) == Request::kQuit) {
      if (paused_) toggle_pause();
      return Request::kQuit;
    }
    if (stop_requested_()) return Request::kContinue;
    if (key == Terminal::kNone && !paused_) return Request::kContinue;
  }
}

void TrainDashboard::finished(const std::string& message) { show_end("done", message); }

void TrainDashboard::failed(const std::string& message) { show_end("failed", message); }

void TrainDashboard::show_end(const char* status, const std::string& message) {
  history_.status = status;
  history_.eta_s = 0;
  history_.message = message + "  (q to leave)";
  draw(true);
  // The result stays on screen until the user has read it.
  for (;;) {
    const int key = terminal_.key(200);
    if (key == 'q' || key == 'Q' || key == '\r' || key == '\n' || key == 27) return;
    if (key != Terminal::kNone) handle(key);
    if (stop_requested_()) return;
  }
}

void TrainDashboard::draw(bool force) {
  const Clock::time_point now = Clock::now();
  // Ten frames a second are smooth; more would cost training time.
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  if (!paused_ && history_.status != "done") history_.elapsed_s = active_seconds();
  terminal_.show(render_train_dashboard(history_, panel_, terminal_.rows(), terminal_.cols()));
}

}  // namespace oxcli
