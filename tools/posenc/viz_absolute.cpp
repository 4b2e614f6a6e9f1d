// The sinusoidal table (as plotted in "The Implemented Transformer") and the
// position-wise cosine similarity of encodings (Wang and Chen 2020).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "arguments.hpp"
#include "cases/timing/machine.hpp"
#include "posenc/posenc.hpp"
#include "viz/raw_table.hpp"
#include "viz/similarity.hpp"
#include "viz_figures.hpp"

namespace posenc::cli {
namespace {

// value in %g's 6 significant digits, else 15, else 17: the first that reads
// back as value, so that a title tells apart bases %g rounds alike
// (1.0000000001 is not 1).
std::string round_trip_text(double value) {
  char text[32];
  for (int digits : {6, 15, 17}) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

std::string shape_text(int64_t rows, int64_t dim) {
  return "T=" + std::to_string(rows) + " D=" + std::to_string(dim);
}

viz::Heatmap similarity_heatmap(const float* table, int64_t rows, int64_t dim,
                                const std::string& title) {
  viz::Heatmap h;
  h.rows = h.cols = int(rows);
  h.values = viz::cosine_similarity(table, rows, dim, cases::op_threads());
  h.title = title;
  h.x.label = "position j";
  h.y.label = "position i";
  // Brighter is more similar, as in Wang and Chen's figures; the scale spans
  // the data (down to its least similar pair) up to 1, the diagonal.
  float lo = 1.0f;
  for (float v : h.values) lo = std::min(lo, v);
  h.scale = {&viz::ColorMap::sequential(), lo < 1.0f ? double(lo) : 0.0, 1.0};
  return h;
}

// A bad --table file is a bad argument.
viz::RawTable load_table(const VizOptions& o) {
  try {
    return viz::load_raw_table(o.table_path, o.table_dim, kMaxVizLength);
  } catch (const std::runtime_error& e) {
    throw BadArgument(std::string("--table: ") + e.what());
  }
}

}  // namespace

std::vector<NamedFigure> absolute_figures(const VizOptions& o) {
  const bool all = o.only.empty();
  const bool similarity = all || o.only.count("similarity");
  // --table is read before any figure is computed: a bad one ends the
  // command at once.
  viz::RawTable learned;
  if (similarity && !o.table_path.empty()) learned = load_table(o);
  std::vector<NamedFigure> figures;
  std::vector<float> table(size_t(o.length * o.dim));
  const Sinusoid sinusoid{o.base, SinCosLayout(o.layout)};
  sinusoid_table(Context(), o.length, o.dim, table.data(), 0, sinusoid);
  const std::string layout = o.layout == POSENC_SINCOS_SPLIT ? "split" : "interleaved";
  const std::string base = round_trip_text(o.base);

  if (all || o.only.count("table")) {
    viz::Heatmap h;
    h.rows = int(o.length);
    h.cols = int(o.dim);
    h.values = table;
    h.title = "sinusoid table, " + shape_text(o.length, o.dim) + " base " + base + " " + layout;
    h.x.label = "dimension";
    h.y.label = "position";
    h.scale = {&viz::ColorMap::sequential(), -1.0, 1.0};
    h.square_cells = false;
    figures.push_back({"sinusoid_table.png", std::move(h)});
  }
  if (similarity) {
    figures.push_back(
        {"sinusoid_similarity.png",
         similarity_heatmap(table.data(), o.length, o.dim,
                            "cosine similarity of the sinusoid, " + shape_text(o.length, o.dim))});
    if (!o.table_path.empty()) {
      const std::string name = o.table_path.substr(o.table_path.find_last_of('/') + 1);
      figures.push_back({"table_similarity.png",
                         similarity_heatmap(learned.values.data(), learned.rows, learned.dim,
                                            "cosine similarity of " + name + ", " +
                                                shape_text(learned.rows, learned.dim))});
    }
  }
  return figures;
}

}  // namespace posenc::cli
