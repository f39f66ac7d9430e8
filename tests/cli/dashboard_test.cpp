// The dashboards' drawing, without a terminal: charts put their points where the arithmetic in
// each test says, and the layouts show their panels. The PTY tests (train_tui_test.cpp) run the
// real program in a terminal.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "dashboard.h"
#include "train_dashboard.h"

namespace {

using oxcli::Canvas;
using oxcli::Series;

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

TEST(Canvas, ChartPlacesPointsByLinearScaling) {
  // 10 rows: 9 to plot and the x labels; 13 columns: 8 for the y labels and axis, 5 to plot.
  Canvas canvas(10, 13);
  canvas.chart({0, 0, 10, 13}, {{"line", {0, 1, 2}, {0, 1, 2}, '*'}}, "");
  // x in [0, 2] -> columns 8 + round(x / 2 * 4); y in [0, 2] -> rows round((2 - y) / 2 * 8).
  EXPECT_EQ(canvas.at(8, 8).ch, '*');
  EXPECT_EQ(canvas.at(4, 10).ch, '*');
  EXPECT_EQ(canvas.at(0, 12).ch, '*');
  int markers = 0;
  for (int r = 0; r < 10; ++r)
    for (int c = 0; c < 13; ++c) markers += canvas.at(r, c).ch == '*';
  EXPECT_EQ(markers, 3);
  const std::vector<std::string> lines = canvas.lines();
  EXPECT_EQ(lines[0].substr(0, 1), "2");  // the top label is the largest y
  EXPECT_EQ(lines[4].substr(0, 1), "1");  // the middle row's y
  EXPECT_EQ(lines[8].substr(0, 1), "0");
  EXPECT_EQ(lines[9].substr(8, 1), "0");  // the first x under the plot's first column
  EXPECT_EQ(lines[9].back(), '2');        // the last x ends under its last column
}

TEST(Canvas, ChartAveragesPointsSharingAColumnAndSkipsNonFinite) {
  Canvas canvas(6, 12);  // 5 rows and 4 columns to plot
  // x = 0 and 0.1 share column 0 (mean y 1); x = 3 is column 3 at y 3; NaN and inf are left out.
  canvas.chart({0, 0, 6, 12}, {{"s", {0, 0.1, 1, 2, 3}, {0, 2, NAN, INFINITY, 3}, 'x'}}, "");
  // y in [0, 3]: the mean 1 is row round((3 - 1) / 3 * 4) = 3, y = 3 is row 0.
  EXPECT_EQ(canvas.at(3, 8).ch, 'x');
  EXPECT_EQ(canvas.at(0, 11).ch, 'x');
  EXPECT_EQ(canvas.at(4, 8).ch, ' ');  // the y = 0 point went into the mean, not its own mark
}

TEST(Canvas, ChartWithNoFinitePointSaysSo) {
  Canvas canvas(8, 40);
  canvas.chart({0, 0, 8, 40}, {{"s", {1, 2}, {NAN, NAN}}}, "step");
  EXPECT_NE(joined(canvas.lines()).find("no data yet"), std::string::npos);
}

TEST(Canvas, BoxTextAndClipping) {
  Canvas canvas(3, 10);
  canvas.box({0, 0, 3, 10}, "Title");
  canvas.text(1, 1, "abcdefghijkl", {}, 8);
  canvas.put(5, 5, 'z');     // outside: ignored
  canvas.text(2, 8, "xyz");  // clipped at the edge
  EXPECT_EQ(canvas.lines(), (std::vector<std::string>{"+ Title -+", "|abcdefgh|", "+-------xy"}));
}

TEST(Canvas, NumbersAndDurations) {
  EXPECT_EQ(oxcli::compact_number(0.123456, 7), "0.1235");
  EXPECT_EQ(oxcli::compact_number(123456.0, 7), "1.2e+05");  // the most digits that fit
  EXPECT_EQ(oxcli::compact_number(2, 7), "2");
  EXPECT_EQ(oxcli::duration_text(59.4), "0:59");
  EXPECT_EQ(oxcli::duration_text(3723), "1:02:03");
  EXPECT_EQ(oxcli::duration_text(-1), "--:--");
}

oxcli::TrainHistory sample_history() {
  oxcli::TrainHistory h;
  h.run = {.recipe = "mlp",
           .optimizer = "adam",
           .scheduler = "cosine",
           .test_name = "t10k",
           .summary = "layer      type    output\nfc1        Linear  [1, 128]\n",
           .epochs = 2,
           .batches_per_epoch = 100,
           .batch_size = 64};
  for (int i = 1; i <= 150; ++i) {
    h.steps.push_back(i);
    h.losses.push_back(2.0 / i);
    h.lrs.push_back(1e-3);
    h.grad_norms.push_back(1.0);
    h.rates.push_back(1000);
  }
  h.eval_steps = {100};
  h.eval_losses = {0.25};
  h.accuracies = {0.875};
  h.layer_norms = {{"fc1.weight", 4.0}, {"a.very.long.module.path.fc2.weight", 2.0}};
  h.epoch = 1;
  h.batch = 50;
  h.step = 150;
  h.samples_per_s = 1000;
  return h;
}

TEST(TrainDashboardLayout, ShowsEveryPanelAt100x30) {
  const oxcli::TrainHistory h = sample_history();
  const std::string gradients =
      joined(render_train_dashboard(h, oxcli::Panel::kGradients, 30, 100).lines());
  for (const char* part : {"oxmera train  mlp", "epoch 2/2", "step 150/200", "Loss", "Metrics",
                           "Gradient norm (global)", "Largest parameter gradients", "fc1.weight",
                           "87.50%", "q quit", "p pause", "tab"})
    EXPECT_NE(gradients.find(part), std::string::npos) << part << "\n" << gradients;
  // Half the epoch's 100 batches and three quarters of the run's 200 steps are done.
  EXPECT_NE(gradients.find(" 50% 50/100"), std::string::npos) << gradients;
  EXPECT_NE(gradients.find(" 75%"), std::string::npos) << gradients;
  const std::string curves =
      joined(render_train_dashboard(h, oxcli::Panel::kCurves, 30, 100).lines());
  for (const char* part : {"Accuracy %", "Learning rate", "Samples/s"})
    EXPECT_NE(curves.find(part), std::string::npos) << part << "\n" << curves;
  const std::string model =
      joined(render_train_dashboard(h, oxcli::Panel::kModel, 30, 100).lines());
  EXPECT_NE(model.find("fc1        Linear  [1, 128]"), std::string::npos) << model;
}

TEST(TrainDashboardLayout, LongParameterNamesKeepTheirEnd) {
  const std::string text =
      joined(render_train_dashboard(sample_history(), oxcli::Panel::kGradients, 30, 100).lines());
  EXPECT_NE(text.find("~"), std::string::npos);
  EXPECT_NE(text.find("fc2.weight"), std::string::npos) << text;
}

TEST(TrainDashboardLayout, TooSmallATerminalSaysWhatItNeeds) {
  const std::vector<std::string> lines =
      render_train_dashboard(sample_history(), oxcli::Panel::kGradients, 10, 40).lines();
  EXPECT_EQ(lines[0], "the dashboard needs 60x16");
  EXPECT_EQ(lines[1], "(this terminal is 40x10)");
}

TEST(RunComparison, TableFiguresFromTheLogs) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("oxmera_dashboard_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run1.jsonl").string();
  std::filesystem::remove(path);
  {
    ox::io::JsonlLogger log(path);
    for (int step = 1; step <= 3; ++step)
      log.log_step({.step = step, .epoch = 0, .loss = double(step), .lr = 1e-3});
    log.log_eval({.step = 3, .epoch = 0, .loss = 0.5, .accuracy = 0.5});
    log.log_eval({.step = 3, .epoch = 1, .loss = 0.25, .accuracy = 0.8});
    log.log_eval({.step = 3, .epoch = 2, .loss = 0.75, .accuracy = 0.7});
  }
  const oxcli::LoggedRun run = oxcli::read_logged_run(path);
  EXPECT_EQ(run.steps, (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(run.accuracies, (std::vector<double>{0.5, 0.8, 0.7}));
  oxcli::LoggedRun named = run;
  named.name = "run1";
  const std::vector<std::string> table = oxcli::run_table({named});
  ASSERT_EQ(table.size(), 2u);
  // Mean of the losses 1, 2, 3; the last evaluation's loss and accuracy; the best accuracy.
  EXPECT_NE(table[1].find("2.0000"), std::string::npos) << table[1];
  EXPECT_NE(table[1].find("0.7500"), std::string::npos) << table[1];
  EXPECT_NE(table[1].find("70.00%"), std::string::npos) << table[1];
  EXPECT_NE(table[1].find("80.00%"), std::string::npos) << table[1];
  const std::string screen =
      joined(oxcli::render_run_comparison({named, named}, 30, 100, "read just now").lines());
  for (const char* part : {"2 runs", "Training loss", "Validation loss", "Accuracy %", "Runs"})
    EXPECT_NE(screen.find(part), std::string::npos) << part << "\n" << screen;
  std::filesystem::remove_all(dir);
}

TEST(RunComparison, ABrokenLogIsAFormatError) {
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("oxmera_bad_" + std::to_string(getpid()) + ".jsonl");
  { std::ofstream(path) << "{\"type\": \"step\"\n"; }
  try {
    oxcli::read_logged_run(path.string());
    ADD_FAILURE() << "no error";
  } catch (const ox::Error& e) {
    EXPECT_EQ(e.kind(), ox::ErrorKind::Format);
  }
  std::filesystem::remove(path);
}

}  // namespace
