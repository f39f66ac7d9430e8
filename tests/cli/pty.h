// A program run in a pseudo-terminal, its screen rendered by libvterm: what a user would see.
// Tests start `oxmera` (or any program) at a given size, wait for text, send keys, resize, and
// check the screen, the terminal modes it leaves behind, and its exit status.
#pragma once

#include <sys/types.h>
#include <termios.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

struct VTerm;
struct VTermScreen;

namespace oxtest {

struct PtyOptions {
  int rows = 30, cols = 100;
  // The child's working directory; empty: the test's own.
  std::filesystem::path dir;
  // Extra NAME=VALUE entries over the test's environment. TERM=xterm-256color unless given
  // here; COLUMNS and LINES are removed (they would override the terminal's size).
  std::vector<std::string> env;
};

// Keys whose bytes depend on the terminal's modes (cursor keys send ESC O A once a curses
// program turned on `keypad`, ESC [ A before).
enum class Key {
  Enter,
  Tab,
  Backspace,
  Escape,
  Up,
  Down,
  Left,
  Right,
  Insert,
  Delete,
  Home,
  End,
  PageUp,
  PageDown,
  F1,
  F2,
  F3,
  F4,
  F5,
  F6,
  F7,
  F8,
  F9,
  F10,
  F11,
  F12
};

// libvterm 0.1.4 mishandles REP (CSI n b: repeat the last character n times, which ncurses
// sends for runs of one character under TERM=xterm-256color) when the run ends at the right
// margin: the line is lost. The harness expands REP into the characters themselves before
// libvterm sees it, as xterm draws them. Sequences split across reads are carried over.
class RepeatExpander {
 public:
  std::string operator()(const char* bytes, size_t size);

 private:
  enum class State { kText, kEscape, kEscapeIntermediate, kCsi, kString, kStringEscape };
  State state_ = State::kText;
  std::string sequence_;  // the escape sequence being read
  std::string last_;      // the bytes of the last graphic character
  std::string utf8_;      // a multi-byte character being read
  int utf8_left_ = 0;
};

class PtyProcess {
 public:
  // argv[0] is the program's path (no PATH search). The child starts in a new session whose
  // controlling terminal is a fresh PTY of options' size, with the kernel's default (cooked)
  // modes plus IUTF8. A child that cannot start exits with 127.
  PtyProcess(const std::vector<std::string>& argv, const PtyOptions& options);
  ~PtyProcess();  // SIGKILLs the child's process group and reaps a child still running
  PtyProcess(const PtyProcess&) = delete;
  PtyProcess& operator=(const PtyProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Waits up to `timeout` for output, then feeds all that is available to the screen. False
  // once the child side is closed (every process holding it exited) and all output was read.
  bool pump(std::chrono::milliseconds timeout);
  // Pumps until `ready` holds (true) or the time is up or the output ended without it (false).
  bool wait_for(const std::function<bool(const PtyProcess&)>& ready,
                std::chrono::milliseconds timeout);
  // `text` anywhere on one line of the screen.
  bool wait_for_text(const std::string& text, std::chrono::milliseconds timeout);

  // The screen now: rows() lines, trailing spaces trimmed, UTF-8.
  std::vector<std::string> lines() const;
  std::string text() const;  // lines() joined with '\n'
  int rows() const;
  int cols() const;

  void send(const std::string& bytes);  // what the user types, e.g. "q", "\t", "\x03" (^C)
  void send_key(Key key);               // what the terminal sends for `key` in its modes now
  // Sets the PTY's size (the kernel sends SIGWINCH to the child's foreground group) and the
  // screen's.
  void resize(int rows, int cols);

  // The exit status, -signal when killed by one, -1000 when still running after `timeout`.
  // Keeps reading output meanwhile, and after the exit, what is left of it.
  int wait_exit(std::chrono::milliseconds timeout);

  termios termios_at_start() const { return termios_at_start_; }  // before the child ran
  // The PTY's modes now; still what the child left after it exited (the master stays open).
  termios termios_now() const;

  bool alternate_screen() const { return alternate_screen_; }
  bool cursor_visible() const { return cursor_visible_; }
  const std::string& raw_output() const { return raw_output_; }  // every byte the child wrote

 private:
  friend struct PtyCallbacks;  // libvterm's callbacks
  void write_all(const char* bytes, size_t size);
  void feed(const char* bytes, size_t size);

  int master_ = -1;
  pid_t pid_ = -1;
  bool reaped_ = false, eof_ = false;
  int exit_status_ = -1000;
  termios termios_at_start_{};
  VTerm* vterm_ = nullptr;
  VTermScreen* screen_ = nullptr;
  bool alternate_screen_ = false, cursor_visible_ = true;
  std::string raw_output_;
  RepeatExpander expand_repeats_;
  std::string replies_;  // what the terminal answers the child's queries with, not yet sent
};

// The same terminal modes: iflag, oflag, cflag, lflag and every c_cc.
bool same_modes(const termios& a, const termios& b);

// What differs between two termios, for failure messages ("lflag: ICANON ECHO off", ...).
std::string describe_mode_difference(const termios& expected, const termios& actual);

}  // namespace oxtest
