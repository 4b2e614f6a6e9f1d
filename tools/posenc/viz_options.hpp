// Options of `posenc viz` and their parsing.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "posenc/absolute.h"

namespace posenc::cli {

// The most positions a figure shows: --length's bound, and the rows of a
// --table (its similarity figure is rows x rows, of dot products of up to
// kMaxVizTableDim values).
constexpr int64_t kMaxVizLength = 4096;
constexpr int64_t kMaxVizTableDim = 16384;

struct VizOptions {
  std::string out_dir = ".";
  std::string prefix;                 // prepended to every file name
  std::set<std::string> only;         // figure groups to draw; empty: all
  int64_t length = 64;                // T: positions of the table, sequence length
  int64_t dim = 128;                  // D of the sinusoid
  double base = 10000.0;
  posenc_sincos_layout layout = POSENC_SINCOS_INTERLEAVED;
  int64_t query = -1;                 // query of the 1D logits strip; -1: T/2
  int64_t height = 12;                // X of the 2D feature map
  int64_t width = 16;                 // Y of the 2D feature map
  int64_t pixel_x = -1, pixel_y = -1;  // query pixel of the 2D bias; -1: centre
  int64_t rel_dim = 32;               // dim of the random q and relative tables
  bool independent_queries = false;   // 1D logits: one random q per query
  uint32_t seed = 1;
  std::string table_path;             // optional learned table, raw float32
  int64_t table_dim = 0;
};

// Fills options from argv[1..argc): false where help was asked for (the
// other options still checked); BadArgument (arguments.hpp) names a bad one.
bool parse_viz_options(int argc, char** argv, VizOptions& options);

void print_viz_help();

}  // namespace posenc::cli
