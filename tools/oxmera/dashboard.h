#pragma once
// `oxmera dashboard RUN.jsonl...`: several logged runs (`oxmera train --log`) side by side.
// Training loss, validation loss and accuracy of each run overlaid, a legend with each run's
// final figures; files still being written are read again every two seconds. Not on a terminal
// (or with --text) it prints the legend as a table.

#include <string>
#include <vector>

#include "canvas.h"

namespace oxcli {

struct LoggedRun {
  std::string name;  // the file's name without .jsonl (its path when names clash)
  std::string path;
  std::vector<double> steps, losses;                        // step records
  std::vector<double> eval_steps, eval_losses, accuracies;  // eval records (NaN: none)
};

// Reads a run's log; Format and Io errors as read_jsonl's, Io for a path that is not a regular
// file (checked before opening), Format naming the file and line for a value out of its range
// (a negative step or epoch, an accuracy outside [0, 1], a negative rate, ...).
LoggedRun read_logged_run(const std::string& path);

// Each run's figures: steps, last training loss (mean of its last 20 steps), final validation
// loss and accuracy, best accuracy. One line a run after a header.
std::vector<std::string> run_table(const std::vector<LoggedRun>& runs);

Canvas render_run_comparison(const std::vector<LoggedRun>& runs, int rows, int cols,
                             const std::string& status);

}  // namespace oxcli
