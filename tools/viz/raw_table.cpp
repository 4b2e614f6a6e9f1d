#include "raw_table.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace posenc::viz {

RawTable load_raw_table(const std::string& path, int64_t dim, int64_t max_rows) {
  int fd = -1;
  auto fail = [&](const std::string& why) {
    if (fd >= 0) ::close(fd);
    throw std::runtime_error(path + ": " + why);
  };
  if (dim < 1) fail("dim must be >= 1");
  // Opened without blocking and checked on the open file: a folder's size
  // means nothing, and a FIFO or device would block the read.
  fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(std::strerror(errno));
  struct stat status {};
  if (::fstat(fd, &status) != 0) fail(std::strerror(errno));
  if (!S_ISREG(status.st_mode)) fail("not a regular file");
  const int64_t bytes = int64_t(status.st_size);
  const int64_t row_bytes = dim * int64_t(sizeof(float));
  if (bytes <= 0) fail("is empty");
  if (bytes % row_bytes != 0) {
    fail(std::to_string(bytes) + " bytes is not a whole number of rows of " +
         std::to_string(dim) + " float32 values");
  }
  const int64_t rows = bytes / row_bytes;
  if (rows > max_rows) {
    fail(std::to_string(rows) + " rows of " + std::to_string(dim) + " float32 values, more than " +
         std::to_string(max_rows));
  }
  RawTable table{rows, dim, std::vector<float>(size_t(bytes) / sizeof(float))};
  char* to = reinterpret_cast<char*>(table.values.data());
  for (int64_t read = 0; read < bytes;) {
    const ssize_t got = ::read(fd, to + read, size_t(bytes - read));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) fail(got < 0 ? std::strerror(errno) : "shorter than its size");
    read += got;
  }
  ::close(fd);
  fd = -1;
  for (size_t i = 0; i < table.values.size(); ++i) {
    if (!std::isfinite(table.values[i])) fail("value " + std::to_string(i) + " is not finite");
  }
  return table;
}

}  // namespace posenc::viz
