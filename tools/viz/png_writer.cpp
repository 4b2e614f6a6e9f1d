#include "png_writer.hpp"

#include <fcntl.h>
#include <png.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace posenc::viz {
namespace {

struct ErrorSlot {
  char message[256];
};

// libpng's "Write Error" comes from a failed fwrite, whose errno says why.
[[noreturn]] void on_png_error(png_structp png, png_const_charp message) {
  auto* slot = static_cast<ErrorSlot*>(png_get_error_ptr(png));
  if (errno != 0) {
    std::snprintf(slot->message, sizeof slot->message, "%s (%s)", message, std::strerror(errno));
  } else {
    std::snprintf(slot->message, sizeof slot->message, "%s", message);
  }
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

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error("cannot write " + path + ": " + why);
}

// Encodes image into a file created at partial, which must not exist (O_EXCL
// also refuses a link there rather than follow it). On failure, removes the
// file it created.
void encode_new_file(const std::string& partial, const std::string& path, const Image& image) {
  const int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int open_errno = errno;
    fail(path, open_errno == EEXIST ? partial + " exists" : std::strerror(open_errno));
  }
  std::FILE* file = ::fdopen(fd, "wb");
  if (!file) {
    const int open_errno = errno;
    ::close(fd);
    std::remove(partial.c_str());
    fail(path, std::strerror(open_errno));
  }
  ErrorSlot slot{};
  errno = 0;
  const bool encoded = encode(file, image, slot);
  const bool flushed = std::fflush(file) == 0 && !std::ferror(file);
  const int flush_errno = errno;
  const bool closed = std::fclose(file) == 0;
  const int close_errno = errno;
  if (!encoded || !flushed || !closed) {
    std::remove(partial.c_str());
    fail(path, !encoded ? std::string("libpng: ") + slot.message
                        : std::strerror(flushed ? close_errno : flush_errno));
  }
}

}  // namespace

std::string partial_path(const std::string& path, uint64_t set, size_t index) {
  const std::string name = "posenc-" + std::to_string(::getpid()) + "-" + std::to_string(set) +
                           "-" + std::to_string(index) + ".partial";
  return (std::filesystem::path(path).parent_path() / name).string();
}

PngFiles::PngFiles() {
  static std::atomic<uint64_t> sets{0};
  id_ = sets.fetch_add(1);
}

PngFiles::~PngFiles() { remove_partial_files(); }

void PngFiles::remove_partial_files() noexcept {
  for (const Staged& file : staged_) std::remove(file.partial.c_str());
  staged_.clear();
}

void PngFiles::stage(const std::string& path, const Image& image) {
  try {
    std::error_code error;
    if (std::filesystem::is_directory(std::filesystem::symlink_status(path, error))) {
      fail(path, "a folder is there");
    }
    // The partial file's short name would pass where path's cannot, and
    // commit() would fail only after renaming the set's earlier files.
    const std::filesystem::path name = std::filesystem::path(path).filename();
    const std::string folder = std::filesystem::path(path).parent_path().string();
    const long name_max = ::pathconf(folder.empty() ? "." : folder.c_str(), _PC_NAME_MAX);
    if (name.string().size() > size_t(name_max > 0 ? name_max : NAME_MAX)) {
      fail(path, std::strerror(ENAMETOOLONG));
    }
    // Recorded before the file exists, so that no allocation can lose it.
    staged_.push_back({path, partial_path(path, id_, staged_.size())});
    try {
      encode_new_file(staged_.back().partial, path, image);
    } catch (...) {
      staged_.pop_back();  // nothing of ours there (or not ours to remove)
      throw;
    }
  } catch (...) {
    remove_partial_files();
    throw;
  }
}

void PngFiles::commit() {
  for (size_t i = 0; i < staged_.size(); ++i) {
    if (std::rename(staged_[i].partial.c_str(), staged_[i].path.c_str()) != 0) {
      const int rename_errno = errno;
      const std::string path = staged_[i].path;
      staged_.erase(staged_.begin(), staged_.begin() + std::ptrdiff_t(i));
      remove_partial_files();
      fail(path, std::strerror(rename_errno));
    }
  }
  staged_.clear();
}

void write_png(const std::string& path, const Image& image) {
  PngFiles file;
  file.stage(path, image);
  file.commit();
}

}  // namespace posenc::viz
