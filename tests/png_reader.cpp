#include "png_reader.hpp"

#include <png.h>

namespace posenc::test {

DecodedPng read_png(const std::string& path) {
  DecodedPng out;
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_file(&image, path.c_str())) {
    out.error = image.message;
    return out;
  }
  // The header as stored, before the simplified API converts to RGB.
  out.bit_depth = (image.format & PNG_FORMAT_FLAG_LINEAR) ? 16 : 8;
  out.color_type = (image.format & PNG_FORMAT_FLAG_COLOR) ? PNG_COLOR_TYPE_RGB
                                                          : PNG_COLOR_TYPE_GRAY;
  if (image.format & PNG_FORMAT_FLAG_ALPHA) out.color_type |= PNG_COLOR_MASK_ALPHA;
  image.format = PNG_FORMAT_RGB;
  out.rgb.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.rgb.data(), 0, nullptr)) {
    out.error = image.message;
    out.rgb.clear();
    return out;
  }
  out.width = int(image.width);
  out.height = int(image.height);
  return out;
}

}  // namespace posenc::test
