// The PNG writer: pixels survive a round trip through libpng, and a failed
// write leaves no file behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "png_reader.hpp"
#include "scratch_dir.hpp"
#include "viz/png_writer.hpp"

namespace posenc::viz {
namespace {

namespace fs = std::filesystem;
using test::ScratchDir;

// The partial files in dir (the writer's, or any other run's).
std::vector<std::string> partial_files(const fs::path& dir) {
  std::vector<std::string> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const bool partial = name.size() >= 8 && name.compare(name.size() - 8, 8, ".partial") == 0;
    if (partial) found.push_back(name);
  }
  return found;
}

Image pattern(int width, int height) {
  Image image(width, height);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      image.set(x, y, {uint8_t(x * 37 + y), uint8_t(y * 11 + 3), uint8_t(x ^ (y * 5))});
    }
  }
  return image;
}

TEST(VizPng, RoundTripKeepsEveryPixel) {
  for (auto [w, h] : {std::pair{1, 1}, {7, 5}, {3, 64}, {301, 2}}) {
    const ScratchDir dir("viz_png_round_trip");
    const fs::path path = dir / "p.png";
    const Image image = pattern(w, h);
    write_png(path.string(), image);
    const test::DecodedPng back = test::read_png(path.string());
    ASSERT_EQ(back.error, "");
    EXPECT_EQ(back.width, w);
    EXPECT_EQ(back.height, h);
    EXPECT_EQ(back.bit_depth, 8);
    const std::vector<uint8_t> want(image.data(), image.data() + size_t(w) * h * 3);
    EXPECT_EQ(back.rgb, want) << w << "x" << h;
    EXPECT_TRUE(partial_files(path.parent_path()).empty());
  }
}

// The partial file's name does not grow with the figure's: a name at the
// system's limit of 255 bytes is written.
TEST(VizPng, ANameOfTheLongestLengthIsWritten) {
  const ScratchDir dir("viz_png_long_name");
  const fs::path path = dir / (std::string(251, 'n') + ".png");
  write_png(path.string(), pattern(2, 2));
  EXPECT_EQ(test::read_png(path.string()).error, "");
  EXPECT_TRUE(partial_files(path.parent_path()).empty());
}

TEST(VizPng, OverwritesAnExistingFile) {
  const ScratchDir dir("viz_png_overwrite");
  const fs::path path = dir / "p.png";
  std::ofstream(path) << "not a png";
  write_png(path.string(), pattern(4, 4));
  EXPECT_EQ(test::read_png(path.string()).error, "");
}

TEST(VizPng, MissingFolderIsAnErrorNamingThePath) {
  const ScratchDir dir("viz_png_missing");
  const fs::path path = dir / "no_such_folder" / "p.png";
  try {
    write_png(path.string(), pattern(2, 2));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(path.parent_path()));
}

// A folder at the target, which the file could not replace, is refused: the
// error names the path, and no partial file is left.
TEST(VizPng, FailedWriteLeavesNoPartialFile) {
  const ScratchDir scratch("viz_png_failed");
  const fs::path& dir = scratch.path();
  const fs::path path = dir / "taken.png";
  fs::create_directories(path);
  std::ofstream(path / "keep") << "x";
  EXPECT_THROW(write_png(path.string(), pattern(3, 3)), std::runtime_error);
  EXPECT_TRUE(partial_files(dir).empty());
  EXPECT_TRUE(fs::is_directory(path));
}

// A file or link already at the partial name is neither followed nor
// replaced: the write fails naming it, and what the link points to is kept.
TEST(VizPng, AnExistingPartialFileOrLinkIsNotWrittenThrough) {
  const ScratchDir scratch("viz_png_partial_link");
  const fs::path& dir = scratch.path();
  const fs::path path = dir / "p.png", victim = dir / "victim";
  std::ofstream(victim) << "keep";
  PngFiles files;
  const std::string partial = partial_path(path.string(), files.id(), 0);
  fs::create_symlink(victim, partial);
  try {
    files.stage(path.string(), pattern(2, 2));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(".partial exists"), std::string::npos) << e.what();
  }
  std::string kept;
  std::ifstream(victim) >> kept;
  EXPECT_EQ(kept, "keep");
  EXPECT_FALSE(fs::exists(path));
  EXPECT_TRUE(fs::is_symlink(partial));
}

// Two sets staged at once in one folder (two threads, or a write_png while
// a set is staged) have partial files of their own.
TEST(VizPng, SetsStagedTogetherDoNotCollide) {
  const ScratchDir scratch("viz_png_two_sets");
  const fs::path& dir = scratch.path();
  PngFiles first, second;
  first.stage((dir / "a.png").string(), pattern(2, 2));
  second.stage((dir / "b.png").string(), pattern(3, 3));
  write_png((dir / "c.png").string(), pattern(4, 4));
  first.commit();
  second.commit();
  EXPECT_EQ(test::read_png((dir / "a.png").string()).width, 2);
  EXPECT_EQ(test::read_png((dir / "b.png").string()).width, 3);
  EXPECT_EQ(test::read_png((dir / "c.png").string()).width, 4);
  EXPECT_TRUE(partial_files(dir).empty());
}

// A partial file left by another run (a process killed while writing) does
// not stand in the way.
TEST(VizPng, APartialFileOfAnotherRunIsLeftAlone) {
  const ScratchDir dir("viz_png_stale");
  const fs::path path = dir / "p.png";
  // Named as by a process whose id is above Linux's largest.
  const fs::path stale = path.parent_path() / "posenc-4194305-0-0.partial";
  std::ofstream(stale) << "stale";
  write_png(path.string(), pattern(2, 2));
  EXPECT_EQ(test::read_png(path.string()).error, "");
  EXPECT_TRUE(fs::exists(stale));
}

// A set is put in place whole or not at all: a folder at the second path
// fails its stage, and the first path keeps its old contents.
TEST(VizPng, AFailedSetLeavesEveryPathAsItWas) {
  const ScratchDir scratch("viz_png_set");
  const fs::path& dir = scratch.path();
  const fs::path first = dir / "a.png", second = dir / "b.png", third = dir / "c.png";
  std::ofstream(first) << "old";
  fs::create_directories(second);
  {
    PngFiles files;
    files.stage(first.string(), pattern(3, 2));
    EXPECT_THROW(files.stage(second.string(), pattern(3, 2)), std::runtime_error);
  }
  std::string kept;
  std::ifstream(first) >> kept;
  EXPECT_EQ(kept, "old");
  EXPECT_TRUE(fs::is_directory(second));
  EXPECT_TRUE(partial_files(dir).empty());

  {  // Staged and dropped without commit: nothing changes either.
    PngFiles files;
    files.stage(third.string(), pattern(1, 1));
    EXPECT_TRUE(fs::exists(partial_path(third.string(), files.id(), 0)));
  }
  EXPECT_FALSE(fs::exists(third));
  EXPECT_TRUE(partial_files(dir).empty());

  PngFiles files;
  files.stage(first.string(), pattern(3, 2));
  files.stage(third.string(), pattern(2, 3));
  files.commit();
  EXPECT_EQ(test::read_png(first.string()).width, 3);
  EXPECT_EQ(test::read_png(third.string()).width, 2);
  EXPECT_TRUE(partial_files(dir).empty());
}

}  // namespace
}  // namespace posenc::viz
