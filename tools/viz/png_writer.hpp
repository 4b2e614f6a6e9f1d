// Writes an Image as an 8-bit RGB PNG through libpng.
#pragma once

#include <string>

#include "image.hpp"

namespace posenc::viz {

// Encodes into "<path>.partial" and renames it to path once complete, so a
// failure never leaves a partial file at path. Throws std::runtime_error
// naming the path and the cause (the system's or libpng's message).
void write_png(const std::string& path, const Image& image);

}  // namespace posenc::viz
