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

}  // namespace posenc::cli
