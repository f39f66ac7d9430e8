#include "dashboard.h"

#include <oxmera/oxmera.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "checks.h"
#include "commands.h"
#include "terminal.h"

namespace oxcli {

namespace {

constexpr std::array<char, 6> kMarkers = {'*', '+', 'o', 'x', '#', '@'};
constexpr std::array<Color, 6> kColors = {Color::kTrain,  Color::kEval,   Color::kThird,
                                          Color::kFourth, Color::kAccent, Color::kWarn};

char marker_of(size_t run) { return kMarkers[run % kMarkers.size()]; }
Color color_of(size_t run) { return kColors[run % kColors.size()]; }

std::string figure(double value, const char* pattern) {
  if (!std::isfinite(value)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

double last_or_nan(const std::vector<double>& values) {
  return values.empty() ? NAN : values.back();
}

std::vector<Series> overlay(const std::vector<LoggedRun>& runs, std::vector<double> LoggedRun::*xs,
                            std::vector<double> LoggedRun::*ys, double scale, bool range) {
  std::vector<Series> series;
  for (size_t i = 0; i < runs.size(); ++i) {
    Series s{runs[i].name, runs[i].*xs, runs[i].*ys, marker_of(i), color_of(i), range};
    for (double& y : s.y) y *= scale;
    series.push_back(std::move(s));
  }
  return series;
}

// Names that say which file each run is: file names, or paths where two names are the same.
void name_runs(std::vector<LoggedRun>& runs) {
  for (LoggedRun& run : runs) {
    const bool clash =
        std::count_if(runs.begin(), runs.end(), [&](const LoggedRun& other) {
          return std::filesystem::path(other.path).stem() == std::filesystem::path(run.path).stem();
        }) > 1;
    run.name = clash ? run.path : std::filesystem::path(run.path).stem().string();
  }
}

}  // namespace

namespace {

constexpr const char* kOp = "oxmera dashboard";

// A log is read as data, not trusted: every value a chart or the table uses is checked, and a
// bad one is refused with its file and line, never drawn as nonsense.
void check_record(const ox::io::LogRecord& record, const std::string& path) {
  const auto where = [&] { return path + ":" + std::to_string(record.line); };
  // Steps are plotted as doubles: beyond 2^53 they would collapse together.
  constexpr int64_t kMaxStep = int64_t(1) << 53;
  const int64_t first = record.type == "step" ? 1 : 0;
  OX_CHECK(record.step >= first && record.step <= kMaxStep, Format, kOp, where(), ": ", record.type,
           " record with step ", record.step, ", outside [", first, ", 2^53]");
  OX_CHECK(record.epoch >= 0, Format, kOp, where(), ": epoch ", record.epoch, " is negative");
  for (const auto& [name, value] : record.scalars) {
    if (name == "loss" || name == "eval_loss") continue;  // a diverged run logs NaN or inf
    if (name == "accuracy")
      OX_CHECK(std::isnan(value) || (value >= 0 && value <= 1), Format, kOp, where(), ": accuracy ",
               value, " is outside [0, 1]");
    else if (name == "grad_norm")
      OX_CHECK(std::isnan(value) || value >= 0, Format, kOp, where(), ": grad_norm ", value,
               " is negative");
    else if (name == "lr" || name == "samples_per_s" || name == "elapsed_s")
      OX_CHECK(std::isfinite(value) && value >= 0, Format, kOp, where(), ": ", name, " ", value,
               " is not a finite number >= 0");
  }
}

}  // namespace

LoggedRun read_logged_run(const std::string& path) {
  // stat first: a FIFO would block the read forever, a folder fail deep inside the stream.
  check_input_file(path, kOp);
  LoggedRun run;
  run.path = path;
  for (const ox::io::LogRecord& record : ox::io::read_jsonl(path)) {
    check_record(record, path);
    const auto scalar = [&](const char* name) {
      const auto it = record.scalars.find(name);
      return it == record.scalars.end() ? NAN : it->second;
    };
    if (record.type == "step") {
      run.steps.push_back(double(record.step));
      run.losses.push_back(scalar("loss"));
    } else {
      run.eval_steps.push_back(double(record.step));
      run.eval_losses.push_back(scalar("loss"));
      run.accuracies.push_back(scalar("accuracy"));
    }
  }
  return run;
}

std::vector<std::string> run_table(const std::vector<LoggedRun>& runs) {
  size_t name_width = 3;
  for (const LoggedRun& run : runs) name_width = std::max(name_width, run.name.size());
  std::vector<std::string> lines;
  char line[512];
  std::snprintf(line, sizeof line, "  %-*s  %8s  %10s  %8s  %9s  %9s", int(name_width), "run",
                "steps", "train loss", "val loss", "accuracy", "best acc");
  lines.push_back(line);
  for (size_t i = 0; i < runs.size(); ++i) {
    const LoggedRun& run = runs[i];
    const double best = run.accuracies.empty()
                            ? NAN
                            : *std::max_element(run.accuracies.begin(), run.accuracies.end());
    std::snprintf(line, sizeof line, "%c %-*s  %8lld  %10s  %8s  %9s  %9s", marker_of(i),
                  int(name_width), run.name.c_str(),
                  (long long)(run.steps.empty() ? 0 : run.steps.back()),
                  figure(mean_of_last(run.losses, 20), "%.4f").c_str(),
                  figure(last_or_nan(run.eval_losses), "%.4f").c_str(),
                  figure(100 * last_or_nan(run.accuracies), "%.2f%%").c_str(),
                  figure(100 * best, "%.2f%%").c_str());
    lines.push_back(line);
  }
  return lines;
}

Canvas render_run_comparison(const std::vector<LoggedRun>& runs, int rows, int cols,
                             const std::string& status) {
  Canvas canvas(rows, cols);
  if (rows < 12 || cols < 50) {
    canvas.text(0, 0, "oxmera dashboard needs a terminal of 50x12 or more");
    return canvas;
  }
  canvas.fill({0, 0, 1, cols}, ' ', {.reverse = true});
  canvas.text(0, 0, " oxmera dashboard  " + std::to_string(runs.size()) + " runs",
              {.bold = true, .reverse = true});
  canvas.text(0, std::max(0, cols - int(status.size()) - 1), status, {.reverse = true});

  const std::vector<std::string> table = run_table(runs);
  const int legend_rows = std::min(int(table.size()) + 2, rows / 3);
  const int chart_rows = rows - 2 - legend_rows;
  const int top_rows = chart_rows / 2 + chart_rows % 2;
  const Rect loss{1, 0, top_rows, cols};
  canvas.box(loss, "Training loss", kTitle);
  canvas.chart(loss.inner(), overlay(runs, &LoggedRun::steps, &LoggedRun::losses, 1, false),
               "step");
  const Rect eval_loss{1 + top_rows, 0, chart_rows - top_rows, cols / 2};
  canvas.box(eval_loss, "Validation loss", kTitle);
  canvas.chart(eval_loss.inner(),
               overlay(runs, &LoggedRun::eval_steps, &LoggedRun::eval_losses, 1, false), "step");
  const Rect accuracy{1 + top_rows, cols / 2, chart_rows - top_rows, cols - cols / 2};
  canvas.box(accuracy, "Accuracy %", kTitle);
  canvas.chart(accuracy.inner(),
               overlay(runs, &LoggedRun::eval_steps, &LoggedRun::accuracies, 100, false), "step");

  const Rect legend{1 + chart_rows, 0, legend_rows, cols};
  canvas.box(legend, "Runs", kTitle);
  const Rect in = legend.inner();
  for (int i = 0; i < in.rows && size_t(i) < table.size(); ++i)
    canvas.text(in.row + i, in.col + 1, table[size_t(i)],
                i == 0 ? Style{.dim = true} : Style{.color = color_of(size_t(i - 1)), .bold = true},
                in.cols - 2);
  canvas.text(rows - 1, 1, "q quit   r read the logs again (also every 2 s)", {.dim = true});
  return canvas;
}

Runner add_dashboard(CLI::App& app) {
  CLI::App* cmd =
      app.add_subcommand("dashboard", "compare logged runs (oxmera train --log FILE.jsonl)");
  auto paths = std::make_shared<std::vector<std::string>>();
  auto text = std::make_shared<bool>(false);
  cmd->add_option("runs", *paths, "JSON-lines logs")->required();
  cmd->add_flag("--text", *text, "print the table of runs instead of the full-screen view");
  return [paths, text]() -> int {
    const auto read_all = [&] {
      std::vector<LoggedRun> runs;
      for (const std::string& path : *paths) runs.push_back(read_logged_run(path));
      name_runs(runs);
      return runs;
    };
    std::vector<LoggedRun> runs;
    try {
      runs = read_all();
    } catch (const ox::Error& e) {
      std::fprintf(stderr, "oxmera dashboard: %s error: %s\n", ox::error_kind_name(e.kind()),
                   e.what());
      return 2;
    }
    if (*text || !isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
      for (const std::string& line : run_table(runs)) std::printf("%s\n", line.c_str());
      return 0;
    }
    Terminal terminal("oxmera dashboard");
    std::string status = "read just now";
    auto read_at = std::chrono::steady_clock::now();
    for (;;) {
      terminal.show(render_run_comparison(runs, terminal.rows(), terminal.cols(), status));
      const int key = terminal.key(250);
      if (key == 'q' || key == 'Q' || key == 27) return 0;
      const auto now = std::chrono::steady_clock::now();
      if (key == 'r' || key == 'R' || now - read_at >= std::chrono::seconds(2)) {
        read_at = now;
        // A log being written may end in a half-written line; the last good reading stays.
        try {
          runs = read_all();
          status = "read just now";
        } catch (const ox::Error& e) {
          status = "could not read again: " + std::string(ox::error_kind_name(e.kind()));
        }
      }
    }
  };
}

}  // namespace oxcli
