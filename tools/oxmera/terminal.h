#pragma once
// The full-screen terminal of the dashboards (ncurses): taken over on construction (alternate
// screen, keys one at a time without echo, cursor hidden) and given back exactly as it was by
// close() or the destructor, so also when an exception unwinds the dashboard. A terminate
// handler gives it back before an uncaught exception aborts the program.
//
// SIGINT, SIGTERM and SIGHUP should have their handlers before a Terminal opens: ncurses then
// leaves them alone (it installs its own only over the default action), and the program decides
// what they do. SIGWINCH is ncurses': a resize arrives as Key::kResize.

#include "canvas.h"

namespace oxcli {

class Terminal {
 public:
  enum Key : int { kNone = -1, kResize = -2, kTab = '\t' };

  // A Value error when standard input or output is not a terminal, or ncurses can not start.
  explicit Terminal(const char* command);
  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  void close();
  bool is_open() const { return open_; }
  int rows() const;
  int cols() const;
  // Puts the canvas on the screen, writing only what changed since the last one.
  void show(const Canvas& canvas);
  // The next key pressed within `timeout_ms` (0: only one already waiting), kNone when none.
  int key(int timeout_ms);

 private:
  bool open_ = false;
  void* screen_ = nullptr;  // ncurses' SCREEN
};

}  // namespace oxcli
