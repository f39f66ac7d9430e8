#pragma once
// A grid of styled character cells that the dashboards draw into: panels, text and line charts.
// Drawing knows nothing of the terminal, so a layout can be checked as plain text in a test;
// Terminal (terminal.h) puts a finished canvas on the screen in one pass.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oxcli {

enum class Color : uint8_t { kNormal, kAccent, kTrain, kEval, kThird, kFourth, kWarn, kCount };

// Box lines are glyphs of their own (the terminal's line-drawing set; '-', '|', '+' as text).
enum class Glyph : uint8_t {
  kChar,
  kHLine,
  kVLine,
  kTopLeft,
  kTopRight,
  kBottomLeft,
  kBottomRight
};

struct Style {
  Color color = Color::kNormal;
  bool bold = false;
  bool dim = false;
  bool reverse = false;
};
// A panel's title, as every dashboard draws it.
inline constexpr Style kTitle{.color = Color::kAccent, .bold = true};

struct Cell {
  char ch = ' ';
  Glyph glyph = Glyph::kChar;
  Style style;
};

struct Rect {
  int row = 0, col = 0, rows = 0, cols = 0;
  Rect inner() const { return {row + 1, col + 1, rows - 2, cols - 2}; }
  bool empty() const { return rows <= 0 || cols <= 0; }
};

// One line of a chart: points (x, y) in x order; NaN and infinite y are skipped. With
// `show_range`, each column also shows the spread of the points that fall in it, dimmed.
struct Series {
  std::string name;
  std::vector<double> x, y;
  char marker = '*';
  Color color = Color::kTrain;
  bool show_range = false;
};

class Canvas {
 public:
  Canvas(int rows, int cols);
  int rows() const { return rows_; }
  int cols() const { return cols_; }
  const Cell& at(int row, int col) const { return cells_[size_t(row * cols_ + col)]; }

  // Cells outside the canvas are ignored, so callers may draw past an edge.
  void put(int row, int col, char ch, Style style = {});
  // Writes `text` (ASCII; other bytes show as '?') from (row, col), at most `max_cols` columns;
  // returns the columns written.
  int text(int row, int col, std::string_view text, Style style = {}, int max_cols = 1 << 30);
  void fill(Rect area, char ch, Style style = {});
  // A frame around `area` with `title` in its top edge.
  void box(Rect area, std::string_view title, Style title_style = {});
  // Series drawn over `area`: y labels on the left, the first and last x below, the y range
  // shared by all series. `x_name` labels the x axis; the x range is the points' unless given.
  void chart(Rect area, const std::vector<Series>& series, std::string_view x_name,
             std::optional<std::pair<double, double>> x_range = std::nullopt);

  // The canvas as text, one string a row, trailing spaces trimmed.
  std::vector<std::string> lines() const;

 private:
  void glyph(int row, int col, Glyph g, Style style);
  int rows_, cols_;
  std::vector<Cell> cells_;
};

// A number in at most `width` columns (fixed point when it fits, else scientific).
std::string compact_number(double value, int width);
// "m:ss" or "h:mm:ss"; "--:--" for a negative (unknown) duration.
std::string duration_text(double seconds);
// The mean of the last `count` values (NaN when there are none): a noisy curve's "now".
double mean_of_last(const std::vector<double>& values, size_t count);

}  // namespace oxcli
