// posenc viz: writes the figures people would otherwise plot by hand (see
// --help) as PNG files and prints their paths.
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "arguments.hpp"
#include "commands.hpp"
#include "viz/png_writer.hpp"
#include "viz_figures.hpp"
#include "viz_options.hpp"

namespace posenc::cli {
namespace {

namespace fs = std::filesystem;

// The folders of dir that do not exist yet, deepest first: those
// create_directories(dir) makes.
std::vector<fs::path> missing_folders(const fs::path& dir) {
  std::vector<fs::path> missing;
  std::error_code error;
  for (fs::path p = dir; !p.empty() && !fs::exists(fs::symlink_status(p, error));
       p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  return missing;
}

// Refuses an --out that is not a folder and cannot be made one (the nearest
// path above it that exists is not a folder), before any figure is computed.
void check_out_dir(const std::string& out_dir) {
  std::error_code error;
  fs::path existing = out_dir;
  while (!existing.empty() && !fs::exists(fs::symlink_status(existing, error))) {
    if (existing == existing.parent_path()) return;
    existing = existing.parent_path();
  }
  if (existing.empty() || fs::is_directory(fs::status(existing, error))) return;
  throw BadArgument("--out: '" + existing.string() + "' is not a folder" +
                    (existing == fs::path(out_dir) ? "" : " (in --out '" + out_dir + "')"));
}

// Removes the folders it was given, deepest first, unless they hold something
// (a run that fails leaves no empty output folder behind). errno stays as it
// was: it may say why stdout failed, which main reports.
void remove_if_empty(const std::vector<fs::path>& folders) noexcept {
  const int reason = errno;
  std::error_code error;
  for (const fs::path& folder : folders) fs::remove(folder, error);
  errno = reason;
}

}  // namespace

int run_viz(int argc, char** argv) {
  VizOptions options;
  if (!parse_viz_options(argc, argv, options)) {
    print_viz_help();
    return 0;
  }
  require_known_isa_cap();
  check_out_dir(options.out_dir);
  // Every figure is computed (and --table read) before the folder is made,
  // and every file written before any is put in place.
  std::vector<NamedFigure> figures = absolute_figures(options);
  for (NamedFigure& figure : relative_figures(options)) figures.push_back(std::move(figure));
  std::vector<std::string> paths;
  std::vector<fs::path> made;
  bool paths_printed = false;
  try {
    made = missing_folders(options.out_dir);
    fs::create_directories(options.out_dir);
    viz::PngFiles files;
    for (const NamedFigure& figure : figures) {
      paths.push_back(options.out_dir + "/" + options.prefix + figure.file);
      files.stage(paths.back(), viz::render_heatmap(figure.heatmap));
    }
    // The paths reach stdout before the files are put in place: where they
    // cannot (main says why, status 1), the old files stay.
    for (const std::string& path : paths) std::printf("%s\n", path.c_str());
    paths_printed = std::fflush(stdout) == 0 && !std::ferror(stdout);
    if (paths_printed) files.commit();
  } catch (const std::exception& e) {
    remove_if_empty(made);
    std::fprintf(stderr, "posenc viz: %s\n", e.what());
    return 1;
  }
  if (!paths_printed) remove_if_empty(made);  // the partial files are gone
  return paths_printed ? 0 : 1;
}

}  // namespace posenc::cli
