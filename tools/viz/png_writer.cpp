#include "png_writer.hpp"

#include <png.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace posenc::viz {
namespace {

struct ErrorSlot {
  char message[256];
};

[[noreturn]] void on_png_error(png_structp png, png_const_charp message) {
  auto* slot = static_cast<ErrorSlot*>(png_get_error_ptr(png));
  std::snprintf(slot->message, sizeof slot->message, "%s", message);
  png_longjmp(png, 1);
}

void on_png_warning(png_structp, png_const_charp) {}

// libpng reports errors by longjmp: nothing with a destructor lives in this
// function, and nothing set after setjmp is read after the jump.
bool encode(std::FILE* file, const Image& image, ErrorSlot& slot) {
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, &slot, on_png_error, on_png_warning);
  if (!png) {
    std::snprintf(slot.message, sizeof slot.message, "libpng could not start");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    std::snprintf(slot.message, sizeof slot.message, "libpng could not start");
    return false;
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return false;
  }
  png_init_io(png, file);
  png_set_IHDR(png, info, png_uint_32(image.width()), png_uint_32(image.height()), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  const size_t row_bytes = size_t(image.width()) * 3;
  for (int y = 0; y < image.height(); ++y) {
    png_write_row(png, image.data() + size_t(y) * row_bytes);
  }
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return true;
}

}  // namespace

void write_png(const std::string& path, const Image& image) {
  const std::string partial = path + ".partial";
  std::FILE* file = std::fopen(partial.c_str(), "wb");
  if (!file) {
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  }
  ErrorSlot slot{};
  const bool encoded = encode(file, image, slot);
  const bool flushed = std::fflush(file) == 0 && !std::ferror(file);
  const int flush_errno = errno;
  const bool closed = std::fclose(file) == 0;
  std::string failure;
  if (!encoded) {
    failure = std::string("libpng: ") + slot.message;
  } else if (!flushed || !closed) {
    failure = std::strerror(flushed ? errno : flush_errno);
  } else if (std::rename(partial.c_str(), path.c_str()) != 0) {
    failure = std::strerror(errno);
  }
  if (!failure.empty()) {
    std::remove(partial.c_str());
    throw std::runtime_error("cannot write " + path + ": " + failure);
  }
}

}  // namespace posenc::viz
