// Loads an encoding table saved as raw float32 values (native byte order,
// row-major [rows, dim], e.g. numpy's tofile() or torch's
// tensor.numpy().tofile()).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace posenc::viz {

struct RawTable {
  int64_t rows = 0;
  int64_t dim = 0;
  std::vector<float> values;
};

// rows = file size / (4 * dim). Throws std::runtime_error naming the path if
// the file is not a regular file or cannot be read, is empty, its size is
// not a multiple of 4 * dim, it has more than max_rows rows (checked before
// reading), or a value is not finite.
RawTable load_raw_table(const std::string& path, int64_t dim, int64_t max_rows);

}  // namespace posenc::viz
