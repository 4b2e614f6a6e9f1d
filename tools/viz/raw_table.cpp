#include "raw_table.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

namespace posenc::viz {

RawTable load_raw_table(const std::string& path, int64_t dim, int64_t max_rows) {
  auto fail = [&](const std::string& why) { throw std::runtime_error(path + ": " + why); };
  if (dim < 1) fail("dim must be >= 1");
  // Not a folder, FIFO or device, whose size means nothing (a FIFO would
  // block the read).
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error) fail(error.message());
  if (!std::filesystem::is_regular_file(status)) fail("not a regular file");
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) fail("cannot open");
  const std::streamoff bytes = file.tellg();
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
  file.seekg(0);
  if (!file.read(reinterpret_cast<char*>(table.values.data()), bytes)) fail("read failed");
  for (size_t i = 0; i < table.values.size(); ++i) {
    if (!std::isfinite(table.values[i])) fail("value " + std::to_string(i) + " is not finite");
  }
  return table;
}

}  // namespace posenc::viz
