// The figures of `posenc viz`, computed from the options, not yet rendered.
#pragma once

#include <string>
#include <vector>

#include "viz/heatmap.hpp"
#include "viz_options.hpp"

namespace posenc::cli {

struct NamedFigure {
  std::string file;  // file name without folder or prefix
  viz::Heatmap heatmap;
};

// "table" and "similarity": the sinusoid, its cosine similarity and that of
// the --table file. Throws posenc::Error or std::runtime_error.
std::vector<NamedFigure> absolute_figures(const VizOptions& options);

// "logits" and "bias": relative logits of random queries and tables through
// posenc_relative_logits_1d, _2d_decomposed and _2d. Throws posenc::Error.
std::vector<NamedFigure> relative_figures(const VizOptions& options);

}  // namespace posenc::cli
