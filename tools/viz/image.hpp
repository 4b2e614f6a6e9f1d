// An 8-bit RGB raster, row-major from the top-left corner, and the few
// drawing primitives the figures need.
#pragma once

#include <cstdint>
#include <vector>

namespace posenc::viz {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  friend bool operator==(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }
};

inline constexpr Rgb kWhite{255, 255, 255};
inline constexpr Rgb kBlack{0, 0, 0};

class Image {
 public:
  Image(int width, int height, Rgb background = kWhite);

  int width() const { return width_; }
  int height() const { return height_; }
  // 3 bytes per pixel, width*3 bytes per row, no padding.
  const uint8_t* data() const { return pixels_.data(); }

  Rgb at(int x, int y) const;
  // Pixels outside the image are ignored, so shapes may be clipped.
  void set(int x, int y, Rgb color);
  void fill_rect(int x, int y, int w, int h, Rgb color);
  // A frame of the given thickness drawn inside the rectangle.
  void frame_rect(int x, int y, int w, int h, int thickness, Rgb color);

 private:
  int width_;
  int height_;
  std::vector<uint8_t> pixels_;
};

}  // namespace posenc::viz
