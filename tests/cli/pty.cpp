#include "cli/pty.h"

#include "data/utf8.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <utmp.h>
#include <vterm.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace oxtest {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error("PtyProcess: " + what + ": " + std::strerror(errno));
}

std::string name_of(const std::string& entry) { return entry.substr(0, entry.find('=')); }

// The test's environment with `extra` over it, TERM defaulting to xterm-256color (what libvterm
// answers to) and no COLUMNS/LINES (curses would take them over the terminal's real size).
std::vector<std::string> child_environment(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  bool has_term = false;
  for (const std::string& e : extra) has_term |= name_of(e) == "TERM";
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e, name = name_of(entry);
    if (name == "COLUMNS" || name == "LINES" || (name == "TERM" && !has_term)) continue;
    bool overridden = false;
    for (const std::string& x : extra) overridden |= name_of(x) == name;
    if (!overridden) env.push_back(entry);
  }
  if (!has_term) env.emplace_back("TERM=xterm-256color");
  for (const std::string& x : extra) env.push_back(x);
  return env;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int decode_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? -WTERMSIG(status) : -1;
}

}  // namespace

struct PtyCallbacks {
  static int settermprop(VTermProp prop, VTermValue* value, void* user) {
    auto* self = static_cast<PtyProcess*>(user);
    if (prop == VTERM_PROP_ALTSCREEN) self->alternate_screen_ = value->boolean != 0;
    if (prop == VTERM_PROP_CURSORVISIBLE) self->cursor_visible_ = value->boolean != 0;
    return 1;
  }
  // Answers to the child's queries (cursor position, device attributes): sent once the bytes
  // being parsed are done, not from inside the parser.
  static void output(const char* bytes, size_t size, void* user) {
    static_cast<PtyProcess*>(user)->replies_.append(bytes, size);
  }
};

namespace {
const VTermScreenCallbacks kScreenCallbacks = {
    nullptr, nullptr, nullptr, &PtyCallbacks::settermprop, nullptr, nullptr, nullptr, nullptr};
}  // namespace

PtyProcess::PtyProcess(const std::vector<std::string>& argv, const PtyOptions& options) {
  if (argv.empty()) throw std::invalid_argument("PtyProcess: empty argv");
  vterm_ = vterm_new(options.rows, options.cols);
  vterm_set_utf8(vterm_, 1);
  screen_ = vterm_obtain_screen(vterm_);
  vterm_screen_set_callbacks(screen_, &kScreenCallbacks, this);
  vterm_screen_enable_altscreen(screen_, 1);
  vterm_screen_reset(screen_, 1);
  vterm_output_set_callback(vterm_, &PtyCallbacks::output, this);

  // Everything the child needs is made before fork: between fork and exec it calls only
  // async-signal-safe functions (gtest or the code under test may have started threads).
  std::vector<std::string> args = argv, env = child_environment(options.env);
  std::vector<char*> arg_pointers = pointers_to(args), env_pointers = pointers_to(env);
  const std::string dir = options.dir.string();
  static const char kExecFailed[] = "PtyProcess: exec failed\n";

  winsize size{};
  size.ws_row = static_cast<unsigned short>(options.rows);
  size.ws_col = static_cast<unsigned short>(options.cols);
  int slave = -1;
  // openpty then fork (what forkpty does) so that the starting modes are read before the child
  // can change them.
  if (openpty(&master_, &slave, nullptr, nullptr, &size) != 0) {
    vterm_free(vterm_);
    fail("openpty");
  }
  termios modes{};
  tcgetattr(slave, &modes);
  modes.c_iflag |= IUTF8;
  tcsetattr(slave, TCSANOW, &modes);
  tcgetattr(master_, &termios_at_start_);

  pid_ = fork();
  if (pid_ < 0) {
    close(slave);
    close(master_);
    vterm_free(vterm_);
    fail("fork");
  }
  if (pid_ == 0) {
    close(master_);
    if (login_tty(slave) != 0) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    for (int sig : {SIGINT, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGWINCH, SIGPIPE, SIGCHLD})
      sigaction(sig, &default_action, nullptr);
    if (!dir.empty() && chdir(dir.c_str()) != 0) _exit(127);
    execve(arg_pointers[0], arg_pointers.data(), env_pointers.data());
    const ssize_t ignored = write(STDERR_FILENO, kExecFailed, sizeof kExecFailed - 1);
    (void)ignored;
    _exit(127);
  }
  close(slave);
  fcntl(master_, F_SETFL, fcntl(master_, F_GETFL) | O_NONBLOCK);
  fcntl(master_, F_SETFD, FD_CLOEXEC);
}

PtyProcess::~PtyProcess() {
  if (!reaped_) {
    kill(-pid_, SIGKILL);  // the child leads its own session and process group
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (master_ >= 0) close(master_);
  vterm_free(vterm_);
}

std::string RepeatExpander::operator()(const char* bytes, size_t size) {
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    const char ch = bytes[i];
    switch (state_) {
      case State::kText:
        if (byte == 0x1b) {
          state_ = State::kEscape;
          sequence_.assign(1, ch);
          continue;
        }
        out += ch;
        if (utf8_left_ > 0 && (byte & 0xc0) == 0x80) {
          utf8_ += ch;
          if (--utf8_left_ == 0) last_ = utf8_;
        } else if (byte >= 0xc0) {
          utf8_.assign(1, ch);
          utf8_left_ = byte >= 0xf0 ? 3 : byte >= 0xe0 ? 2 : 1;
        } else if (byte >= 0x20 && byte < 0x7f) {
          last_.assign(1, ch);
          utf8_left_ = 0;
        }
        continue;
      case State::kEscape:
        sequence_ += ch;
        if (ch == '[') {
          state_ = State::kCsi;
          continue;
        }
        if (ch == ']' || ch == 'P' || ch == 'X' || ch == '^' || ch == '_') {
          state_ = State::kString;
          continue;
        }
        if (byte >= 0x20 && byte < 0x30) {
          state_ = State::kEscapeIntermediate;
          continue;
        }
        break;  // a two-byte sequence ends here
      case State::kEscapeIntermediate:
        sequence_ += ch;
        if (byte >= 0x20 && byte < 0x30) continue;
        break;
      case State::kCsi:
        sequence_ += ch;
        if (byte < 0x40 || byte > 0x7e) continue;
        if (ch == 'b' && sequence_.find_first_not_of("0123456789", 2) == sequence_.size() - 1) {
          const int count = sequence_.size() > 3 ? std::stoi(sequence_.substr(2)) : 1;
          for (int k = 0; k < std::max(count, 1); ++k) out += last_;
          sequence_.clear();
          state_ = State::kText;
          continue;
        }
        break;
      case State::kString:  // OSC, DCS and the like end with BEL or ESC backslash
        sequence_ += ch;
        if (byte == 0x07) break;
        if (byte == 0x1b) state_ = State::kStringEscape;
        continue;
      case State::kStringEscape:
        sequence_ += ch;
        if (ch == '\\') break;
        state_ = State::kString;
        continue;
    }
    out += sequence_;
    sequence_.clear();
    state_ = State::kText;
  }
  return out;
}

void PtyProcess::feed(const char* bytes, size_t size) {
  raw_output_.append(bytes, size);
  const std::string expanded = expand_repeats_(bytes, size);
  vterm_input_write(vterm_, expanded.data(), expanded.size());
  if (!replies_.empty()) {
    std::string replies;
    replies.swap(replies_);
    write_all(replies.data(), replies.size());
  }
}

bool PtyProcess::pump(milliseconds timeout) {
  if (eof_) return false;
  pollfd fd{master_, POLLIN, 0};
  const int ready = poll(&fd, 1, static_cast<int>(std::max<int64_t>(0, timeout.count())));
  if (ready <= 0) return true;  // nothing yet (or EINTR)
  char buffer[8192];
  for (;;) {
    const ssize_t n = read(master_, buffer, sizeof buffer);
    if (n > 0) {
      feed(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    eof_ = true;  // EIO: every process holding the child side closed it
    return false;
  }
}

bool PtyProcess::wait_for(const std::function<bool(const PtyProcess&)>& ready,
                          milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    if (ready(*this)) return true;
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    if (!pump(std::min(left, milliseconds(50)))) return ready(*this);
  }
}

bool PtyProcess::wait_for_text(const std::string& text, milliseconds timeout) {
  return wait_for(
      [&text](const PtyProcess& p) {
        for (const std::string& line : p.lines())
          if (line.find(text) != std::string::npos) return true;
        return false;
      },
      timeout);
}

int PtyProcess::rows() const {
  int rows = 0, cols = 0;
  vterm_get_size(vterm_, &rows, &cols);
  return rows;
}

int PtyProcess::cols() const {
  int rows = 0, cols = 0;
  vterm_get_size(vterm_, &rows, &cols);
  return cols;
}

std::vector<std::string> PtyProcess::lines() const {
  int rows = 0, cols = 0;
  vterm_get_size(vterm_, &rows, &cols);
  std::vector<std::string> out;
  for (int row = 0; row < rows; ++row) {
    std::string line;
    for (int col = 0; col < cols;) {
      VTermScreenCell cell{};
      vterm_screen_get_cell(screen_, VTermPos{row, col}, &cell);
      if (cell.chars[0] == 0) {
        line += ' ';
      } else {
        for (int i = 0; i < VTERM_MAX_CHARS_PER_CELL && cell.chars[i] != 0; ++i)
          ox::data::append_utf8(line, cell.chars[i]);
      }
      col += cell.width > 0 ? cell.width : 1;  // a wide character covers the next cell too
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out.push_back(std::move(line));
  }
  return out;
}

std::string PtyProcess::text() const {
  std::string out;
  for (const std::string& line : lines()) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

void PtyProcess::write_all(const char* bytes, size_t size) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (size > 0) {
    const ssize_t n = write(master_, bytes, size);
    if (n > 0) {
      bytes += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && Clock::now() < deadline) {
      // The child is not reading its input: wait for room without leaving its output unread
      // (it may be blocked writing it).
      pollfd fd{master_, POLLOUT, 0};
      poll(&fd, 1, 10);
      continue;
    }
    throw std::runtime_error(std::string("PtyProcess: write to the terminal: ") +
                             std::strerror(errno));
  }
}

void PtyProcess::send(const std::string& bytes) { write_all(bytes.data(), bytes.size()); }

void PtyProcess::send_key(Key key) {
  static const VTermKey kNamed[] = {
      VTERM_KEY_ENTER, VTERM_KEY_TAB,  VTERM_KEY_BACKSPACE, VTERM_KEY_ESCAPE,  VTERM_KEY_UP,
      VTERM_KEY_DOWN,  VTERM_KEY_LEFT, VTERM_KEY_RIGHT,     VTERM_KEY_INS,     VTERM_KEY_DEL,
      VTERM_KEY_HOME,  VTERM_KEY_END,  VTERM_KEY_PAGEUP,    VTERM_KEY_PAGEDOWN};
  const int index = static_cast<int>(key);
  const int named = static_cast<int>(sizeof kNamed / sizeof kNamed[0]);
  const VTermKey vterm_key =
      index < named ? kNamed[index] : VTermKey(VTERM_KEY_FUNCTION_0 + 1 + index - named);
  vterm_keyboard_key(vterm_, vterm_key, VTERM_MOD_NONE);
  std::string bytes;
  bytes.swap(replies_);  // the output callback collected the key's bytes
  write_all(bytes.data(), bytes.size());
}

void PtyProcess::resize(int rows, int cols) {
  winsize size{};
  size.ws_row = static_cast<unsigned short>(rows);
  size.ws_col = static_cast<unsigned short>(cols);
  if (ioctl(master_, TIOCSWINSZ, &size) != 0) fail("TIOCSWINSZ");
  vterm_set_size(vterm_, rows, cols);
}

int PtyProcess::wait_exit(milliseconds timeout) {
  if (reaped_) return exit_status_;
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      exit_status_ = decode_status(status);
      // The last output may still be on its way through the PTY; a process the child left
      // behind may hold the terminal open, so stop once it has been quiet for a while.
      for (;;) {
        const size_t before = raw_output_.size();
        if (!pump(milliseconds(200)) || raw_output_.size() == before) break;
        if (Clock::now() >= deadline) break;
      }
      return exit_status_;
    }
    if (Clock::now() >= deadline) return -1000;
    if (eof_)
      std::this_thread::sleep_for(milliseconds(5));
    else
      pump(milliseconds(20));
  }
}

termios PtyProcess::termios_now() const {
  termios now{};
  if (tcgetattr(master_, &now) != 0) fail("tcgetattr");
  return now;
}

bool same_modes(const termios& a, const termios& b) {
  return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag &&
         a.c_lflag == b.c_lflag && std::memcmp(a.c_cc, b.c_cc, sizeof a.c_cc) == 0;
}

std::string describe_mode_difference(const termios& expected, const termios& actual) {
  struct Flag {
    tcflag_t termios::*field;
    const char* field_name;
    tcflag_t bit;
    const char* name;
  };
  static const Flag kFlags[] = {
      {&termios::c_iflag, "iflag", ICRNL, "ICRNL"},
      {&termios::c_iflag, "iflag", IXON, "IXON"},
      {&termios::c_iflag, "iflag", BRKINT, "BRKINT"},
      {&termios::c_iflag, "iflag", INLCR, "INLCR"},
      {&termios::c_iflag, "iflag", ISTRIP, "ISTRIP"},
      {&termios::c_iflag, "iflag", IUTF8, "IUTF8"},
      {&termios::c_oflag, "oflag", OPOST, "OPOST"},
      {&termios::c_oflag, "oflag", ONLCR, "ONLCR"},
      {&termios::c_lflag, "lflag", ICANON, "ICANON"},
      {&termios::c_lflag, "lflag", ECHO, "ECHO"},
      {&termios::c_lflag, "lflag", ISIG, "ISIG"},
      {&termios::c_lflag, "lflag", IEXTEN, "IEXTEN"},
      {&termios::c_lflag, "lflag", ECHOE, "ECHOE"},
      {&termios::c_lflag, "lflag", ECHOK, "ECHOK"},
      {&termios::c_cflag, "cflag", CS8, "CS8"},
      {&termios::c_cflag, "cflag", PARENB, "PARENB"},
  };
  std::string out;
  for (const Flag& f : kFlags) {
    const bool want = (expected.*f.field & f.bit) == f.bit,
               have = (actual.*f.field & f.bit) == f.bit;
    if (want != have) out += std::string(f.field_name) + " " + f.name + (have ? " on; " : " off; ");
  }
  for (size_t i = 0; i < NCCS; ++i)
    if (expected.c_cc[i] != actual.c_cc[i])
      out += "c_cc[" + std::to_string(i) + "] " + std::to_string(int(expected.c_cc[i])) + " -> " +
             std::to_string(int(actual.c_cc[i])) + "; ";
  if (out.empty() && !same_modes(expected, actual)) out = "other flag bits differ";
  return out.empty() ? "same" : out;
}

}  // namespace oxtest
