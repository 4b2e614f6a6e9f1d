// Writes Images as 8-bit RGB PNG files through libpng, all of a set or none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "image.hpp"

namespace posenc::viz {

// The PNG files of one command, put in place together: stage() encodes the
// i-th into a new file at partial_path(path, id(), i) (an existing file or
// link of that name is an error, never followed or replaced) and commit()
// renames them all to their paths. A failed stage(), or a set destroyed
// before commit(), removes every partial file and leaves the paths as they
// were (a rename failing in commit(), once stage() has refused folders,
// leaves the files before it in place). Errors throw std::runtime_error
// naming the path and the cause (the system's or libpng's message).
class PngFiles {
 public:
  PngFiles();
  PngFiles(const PngFiles&) = delete;
  PngFiles& operator=(const PngFiles&) = delete;
  ~PngFiles();

  // A folder at path, or a name longer than its folder takes, is refused
  // here, before anything is renamed.
  void stage(const std::string& path, const Image& image);
  void commit();

  // The set's number in the process (each set has its own partial files,
  // even in one folder).
  uint64_t id() const { return id_; }

 private:
  struct Staged {
    std::string path, partial;
  };
  void remove_partial_files() noexcept;

  uint64_t id_;
  std::vector<Staged> staged_;
};

// "posenc-<process id>-<set>-<index>.partial" in path's folder: a file left
// by a run that was killed does not stand in the way of the next, and the
// name stays short whatever path's (a name at the system's limit still gets
// one).
std::string partial_path(const std::string& path, uint64_t set, size_t index);

// One file, as a set of one.
void write_png(const std::string& path, const Image& image);

}  // namespace posenc::viz
