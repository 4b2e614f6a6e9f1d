// Reads a PNG back through libpng, for the tests of the PNG writer and of
// `posenc viz`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace posenc::test {

struct DecodedPng {
  int width = 0;
  int height = 0;
  int bit_depth = 0;
  int color_type = 0;           // libpng's PNG_COLOR_TYPE_*
  std::vector<uint8_t> rgb;     // [height, width, 3]
  std::string error;            // empty if the file decoded fully
};

DecodedPng read_png(const std::string& path);

}  // namespace posenc::test
