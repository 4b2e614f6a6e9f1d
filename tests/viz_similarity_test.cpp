// Position-wise cosine similarity and the raw table loader of posenc viz.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

#include "scratch_dir.hpp"
#include "viz/raw_table.hpp"
#include "viz/similarity.hpp"

namespace posenc::viz {
namespace {

std::vector<float> random_table(int64_t rows, int64_t dim, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> t(size_t(rows * dim));
  for (float& v : t) v = normal(rng);
  return t;
}

TEST(VizSimilarity, MatchesTheDoubleLoop) {
  for (auto [rows, dim] :
       {std::pair<int64_t, int64_t>{1, 1}, {13, 7}, {64, 128}, {5, 301}, {37, 19}, {71, 33}}) {
    const std::vector<float> t = random_table(rows, dim, unsigned(rows * 31 + dim));
    const std::vector<float> got = cosine_similarity(t.data(), rows, dim, 1);
    ASSERT_EQ(got.size(), size_t(rows * rows));
    EXPECT_EQ(cosine_similarity(t.data(), rows, dim, 3), got) << "bits on 3 threads";
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < rows; ++j) {
        double dot = 0, ni = 0, nj = 0;
        for (int64_t c = 0; c < dim; ++c) {
          const double a = t[size_t(i * dim + c)], b = t[size_t(j * dim + c)];
          dot += a * b, ni += a * a, nj += b * b;
        }
        EXPECT_NEAR(got[size_t(i * rows + j)], dot / std::sqrt(ni * nj), 1e-6)
            << rows << "x" << dim << " at " << i << "," << j;
      }
    }
  }
}

TEST(VizSimilarity, KnownVectorsAndZeroRows) {
  const std::vector<float> t = {1, 0, 0, 1, 2, 2, -3, 0, 0, 0};  // 5 rows of 2
  const std::vector<float> s = cosine_similarity(t.data(), 5, 2, 2);
  EXPECT_FLOAT_EQ(s[0 * 5 + 1], 0.0f);
  EXPECT_FLOAT_EQ(s[0 * 5 + 2], float(1 / std::sqrt(2.0)));
  EXPECT_FLOAT_EQ(s[0 * 5 + 3], -1.0f);
  EXPECT_FLOAT_EQ(s[2 * 5 + 2], 1.0f);
  for (int j = 0; j < 5; ++j) EXPECT_EQ(s[4 * 5 + j], 0.0f);  // the zero row
}

std::string write_file(const test::ScratchDir& dir, const std::string& name,
                       const std::vector<float>& values) {
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             std::streamsize(values.size() * sizeof(float)));
  return path;
}

TEST(VizRawTable, LoadsRowsOfTheGivenDim) {
  const std::vector<float> values = random_table(6, 5, 3);
  const test::ScratchDir dir("viz_raw_table");
  const RawTable t = load_raw_table(write_file(dir, "table.f32", values), 5, 6);
  EXPECT_EQ(t.rows, 6);
  EXPECT_EQ(t.dim, 5);
  EXPECT_EQ(t.values, values);
}

TEST(VizRawTable, RejectsBadFilesWithTheirPath) {
  const test::ScratchDir dir("viz_raw_table_bad");
  const std::string ragged = write_file(dir, "ragged.f32", random_table(1, 7, 4));
  EXPECT_THROW(load_raw_table(ragged, 5, 100), std::runtime_error);
  const std::string empty = write_file(dir, "empty.f32", {});
  EXPECT_THROW(load_raw_table(empty, 1, 100), std::runtime_error);
  const std::string nan = write_file(dir, "nan.f32", {1.0f, std::nanf("")});
  EXPECT_THROW(load_raw_table(nan, 2, 100), std::runtime_error);
  try {
    load_raw_table("/nonexistent/posenc_table.f32", 4, 100);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/posenc_table.f32"), std::string::npos);
  }
}

// Refused before anything is read: more rows than the caller takes (their
// similarity figure would be rows x rows), and anything but a regular file
// (a folder's size means nothing; a FIFO would block the read).
TEST(VizRawTable, RejectsTooManyRowsAndFilesThatAreNotRegular) {
  const test::ScratchDir dir("viz_raw_table_rows");
  const std::string table = write_file(dir, "seven_rows.f32", random_table(7, 2, 5));
  EXPECT_EQ(load_raw_table(table, 2, 7).rows, 7);
  for (const std::string& path : {table, dir.path().string()}) {
    try {
      load_raw_table(path, 2, 6);
      FAIL() << "expected an error for " << path;
    } catch (const std::runtime_error& e) {
      const std::string why = path == table ? "more than 6" : "not a regular file";
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace posenc::viz
