#include "terminal.h"

#include <curses.h>
#include <oxmera/oxmera.h>
#include <unistd.h>

#include <atomic>
#include <exception>

namespace oxcli {

namespace {

// The open terminal, for the terminate handler (one can be open at a time: ncurses is global).
std::atomic<bool> terminal_open{false};
std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void give_back_then_terminate() {
  if (terminal_open.exchange(false)) endwin();
  if (previous_terminate) previous_terminate();
  std::abort();
}

chtype line_glyph(Glyph glyph) {
  switch (glyph) {
    case Glyph::kHLine:
      return ACS_HLINE;
    case Glyph::kVLine:
      return ACS_VLINE;
    case Glyph::kTopLeft:
      return ACS_ULCORNER;
    case Glyph::kTopRight:
      return ACS_URCORNER;
    case Glyph::kBottomLeft:
      return ACS_LLCORNER;
    case Glyph::kBottomRight:
      return ACS_LRCORNER;
    case Glyph::kChar:
      break;
  }
  return ' ';
}

bool colors = false;

chtype attributes(const Style& style) {
  chtype attr = A_NORMAL;
  if (colors && style.color != Color::kNormal) attr |= COLOR_PAIR(int(style.color));
  if (style.bold) attr |= A_BOLD;
  if (style.dim) attr |= A_DIM;
  if (style.reverse) attr |= A_REVERSE;
  return attr;
}

}  // namespace

Terminal::Terminal(const char* command) {
  OX_CHECK(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO), Value, command,
           "the dashboard needs a terminal for standard input and output");
  OX_CHECK(!terminal_open.load(), Internal, command, "a dashboard is open already");
  // initscr() exits the program when the terminal type is unknown; newterm() returns instead.
  SCREEN* screen = newterm(nullptr, stdout, stdin);
  OX_CHECK(screen != nullptr, Value, command, "the terminal type (TERM='",
           getenv("TERM") ? getenv("TERM") : "", "') is not known to ncurses");
  screen_ = screen;
  open_ = true;
  terminal_open.store(true);
  previous_terminate = std::set_terminate(give_back_then_terminate);
  cbreak();
  noecho();
  nonl();
  keypad(stdscr, TRUE);
  curs_set(0);
  colors = has_colors();
  if (colors) {
    start_color();
    use_default_colors();
    init_pair(short(Color::kAccent), COLOR_CYAN, -1);
    init_pair(short(Color::kTrain), COLOR_YELLOW, -1);
    init_pair(short(Color::kEval), COLOR_GREEN, -1);
    init_pair(short(Color::kThird), COLOR_MAGENTA, -1);
    init_pair(short(Color::kFourth), COLOR_BLUE, -1);
    init_pair(short(Color::kWarn), COLOR_RED, -1);
  }
}

Terminal::~Terminal() { close(); }

void Terminal::close() {
  if (!open_) return;
  open_ = false;
  endwin();
  delscreen(static_cast<SCREEN*>(screen_));
  screen_ = nullptr;
  terminal_open.store(false);
  std::set_terminate(previous_terminate);
}

int Terminal::rows() const { return LINES; }
int Terminal::cols() const { return COLS; }

void Terminal::show(const Canvas& canvas) {
  erase();
  for (int r = 0; r < canvas.rows() && r < LINES; ++r)
    for (int c = 0; c < canvas.cols() && c < COLS; ++c) {
      const Cell& cell = canvas.at(r, c);
      const chtype ch =
          cell.glyph == Glyph::kChar ? chtype(uint8_t(cell.ch)) : line_glyph(cell.glyph);
      // The bottom-right cell is written with insch: addch there would scroll the screen.
      if (r == LINES - 1 && c == COLS - 1)
        mvinsch(r, c, ch | attributes(cell.style));
      else
        mvaddch(r, c, ch | attributes(cell.style));
    }
  refresh();
}

int Terminal::key(int timeout_ms) {
  timeout(timeout_ms);
  const int k = getch();
  if (k == ERR) return kNone;
  if (k == KEY_RESIZE) {
    // A terminal that shrank dropped what was outside it; ncurses would skip cells it
    // believes are still drawn, so the next frame is drawn whole.
    clearok(curscr, TRUE);
    return kResize;
  }
  return k;
}

}  // namespace oxcli
