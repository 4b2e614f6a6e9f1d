// Relative position logits drawn from random queries and tables, computed by
// the library: the 1D logits q_i . R[j - i + T - 1] (Shaw et al.) and the 2D
// bias around one pixel, q . Rh[x2 - x1 + X - 1] + q . Rw[y2 - y1 + Y - 1]
// (Stand-Alone Self-Attention, the bottleneck transformer).
#include <cmath>
#include <random>
#include <string>

#include "posenc/posenc.hpp"
#include "viz_figures.hpp"

namespace posenc::cli {
namespace {

// rows x dim values from N(0, stddev^2).
std::vector<float> random_normal(int64_t rows, int64_t dim, double stddev, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, float(stddev));
  std::vector<float> v(size_t(rows * dim));
  for (float& x : v) x = normal(rng);
  return v;
}

// A relative table whose rows have unit expected norm, so that logits with
// a N(0, 1) query are about N(0, 1).
std::vector<float> random_table(int64_t rows, int64_t dim, std::mt19937& rng) {
  return random_normal(rows, dim, 1.0 / std::sqrt(double(dim)), rng);
}

std::string pair_text(int64_t a, int64_t b) {
  return "(" + std::to_string(a) + "," + std::to_string(b) + ")";
}

void add_logits(const VizOptions& o, std::vector<NamedFigure>& figures) {
  const int64_t t = o.length, d = o.rel_dim;
  std::mt19937 rng(o.seed);
  // One q for every query (the default) makes the T x T matrix constant
  // along its diagonals: the logit depends on j - i only.
  std::vector<float> q = random_normal(o.independent_queries ? t : 1, d, 1.0, rng);
  if (!o.independent_queries) {
    q.resize(size_t(t * d));
    for (int64_t i = 1; i < t; ++i) std::copy_n(q.begin(), d, q.begin() + i * d);
  }
  const std::vector<float> table = random_table(2 * t - 1, d, rng);
  std::vector<float> logits(size_t(t * t));
  relative_logits_1d(Context(), 1, 1, t, t, d, q.data(), table.data(), 1, logits.data());
  const viz::ColorScale scale = viz::symmetric_scale(logits);

  viz::Heatmap strip;
  strip.rows = 1;
  strip.cols = int(t);
  strip.values.assign(logits.begin() + o.query * t, logits.begin() + (o.query + 1) * t);
  strip.title = "relative logits q.R[j-i+T-1] of query i=" + std::to_string(o.query);
  strip.x.label = "key j";
  strip.y = {"i=" + std::to_string(o.query), 0, false};
  strip.scale = scale;
  strip.marker = viz::Cell{0, int(o.query)};
  figures.push_back({"relative_logits_query.png", std::move(strip)});

  viz::Heatmap matrix;
  matrix.rows = matrix.cols = int(t);
  matrix.values = logits;
  matrix.title = std::string("relative logits, T=") + std::to_string(t) + " d=" +
                 std::to_string(d) + (o.independent_queries ? ", random q_i" : ", one q");
  matrix.x.label = "key j";
  matrix.y.label = "query i";
  matrix.scale = scale;
  figures.push_back({"relative_logits.png", std::move(matrix)});
}

void add_bias(const VizOptions& o, std::vector<NamedFigure>& figures) {
  const int64_t x = o.height, y = o.width, n = x * y, d = o.rel_dim;
  std::mt19937 rng(o.seed + 1);
  const std::vector<float> q = random_normal(n, d, 1.0, rng);
  const std::vector<float> rh = random_table(2 * x - 1, d, rng);
  const std::vector<float> rw = random_table(2 * y - 1, d, rng);
  std::vector<float> rel_h(size_t(n * x)), rel_w(size_t(n * y)), bias(size_t(n * n));
  relative_logits_2d_decomposed(Context(), 1, 1, x, y, d, q.data(), rh.data(), rw.data(), 1,
                                rel_h.data(), rel_w.data());
  relative_logits_2d(Context(), 1, 1, x, y, d, q.data(), rh.data(), rw.data(), 1, bias.data());

  // Everything below is for the query pixel (x1, y1), token n1.
  const int64_t n1 = o.pixel_x * y + o.pixel_y;
  const viz::Cell pixel{int(o.pixel_x), int(o.pixel_y)};
  auto map_of = [&](auto value_at, std::string title) {
    viz::Heatmap h;
    h.rows = int(x);
    h.cols = int(y);
    for (int64_t x2 = 0; x2 < x; ++x2) {
      for (int64_t y2 = 0; y2 < y; ++y2) h.values.push_back(value_at(x2, y2));
    }
    h.title = std::move(title);
    h.scale = viz::symmetric_scale(h.values);
    h.marker = pixel;
    return h;
  };
  const std::string around = " around " + pair_text(o.pixel_x, o.pixel_y);

  viz::Heatmap full =
      map_of([&](int64_t x2, int64_t y2) { return bias[size_t(n1 * n + x2 * y + y2)]; },
             "2D relative bias" + around + ", " + std::to_string(x) + "x" + std::to_string(y) +
                 " map");
  full.x.label = "column y2";
  full.y.label = "row x2";
  figures.push_back({"relative_bias_2d.png", std::move(full)});

  // The two terms, with the axes showing offsets from the query pixel.
  const viz::Axis row_offsets{"row offset x2-x1", int(-o.pixel_x), true};
  const viz::Axis column_offsets{"column offset y2-y1", int(-o.pixel_y), true};
  viz::Heatmap rows = map_of([&](int64_t x2, int64_t) { return rel_h[size_t(n1 * x + x2)]; },
                             "row term q.Rh[x2-x1+X-1]" + around);
  rows.x = column_offsets;
  rows.y = row_offsets;
  figures.push_back({"relative_bias_rows.png", std::move(rows)});
  viz::Heatmap cols = map_of([&](int64_t, int64_t y2) { return rel_w[size_t(n1 * y + y2)]; },
                             "column term q.Rw[y2-y1+Y-1]" + around);
  cols.x = column_offsets;
  cols.y = row_offsets;
  figures.push_back({"relative_bias_cols.png", std::move(cols)});
}

}  // namespace

std::vector<NamedFigure> relative_figures(const VizOptions& o) {
  std::vector<NamedFigure> figures;
  if (o.only.empty() || o.only.count("logits")) add_logits(o, figures);
  if (o.only.empty() || o.only.count("bias")) add_bias(o, figures);
  return figures;
}

}  // namespace posenc::cli
