// posenc viz: writes the figures people would otherwise plot by hand (see
// --help) as PNG files and prints their paths.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "commands.hpp"
#include "viz/png_writer.hpp"
#include "viz_figures.hpp"
#include "viz_options.hpp"

namespace posenc::cli {

int run_viz(int argc, char** argv) {
  VizOptions options;
  if (!parse_viz_options(argc, argv, options)) {
    print_viz_help();
    return 0;
  }
  try {
    std::filesystem::create_directories(options.out_dir);
    std::vector<NamedFigure> figures = absolute_figures(options);
    for (NamedFigure& figure : relative_figures(options)) figures.push_back(std::move(figure));
    for (const NamedFigure& figure : figures) {
      const std::string path = options.out_dir + "/" + options.prefix + figure.file;
      viz::write_png(path, viz::render_heatmap(figure.heatmap));
      std::printf("%s\n", path.c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "posenc viz: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace posenc::cli
