#include "heatmap.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "font.hpp"
#include "ticks.hpp"

namespace posenc::viz {
namespace {

constexpr int kTextScale = 2;
constexpr int kPad = 16;
constexpr int kPlotTarget = 512;  // pixels along the longer side of the plot
constexpr int kPlotMin = 48;      // pixels along the shorter side, at least
constexpr int kTickLength = 5;
constexpr int kBarWidth = 20;
constexpr int kBarMinHeight = 160;
constexpr Rgb kFrame{60, 60, 60};

std::string format_value(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

int text_px(const std::string& s) { return text_length(s, kTextScale); }
int text_height() { return text_thickness(kTextScale); }

struct Layout {
  int cell_w, cell_h;
  int plot_x, plot_y, plot_w, plot_h;
  int bar_x, bar_y, bar_h;
  int width, height;
  std::vector<int> y_ticks;
  std::vector<std::string> y_labels;
};

std::vector<std::string> bar_labels(const ColorScale& s) {
  std::vector<std::string> labels{format_value(s.hi), format_value(s.lo)};
  if (s.lo < 0 && s.hi > 0) labels.push_back("0");
  return labels;
}

int widest(const std::vector<std::string>& labels) {
  int w = 0;
  for (const std::string& s : labels) w = std::max(w, text_px(s));
  return w;
}

std::vector<std::string> tick_labels(const Axis& axis, const std::vector<int>& ticks) {
  std::vector<std::string> labels;
  if (axis.ticks) {
    for (int k : ticks) labels.push_back(std::to_string(axis.first + k));
  }
  return labels;
}

// Ticks need room for the widest possible label plus a gap.
std::vector<int> axis_ticks(const Axis& axis, int count, int cell, bool horizontal) {
  if (!axis.ticks) return {};
  const int longest = std::max(text_px(std::to_string(axis.first)),
                               text_px(std::to_string(axis.first + count - 1)));
  return tick_indices(count, axis.first, cell, (horizontal ? longest : text_height()) + 12);
}

Layout make_layout(const Heatmap& h) {
  Layout l{};
  const int square = std::max(1, kPlotTarget / std::max(h.rows, h.cols));
  const int cell_w = h.square_cells ? square : std::max(1, kPlotTarget / h.cols);
  const int cell_h = h.square_cells ? square : std::max(1, kPlotTarget / h.rows);
  l.cell_w = std::max(cell_w, (kPlotMin + h.cols - 1) / h.cols);
  l.cell_h = std::max(cell_h, (kPlotMin + h.rows - 1) / h.rows);
  l.plot_w = l.cell_w * h.cols;
  l.plot_h = l.cell_h * h.rows;
  l.y_ticks = axis_ticks(h.y, h.rows, l.cell_h, false);
  l.y_labels = tick_labels(h.y, l.y_ticks);
  const int y_label_space = h.y.label.empty() ? 0 : text_height() + 12;
  l.plot_x = kPad + y_label_space + widest(l.y_labels) + kTickLength + 6;
  l.plot_y = kPad + text_height() + 16;
  l.bar_h = std::max(l.plot_h, kBarMinHeight);
  l.bar_x = l.plot_x + l.plot_w + 28;
  l.bar_y = l.plot_y;
  const int right = l.bar_x + kBarWidth + 8 + widest(bar_labels(h.scale)) + kPad;
  l.width = std::max(right, text_px(h.title) + 2 * kPad);
  const int x_axis_bottom = l.plot_y + l.plot_h + kTickLength + 4 + (text_height() + 8) * 2;
  const int bar_bottom = l.bar_y + l.bar_h + text_height() / 2;
  l.height = std::max(x_axis_bottom, bar_bottom) + kPad;
  return l;
}

void draw_cells(Image& image, const Heatmap& h, const Layout& l) {
  for (int r = 0; r < h.rows; ++r) {
    for (int c = 0; c < h.cols; ++c) {
      const float v = h.values[size_t(r) * size_t(h.cols) + size_t(c)];
      image.fill_rect(l.plot_x + c * l.cell_w, l.plot_y + r * l.cell_h, l.cell_w, l.cell_h,
                      h.scale.map->at(v, h.scale.lo, h.scale.hi));
    }
  }
  image.frame_rect(l.plot_x - 1, l.plot_y - 1, l.plot_w + 2, l.plot_h + 2, 1, kFrame);
}

void draw_marker(Image& image, const Cell& m, const Layout& l) {
  // The frame reaches 2t past the cell: at most 6 px, inside the gaps
  // around the plot (big cells of a small map would reach the title).
  const int t = std::clamp(std::min(l.cell_w, l.cell_h) / 6, 1, 3);
  const int x = l.plot_x + m.col * l.cell_w, y = l.plot_y + m.row * l.cell_h;
  image.frame_rect(x - 2 * t, y - 2 * t, l.cell_w + 4 * t, l.cell_h + 4 * t, t, kBlack);
  image.frame_rect(x - t, y - t, l.cell_w + 2 * t, l.cell_h + 2 * t, t, kWhite);
}

void draw_x_axis(Image& image, const Heatmap& h, const Layout& l) {
  const int below = l.plot_y + l.plot_h + 1;
  const std::vector<int> ticks = axis_ticks(h.x, h.cols, l.cell_w, true);
  const std::vector<std::string> labels = tick_labels(h.x, ticks);
  for (size_t i = 0; i < ticks.size(); ++i) {
    const int center = l.plot_x + ticks[i] * l.cell_w + l.cell_w / 2;
    image.fill_rect(center, below, 1, kTickLength, kFrame);
    draw_text(image, center - text_px(labels[i]) / 2, below + kTickLength + 4, labels[i],
              kTextScale, kBlack);
  }
  const int label_y = below + kTickLength + 4 + (ticks.empty() ? 0 : text_height() + 8);
  draw_text(image, l.plot_x + (l.plot_w - text_px(h.x.label)) / 2, label_y, h.x.label,
            kTextScale, kBlack);
}

void draw_y_axis(Image& image, const Heatmap& h, const Layout& l) {
  for (size_t i = 0; i < l.y_ticks.size(); ++i) {
    const int center = l.plot_y + l.y_ticks[i] * l.cell_h + l.cell_h / 2;
    image.fill_rect(l.plot_x - 1 - kTickLength, center, kTickLength, 1, kFrame);
    draw_text(image, l.plot_x - kTickLength - 6 - text_px(l.y_labels[i]),
              center - text_height() / 2, l.y_labels[i], kTextScale, kBlack);
  }
  const int middle = l.plot_y + (l.plot_h + text_px(h.y.label)) / 2;
  draw_text(image, kPad, middle, h.y.label, kTextScale, kBlack, TextDirection::upward);
}

void draw_color_bar(Image& image, const ColorScale& s, const Layout& l) {
  for (int y = 0; y < l.bar_h; ++y) {
    // Top row is hi, bottom row lo.
    const double t = 1.0 - (double(y) + 0.5) / double(l.bar_h);
    image.fill_rect(l.bar_x, l.bar_y + y, kBarWidth, 1, s.map->at(t));
  }
  image.frame_rect(l.bar_x - 1, l.bar_y - 1, kBarWidth + 2, l.bar_h + 2, 1, kFrame);
  auto label_at = [&](double value, const std::string& text) {
    const double t = (value - s.lo) / (s.hi - s.lo);
    const int y = l.bar_y + int(std::lround((1.0 - t) * (l.bar_h - 1)));
    image.fill_rect(l.bar_x + kBarWidth + 1, y, 4, 1, kFrame);
    draw_text(image, l.bar_x + kBarWidth + 8, y - text_height() / 2, text, kTextScale, kBlack);
  };
  label_at(s.hi, format_value(s.hi));
  label_at(s.lo, format_value(s.lo));
  if (s.lo < 0 && s.hi > 0) label_at(0.0, "0");
}

}  // namespace

ColorScale symmetric_scale(const std::vector<float>& values) {
  double m = 0;
  for (float v : values) m = std::max(m, double(std::fabs(v)));
  if (m == 0) m = 1;
  return {&ColorMap::diverging(), -m, m};
}

Image render_heatmap(const Heatmap& h) {
  if (h.rows < 1 || h.cols < 1 || h.values.size() != size_t(h.rows) * size_t(h.cols)) {
    throw std::invalid_argument("heatmap '" + h.title + "': values do not match its size");
  }
  if (!(h.scale.lo < h.scale.hi) || !h.scale.map) {
    throw std::invalid_argument("heatmap '" + h.title + "': empty colour scale");
  }
  const Layout l = make_layout(h);
  Image image(l.width, l.height);
  draw_text(image, (l.width - text_px(h.title)) / 2, kPad, h.title, kTextScale, kBlack);
  draw_cells(image, h, l);
  if (h.marker) draw_marker(image, *h.marker, l);
  draw_x_axis(image, h, l);
  draw_y_axis(image, h, l);
  draw_color_bar(image, h.scale, l);
  return image;
}

}  // namespace posenc::viz
