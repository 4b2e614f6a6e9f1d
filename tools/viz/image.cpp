#include "image.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace posenc::viz {

Image::Image(int width, int height, Rgb background) : width_(width), height_(height) {
  if (width < 1 || height < 1 || width > 1 << 15 || height > 1 << 15) {
    throw std::invalid_argument("image size " + std::to_string(width) + "x" +
                                std::to_string(height) + " is outside 1..32768");
  }
  pixels_.resize(size_t(width) * size_t(height) * 3);
  for (size_t i = 0; i < pixels_.size(); i += 3) {
    pixels_[i] = background.r;
    pixels_[i + 1] = background.g;
    pixels_[i + 2] = background.b;
  }
}

Rgb Image::at(int x, int y) const {
  const uint8_t* p = &pixels_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
  return {p[0], p[1], p[2]};
}

void Image::set(int x, int y, Rgb color) {
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return;
  uint8_t* p = &pixels_[(size_t(y) * size_t(width_) + size_t(x)) * 3];
  p[0] = color.r;
  p[1] = color.g;
  p[2] = color.b;
}

void Image::fill_rect(int x, int y, int w, int h, Rgb color) {
  const int x0 = std::max(x, 0), x1 = std::min(x + w, width_);
  const int y0 = std::max(y, 0), y1 = std::min(y + h, height_);
  for (int yy = y0; yy < y1; ++yy) {
    for (int xx = x0; xx < x1; ++xx) set(xx, yy, color);
  }
}

void Image::frame_rect(int x, int y, int w, int h, int thickness, Rgb color) {
  fill_rect(x, y, w, thickness, color);
  fill_rect(x, y + h - thickness, w, thickness, color);
  fill_rect(x, y, thickness, h, color);
  fill_rect(x + w - thickness, y, thickness, h, color);
}

}  // namespace posenc::viz
