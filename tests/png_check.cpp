// posenc_png_check FILE...: exits 0 if every file is a complete 8-bit RGB PNG
// that libpng decodes, else prints why and exits 1. Used by the ctest of
// `posenc viz`.
#include <png.h>

#include <cstdio>

#include "png_reader.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: posenc_png_check FILE...\n");
    return 2;
  }
  int bad = 0;
  for (int i = 1; i < argc; ++i) {
    const posenc::test::DecodedPng png = posenc::test::read_png(argv[i]);
    if (!png.error.empty()) {
      std::fprintf(stderr, "%s: %s\n", argv[i], png.error.c_str());
      ++bad;
    } else if (png.bit_depth != 8 || png.color_type != PNG_COLOR_TYPE_RGB || png.width < 1 ||
               png.height < 1) {
      std::fprintf(stderr, "%s: not an 8-bit RGB image\n", argv[i]);
      ++bad;
    } else {
      std::printf("%s: %dx%d RGB\n", argv[i], png.width, png.height);
    }
  }
  return bad ? 1 : 0;
}
