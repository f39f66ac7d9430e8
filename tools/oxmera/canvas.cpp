#include "canvas.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace oxcli {

Canvas::Canvas(int rows, int cols)
    : rows_(std::max(rows, 0)), cols_(std::max(cols, 0)), cells_(size_t(rows_ * cols_)) {}

void Canvas::put(int row, int col, char ch, Style style) {
  if (row < 0 || col < 0 || row >= rows_ || col >= cols_) return;
  const bool printable = ch >= 0x20 && ch < 0x7f;
  cells_[size_t(row * cols_ + col)] = Cell{printable ? ch : '?', Glyph::kChar, style};
}

void Canvas::glyph(int row, int col, Glyph g, Style style) {
  if (row < 0 || col < 0 || row >= rows_ || col >= cols_) return;
  cells_[size_t(row * cols_ + col)] = Cell{' ', g, style};
}

int Canvas::text(int row, int col, std::string_view text, Style style, int max_cols) {
  const int count = std::min<int>(int(text.size()), std::max(max_cols, 0));
  for (int i = 0; i < count; ++i) put(row, col + i, text[size_t(i)], style);
  return count;
}

void Canvas::fill(Rect area, char ch, Style style) {
  for (int r = area.row; r < area.row + area.rows; ++r)
    for (int c = area.col; c < area.col + area.cols; ++c) put(r, c, ch, style);
}

void Canvas::box(Rect area, std::string_view title, Style title_style) {
  if (area.rows < 2 || area.cols < 2) return;
  const int bottom = area.row + area.rows - 1, right = area.col + area.cols - 1;
  const Style frame{.dim = true};
  for (int c = area.col + 1; c < right; ++c) {
    glyph(area.row, c, Glyph::kHLine, frame);
    glyph(bottom, c, Glyph::kHLine, frame);
  }
  for (int r = area.row + 1; r < bottom; ++r) {
    glyph(r, area.col, Glyph::kVLine, frame);
    glyph(r, right, Glyph::kVLine, frame);
  }
  glyph(area.row, area.col, Glyph::kTopLeft, frame);
  glyph(area.row, right, Glyph::kTopRight, frame);
  glyph(bottom, area.col, Glyph::kBottomLeft, frame);
  glyph(bottom, right, Glyph::kBottomRight, frame);
  if (!title.empty() && area.cols > 6) {
    put(area.row, area.col + 1, ' ', frame);
    const int written = text(area.row, area.col + 2, title, title_style, area.cols - 5);
    put(area.row, area.col + 2 + written, ' ', frame);
  }
}

namespace {

constexpr int kLabelCols = 8;  // y labels: 7 columns and the axis

struct Range {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool valid() const { return lo <= hi; }
  // A range of one value is widened so that it has a middle to draw at.
  void widen() {
    if (hi > lo) return;
    const double pad = std::max(std::abs(lo) * 0.1, 1e-9);
    lo -= pad;
    hi += pad;
  }
};

// Points of one series that share a column: their mean and spread.
struct Column {
  double sum = 0, lo = 0, hi = 0;
  int64_t count = 0;
};

}  // namespace

void Canvas::chart(Rect area, const std::vector<Series>& series, std::string_view x_name,
                   std::optional<std::pair<double, double>> x_range) {
  const int plot_rows = area.rows - 1, plot_cols = area.cols - kLabelCols;
  if (plot_rows < 2 || plot_cols < 4) return;
  Range xs, ys;
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i)
      if (std::isfinite(s.y[i]) && std::isfinite(s.x[i])) {
        xs.add(s.x[i]);
        ys.add(s.y[i]);
      }
  const Style dim{.dim = true};
  if (!ys.valid()) {
    text(area.row + plot_rows / 2, area.col + kLabelCols + std::max(0, plot_cols / 2 - 6),
         "no data yet", dim);
    return;
  }
  if (x_range) {
    xs.lo = std::min(xs.lo, x_range->first);
    xs.hi = std::max(xs.hi, x_range->second);
  }
  if (xs.hi == xs.lo) xs.hi = xs.lo + 1;
  ys.widen();
  const auto column_of = [&](double x) {
    return int(std::lround((x - xs.lo) / (xs.hi - xs.lo) * double(plot_cols - 1)));
  };
  const auto row_of = [&](double y) {
    return area.row + int(std::lround((ys.hi - y) / (ys.hi - ys.lo) * double(plot_rows - 1)));
  };
  const int left = area.col + kLabelCols;

  for (int r = 0; r < plot_rows; ++r) glyph(area.row + r, left - 1, Glyph::kVLine, dim);
  text(area.row, area.col, compact_number(ys.hi, kLabelCols - 1), dim);
  if (plot_rows >= 5)
    text(area.row + (plot_rows - 1) / 2, area.col,
         compact_number(
             ys.hi - (ys.hi - ys.lo) * double((plot_rows - 1) / 2) / double(plot_rows - 1),
             kLabelCols - 1),
         dim);
  text(area.row + plot_rows - 1, area.col, compact_number(ys.lo, kLabelCols - 1), dim);
  const int axis_row = area.row + plot_rows;
  const std::string x_lo = compact_number(xs.lo, 10), x_hi = compact_number(xs.hi, 10);
  text(axis_row, left, x_lo, dim);
  text(axis_row, left + plot_cols - int(x_hi.size()), x_hi, dim);
  if (plot_cols > int(x_lo.size() + x_hi.size() + x_name.size()) + 2)
    text(axis_row, left + (plot_cols - int(x_name.size())) / 2, x_name, dim);

  for (const Series& s : series) {
    std::vector<Column> columns(static_cast<size_t>(plot_cols));
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i]) || !std::isfinite(s.x[i])) continue;
      Column& c = columns[size_t(column_of(s.x[i]))];
      c.lo = c.count == 0 ? s.y[i] : std::min(c.lo, s.y[i]);
      c.hi = c.count == 0 ? s.y[i] : std::max(c.hi, s.y[i]);
      c.sum += s.y[i];
      ++c.count;
    }
    const Style mark{.color = s.color, .bold = true};
    for (int c = 0; c < plot_cols; ++c) {
      const Column& column = columns[size_t(c)];
      if (column.count == 0) continue;
      if (s.show_range)
        for (int r = row_of(column.hi); r <= row_of(column.lo); ++r)
          if (at(r, left + c).ch == ' ' && at(r, left + c).glyph == Glyph::kChar)
            put(r, left + c, '.', {.color = s.color, .dim = true});
      put(row_of(column.sum / double(column.count)), left + c, s.marker, mark);
    }
  }
}

std::vector<std::string> Canvas::lines() const {
  std::vector<std::string> out;
  for (int r = 0; r < rows_; ++r) {
    std::string line;
    for (int c = 0; c < cols_; ++c) {
      const Cell& cell = at(r, c);
      switch (cell.glyph) {
        case Glyph::kChar:
          line += cell.ch;
          break;
        case Glyph::kHLine:
          line += '-';
          break;
        case Glyph::kVLine:
          line += '|';
          break;
        default:
          line += '+';
          break;
      }
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out.push_back(std::move(line));
  }
  return out;
}

std::string compact_number(double value, int width) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char text[64];
  for (int precision = 4; precision >= 1; --precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (int(std::string_view(text).size()) <= width) return text;
  }
  std::snprintf(text, sizeof text, "%.0e", value);
  return text;
}

std::string duration_text(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds)) return "--:--";
  const auto total = int64_t(seconds + 0.5);
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", (long long)(total / 3600),
                  (long long)(total / 60 % 60), (long long)(total % 60));
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", (long long)(total / 60),
                  (long long)(total % 60));
  return text;
}

double mean_of_last(const std::vector<double>& values, size_t count) {
  if (values.empty()) return NAN;
  const size_t n = std::min(count, values.size());
  double sum = 0;
  for (size_t i = values.size() - n; i < values.size(); ++i) sum += values[i];
  return sum / double(n);
}

}  // namespace oxcli
