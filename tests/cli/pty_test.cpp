// The PTY harness itself, driven with /bin/sh and the terminal utilities, so that a broken
// harness shows here and not as a puzzling failure of an `oxmera` screen test.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/pty.h"

namespace {

using namespace std::chrono_literals;
using oxtest::PtyOptions;
using oxtest::PtyProcess;

// Generous: the machines running these are often busy.
constexpr auto kWait = 20s;

std::vector<std::string> sh(const std::string& script) { return {"/bin/sh", "-c", script}; }

PtyOptions size(int rows, int cols) {
  PtyOptions o;
  o.rows = rows;
  o.cols = cols;
  return o;
}

TEST(PtyHarness, LinesAreTheScreenTrimmedAndUtf8) {
  PtyProcess p(
      sh("printf 'hello\\n  two  spaces  \\n\\303\\251\\342\\206\\222\\346\\274\\242x\\n'"),
      size(6, 20));
  ASSERT_EQ(p.wait_exit(kWait), 0);
  const std::vector<std::string> lines = p.lines();
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[0], "hello");
  EXPECT_EQ(lines[1], "  two  spaces");
  EXPECT_EQ(lines[2], "\u00e9\u2192\u6f22x");  // the wide 漢 takes two cells, shown once
  EXPECT_EQ(lines[3], "");
  EXPECT_EQ(p.text(), "hello\n  two  spaces\n\u00e9\u2192\u6f22x\n\n\n");
  EXPECT_NE(p.raw_output().find("hello\r\n"), std::string::npos);  // cooked: ONLCR adds the \r
}

TEST(PtyHarness, LongLinesWrapAtTheWidth) {
  PtyProcess p(sh("printf '0123456789abcdefXY\\n'"), size(4, 16));
  ASSERT_EQ(p.wait_exit(kWait), 0);
  EXPECT_EQ(p.lines()[0], "0123456789abcdef");
  EXPECT_EQ(p.lines()[1], "XY");
}

TEST(PtyHarness, RepeatIsExpandedUpToTheRightMargin) {
  // REP (CSI n b) as ncurses sends it: a run reaching the last column, then the one there; also
  // a box-drawing character (DEC graphics) repeated, and a UTF-8 one. libvterm 0.1.4 alone
  // loses the first line.
  PtyProcess p(
      sh("printf 'ab\\033[17bX\\r\\n\\033(0q\\033[3bk\\033(B\\r\\n\\342\\206\\222\\033[2b.'"),
      size(4, 20));
  ASSERT_EQ(p.wait_exit(kWait), 0);
  EXPECT_EQ(p.lines()[0], "a" + std::string(18, 'b') + "X");
  EXPECT_EQ(p.lines()[1], "\u2500\u2500\u2500\u2500\u2510");
  EXPECT_EQ(p.lines()[2], "\u2192\u2192\u2192.");
}

TEST(PtyHarness, ExitStatusAndSignal) {
  PtyProcess exits(sh("exit 3"), {});
  EXPECT_EQ(exits.wait_exit(kWait), 3);
  EXPECT_EQ(exits.wait_exit(kWait), 3);  // the status is kept
  EXPECT_FALSE(exits.pump(0ms));         // the output ended
  PtyProcess killed(sh("kill -TERM $$"), {});
  EXPECT_EQ(killed.wait_exit(kWait), -15);
  PtyProcess missing({"/nonexistent/program"}, {});
  EXPECT_EQ(missing.wait_exit(kWait), 127);
  EXPECT_TRUE(missing.wait_for_text("exec failed", kWait));
}

TEST(PtyHarness, TimeoutThenTheDestructorKills) {
  const auto start = std::chrono::steady_clock::now();
  {
    PtyProcess sleeper(sh("echo started; sleep 60"), {});
    ASSERT_TRUE(sleeper.wait_for_text("started", kWait));
    EXPECT_EQ(sleeper.wait_exit(300ms), -1000);
    EXPECT_TRUE(sleeper.pump(0ms));  // still running
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);
}

TEST(PtyHarness, SendTypesIntoTheCookedTerminal) {
  PtyProcess p(sh("printf 'name? '; read line; echo \"got:$line\""), size(5, 40));
  ASSERT_TRUE(p.wait_for_text("name?", kWait));
  p.send("abc\n");
  ASSERT_TRUE(p.wait_for_text("got:abc", kWait)) << p.text();
  EXPECT_EQ(p.lines()[0], "name? abc");  // echoed by the terminal (ECHO is on)
  EXPECT_EQ(p.wait_exit(kWait), 0);
}

TEST(PtyHarness, EnvironmentAndDirectory) {
  setenv("COLUMNS", "77", 1);
  PtyOptions options = size(5, 80);
  options.env = {"OXTEST_FOO=bar"};
  options.dir = std::filesystem::temp_directory_path();
  PtyProcess p(sh("echo \"$TERM $OXTEST_FOO ${COLUMNS-unset}\"; pwd"), options);
  unsetenv("COLUMNS");
  ASSERT_EQ(p.wait_exit(kWait), 0);
  EXPECT_EQ(p.lines()[0], "xterm-256color bar unset");
  EXPECT_EQ(p.lines()[1], std::filesystem::canonical(options.dir).string());

  PtyOptions dumb = size(5, 80);
  dumb.env = {"TERM=dumb"};
  PtyProcess q(sh("echo \"$TERM\""), dumb);
  ASSERT_EQ(q.wait_exit(kWait), 0);
  EXPECT_EQ(q.lines()[0], "dumb");
}

TEST(PtyHarness, AlternateScreenAndCursorVisibility) {
  PtyProcess p(sh("echo before; tput smcup; tput civis; echo inside; read x; tput cnorm; "
                  "tput rmcup; echo after; read y"),
               size(10, 40));
  EXPECT_FALSE(p.alternate_screen());
  EXPECT_TRUE(p.cursor_visible());
  ASSERT_TRUE(p.wait_for_text("inside", kWait));
  ASSERT_TRUE(p.wait_for([](const PtyProcess& q) { return !q.cursor_visible(); }, kWait));
  EXPECT_TRUE(p.alternate_screen());
  EXPECT_EQ(p.text().find("before"), std::string::npos);  // the alternate screen starts blank
  p.send("\n");
  ASSERT_TRUE(p.wait_for_text("after", kWait)) << p.text();
  EXPECT_FALSE(p.alternate_screen());
  EXPECT_TRUE(p.cursor_visible());
  EXPECT_EQ(p.lines()[0], "before");  // the main screen is back as it was
  EXPECT_EQ(p.text().find("inside"), std::string::npos);
  p.send("\n");
  EXPECT_EQ(p.wait_exit(kWait), 0);
}

TEST(PtyHarness, ResizeSignalsTheChild) {
  PtyProcess p(sh("trap 'stty size; exit 0' WINCH; stty size; echo ready; "
                  "while :; do sleep 0.05; done"),
               size(30, 100));
  ASSERT_TRUE(p.wait_for_text("ready", kWait));
  EXPECT_EQ(p.lines()[0], "30 100");
  p.resize(40, 120);
  EXPECT_EQ(p.rows(), 40);
  EXPECT_EQ(p.cols(), 120);
  ASSERT_TRUE(p.wait_for_text("40 120", kWait)) << p.text();
  EXPECT_EQ(p.wait_exit(kWait), 0);
  EXPECT_EQ(p.lines().size(), 40u);
}

TEST(PtyHarness, TerminalAnswersQueries) {
  // A cursor position report, as curses programs ask for: the answer goes back to the child.
  PtyProcess p(sh("stty -icanon -echo min 6 time 50; printf '\\033[3;5H\\033[6n'; "
                  "reply=$(dd bs=6 count=1 2>/dev/null); stty icanon echo; "
                  "printf '\\n%s\\n' \"$reply\" | cat -v"),
               size(10, 40));
  ASSERT_EQ(p.wait_exit(kWait), 0);
  EXPECT_NE(p.text().find("^[[3;5R"), std::string::npos) << p.text();
}

TEST(PtyHarness, KeysFollowTheCursorKeyMode) {
  // Up is ESC [ A until the program asks for application cursor keys (curses' keypad()), then
  // ESC O A: send_key follows the mode, as a real terminal does.
  PtyProcess p(sh("stty -icanon -echo min 3 time 50; echo go1; a=$(dd bs=3 count=1 2>/dev/null); "
                  "printf '\\033[?1h'; echo go2; b=$(dd bs=3 count=1 2>/dev/null); "
                  "stty icanon echo; printf '%s|%s\\n' \"$a\" \"$b\" | cat -v"),
               size(10, 40));
  ASSERT_TRUE(p.wait_for_text("go1", kWait));
  p.send_key(oxtest::Key::Up);
  ASSERT_TRUE(p.wait_for_text("go2", kWait));
  p.send_key(oxtest::Key::Up);
  ASSERT_EQ(p.wait_exit(kWait), 0);
  EXPECT_NE(p.text().find("^[[A|^[OA"), std::string::npos) << p.text();
}

TEST(PtyHarness, TermiosAtStartIsCooked) {
  PtyProcess p(sh("true"), {});
  const termios start = p.termios_at_start();
  EXPECT_TRUE(start.c_lflag & ICANON);
  EXPECT_TRUE(start.c_lflag & ECHO);
  EXPECT_TRUE(start.c_lflag & ISIG);
  EXPECT_TRUE(start.c_iflag & ICRNL);
  EXPECT_TRUE(start.c_iflag & IUTF8);
  EXPECT_TRUE(start.c_oflag & OPOST);
  EXPECT_TRUE(start.c_oflag & ONLCR);
  EXPECT_EQ(start.c_cc[VINTR], 3);  // ^C
  EXPECT_EQ(p.wait_exit(kWait), 0);
  EXPECT_TRUE(oxtest::same_modes(p.termios_now(), start))
      << oxtest::describe_mode_difference(start, p.termios_now());
}

TEST(PtyHarness, TermiosNowWhileRunningAndAfterExit) {
  PtyProcess raw(sh("stty raw -echo; echo set; read x"), {});
  ASSERT_TRUE(raw.wait_for_text("set", kWait));
  const termios running = raw.termios_now();
  EXPECT_FALSE(running.c_lflag & ICANON);
  EXPECT_FALSE(running.c_lflag & ECHO);
  EXPECT_FALSE(oxtest::same_modes(running, raw.termios_at_start()));
  EXPECT_NE(oxtest::describe_mode_difference(raw.termios_at_start(), running).find("ICANON off"),
            std::string::npos);
  raw.send("x\n");  // raw: no ICRNL, so read needs a real newline
  ASSERT_EQ(raw.wait_exit(kWait), 0);
  // A program that leaves the terminal raw is caught after it exited.
  const termios left = raw.termios_now();
  EXPECT_FALSE(left.c_lflag & ICANON);
  EXPECT_FALSE(left.c_lflag & ECHO);

  PtyProcess restores(sh("saved=$(stty -g); stty raw -echo; stty \"$saved\"; echo done"), {});
  ASSERT_EQ(restores.wait_exit(kWait), 0);
  EXPECT_TRUE(oxtest::same_modes(restores.termios_now(), restores.termios_at_start()))
      << oxtest::describe_mode_difference(restores.termios_at_start(), restores.termios_now());
}

}  // namespace
