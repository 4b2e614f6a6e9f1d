#include "viz_options.hpp"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "api/validate.hpp"
#include "arguments.hpp"

namespace posenc::cli {
namespace {

const std::set<std::string> kGroups = {"table", "similarity", "logits", "bias"};

// A decimal number: strtod alone would also take leading blanks, a '+',
// hexadecimal, inf and nan.
double parse_base(const std::string& text) {
  const bool decimal = !text.empty() && (std::isdigit(static_cast<unsigned char>(text[0])) ||
                                         text[0] == '.') &&
                       text.find_first_not_of("0123456789.eE+-") == std::string::npos;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (!decimal || *end != '\0' || !is_frequency_base(value)) {
    throw BadArgument("--base: expected a finite number >= 2^-64 other than 1, got '" + text +
                      "'");
  }
  return value;
}

void parse_pixel(const std::string& text, VizOptions& o) {
  const size_t comma = text.find(',');
  if (comma == std::string::npos) {
    throw BadArgument("--pixel: expected X,Y (row,column), got '" + text + "'");
  }
  o.pixel_x = parse_int("--pixel row", text.substr(0, comma), 0, 1 << 20);
  o.pixel_y = parse_int("--pixel column", text.substr(comma + 1), 0, 1 << 20);
}

void parse_only(const std::string& text, VizOptions& o) {
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string group = text.substr(start, comma - start);
    if (!kGroups.count(group)) {
      throw BadArgument("--only: unknown figure '" + group + "' (table, similarity, logits, bias)");
    }
    o.only.insert(group);
    start = comma + 1;
  }
}

// Each option's parser, from its value into the options.
using OptionParser = void (*)(const std::string& value, VizOptions& o);

const std::map<std::string, OptionParser>& option_parsers() {
  static const std::map<std::string, OptionParser> parsers = {
      {"--out",
       [](const std::string& value, VizOptions& o) {
         if (value.empty()) throw BadArgument("--out: expected a folder, got ''");
         o.out_dir = value;
       }},
      {"--prefix",
       [](const std::string& value, VizOptions& o) {
         // A folder in it would put the figures outside --out, or in one not made.
         if (value.find('/') != std::string::npos) {
           throw BadArgument("--prefix: expected no '/', got '" + value + "'");
         }
         o.prefix = value;
       }},
      {"--only", parse_only},
      {"--length",
       [](const std::string& value, VizOptions& o) {
         o.length = parse_int("--length", value, 1, kMaxVizLength);
       }},
      {"--dim",
       [](const std::string& value, VizOptions& o) { o.dim = parse_int("--dim", value, 1, 8192); }},
      {"--base", [](const std::string& value, VizOptions& o) { o.base = parse_base(value); }},
      {"--layout",
       [](const std::string& value, VizOptions& o) {
         if (value != "interleaved" && value != "split") {
           throw BadArgument("--layout: expected interleaved or split, got '" + value + "'");
         }
         o.layout = value == "split" ? POSENC_SINCOS_SPLIT : POSENC_SINCOS_INTERLEAVED;
       }},
      {"--query", [](const std::string& value,
                     VizOptions& o) { o.query = parse_int("--query", value, 0, 4095); }},
      {"--height", [](const std::string& value,
                      VizOptions& o) { o.height = parse_int("--height", value, 1, 64); }},
      {"--width", [](const std::string& value,
                     VizOptions& o) { o.width = parse_int("--width", value, 1, 64); }},
      {"--pixel", parse_pixel},
      {"--rel-dim", [](const std::string& value,
                       VizOptions& o) { o.rel_dim = parse_int("--rel-dim", value, 1, 8192); }},
      {"--queries",
       [](const std::string& value, VizOptions& o) {
         if (value != "shared" && value != "independent") {
           throw BadArgument("--queries: expected shared or independent, got '" + value + "'");
         }
         o.independent_queries = value == "independent";
       }},
      {"--seed",
       [](const std::string& value, VizOptions& o) {
         o.seed = uint32_t(parse_int("--seed", value, 0, 0xFFFFFFFFLL));
       }},
      {"--table",
       [](const std::string& value, VizOptions& o) {
         if (value.empty()) throw BadArgument("--table: expected a file, got ''");
         o.table_path = value;
       }},
      {"--table-dim",
       [](const std::string& value, VizOptions& o) {
         o.table_dim = parse_int("--table-dim", value, 1, kMaxVizTableDim);
       }},
  };
  return parsers;
}

// Checks between options, once all are known; fills the defaults that
// depend on others.
void finish(VizOptions& o) {
  if (o.query < 0) o.query = o.length / 2;
  if (o.query >= o.length) {
    throw BadArgument("--query: " + std::to_string(o.query) + " is not below --length " +
                      std::to_string(o.length));
  }
  if (o.pixel_x < 0) o.pixel_x = o.height / 2;
  if (o.pixel_y < 0) o.pixel_y = o.width / 2;
  if (o.pixel_x >= o.height || o.pixel_y >= o.width) {
    throw BadArgument("--pixel: (" + std::to_string(o.pixel_x) + "," + std::to_string(o.pixel_y) +
                      ") is outside the " + std::to_string(o.height) + "x" +
                      std::to_string(o.width) + " map (--height, --width)");
  }
  if (o.table_path.empty() != (o.table_dim == 0)) {
    throw BadArgument("--table and --table-dim go together");
  }
  if (!o.table_path.empty() && !o.only.empty() && !o.only.count("similarity")) {
    throw BadArgument("--table: drawn in the similarity figure, which --only leaves out");
  }
}

}  // namespace

bool parse_viz_options(int argc, char** argv, VizOptions& options) {
  std::set<std::string> given;  // a second value would silently replace the first
  bool help = false;            // the rest is still checked, as bench and info do
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      help = true;
      continue;
    }
    const auto joined = joined_option(arg);
    const std::string name = joined ? joined->first : arg;
    const auto parser = option_parsers().find(name);
    if (parser == option_parsers().end()) {
      throw BadArgument(name.rfind("--", 0) == 0
                            ? "unknown option '" + name + "' (see posenc viz --help)"
                            : "unexpected argument '" + arg + "'");
    }
    if (!joined && !value_follows(argc, argv, i)) throw BadArgument(name + ": missing value");
    if (!given.insert(name).second) throw BadArgument(name + ": given twice");
    parser->second(joined ? joined->second : argv[++i], options);
  }
  if (help) return false;
  finish(options);
  return true;
}

void print_viz_help() {
  std::puts(
      "usage: posenc viz [options]\n"
      "\n"
      "Writes PNG figures and prints their paths:\n"
      "  table       sinusoid_table.png: the sinusoidal table, positions (rows) by\n"
      "              dimensions (columns), sequential colour map on [-1, 1]\n"
      "  similarity  sinusoid_similarity.png: cos_sim(P[i], P[j]) over positions\n"
      "              (Wang and Chen 2020); with --table also table_similarity.png\n"
      "  logits      relative_logits_query.png: q . R[j - i + T - 1] of one query i\n"
      "              over the keys j; relative_logits.png: the T x T matrix of all\n"
      "              queries (random q and R, posenc_relative_logits_1d)\n"
      "  bias        relative_bias_2d.png: q . Rh[x2 - x1 + X - 1] +\n"
      "              q . Rw[y2 - y1 + Y - 1] over the X x Y map around the query\n"
      "              pixel (x1, y1) (Stand-Alone Self-Attention; random q, Rh, Rw,\n"
      "              posenc_relative_logits_2d); relative_bias_rows.png and\n"
      "              relative_bias_cols.png: its two terms (rel_h, rel_w of\n"
      "              posenc_relative_logits_2d_decomposed) by offset\n"
      "Signed data uses a diverging blue-white-red map centred on 0.\n"
      "\n"
      "options (--name VALUE or --name=VALUE):\n"
      "  --out DIR          output folder, created if missing (default: .)\n"
      "  --prefix TEXT      prepended to each file name, no '/' (default: none)\n"
      "  --only LIST        comma-separated figures among table, similarity,\n"
      "                     logits, bias (default: all)\n"
      "  --length T         positions / sequence length, 1..4096 (default: 64)\n"
      "  --dim D            sinusoid dimensions, 1..8192 (default: 128)\n"
      "  --base N           sinusoid base (default: 10000)\n"
      "  --layout L         interleaved or split sin/cos columns (default: interleaved)\n"
      "  --query I          query of the logits strip, 0..T-1 (default: T/2)\n"
      "  --height X         feature map rows, 1..64 (default: 12)\n"
      "  --width Y          feature map columns, 1..64 (default: 16)\n"
      "  --pixel X1,Y1      query pixel (default: the centre)\n"
      "  --rel-dim D        dims of the random q and relative tables, 1..8192\n"
      "                     (default: 32)\n"
      "  --queries MODE     1D logits: shared (one random q for every query, so the\n"
      "                     matrix is constant along diagonals) or independent\n"
      "                     (a random q per query) (default: shared)\n"
      "  --seed S           random seed for q and the tables (default: 1)\n"
      "  --table FILE       a learned table as raw float32 [rows, D] (numpy tofile),\n"
      "                     at most 4096 rows, for the similarity figure\n"
      "  --table-dim D      its D, 1..16384 (required with --table)\n"
      "  -h, --help         this text\n"
      "\n"
      "exit status: 0 on success, 1 if a file could not be written (figures are put\n"
      "in place once all are written), 2 on bad options (a --table file that cannot\n"
      "be read among them).");
}

}  // namespace posenc::cli
