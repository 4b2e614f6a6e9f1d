#include "similarity.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace posenc::viz {

namespace {

// Rows of a tile: the products of a pair of tiles read their 2 x kTileRows
// rows from cache, where each row against all the others read the whole
// table from memory (128 MB at 4096 x 8192) once per row.
constexpr int64_t kTileRows = 16;

// The I x J products of rows a, a + dim, ... with rows b, b + dim, ...,
// each summed over the columns in order in double (the bits of one at a
// time), all at once so that an addition does not wait for the last.
template <int I, int J>
void products(const float* a, const float* b, int64_t dim, double (&dot)[I][J]) {
  for (int i = 0; i < I; ++i) {
    for (int j = 0; j < J; ++j) dot[i][j] = 0;
  }
  for (int64_t c = 0; c < dim; ++c) {
    double x[I];
    for (int i = 0; i < I; ++i) x[i] = a[i * dim + c];
    for (int j = 0; j < J; ++j) {
      const double y = b[j * dim + c];
      for (int i = 0; i < I; ++i) dot[i][j] += x[i] * y;
    }
  }
}

}  // namespace

std::vector<float> cosine_similarity(const float* table, int64_t rows, int64_t dim, int threads) {
  std::vector<double> norms(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0;
    for (int64_t c = 0; c < dim; ++c) sum += double(table[i * dim + c]) * table[i * dim + c];
    norms[size_t(i)] = std::sqrt(sum);
  }
  std::vector<float> out(size_t(rows * rows));
  // The I x J block of products from (i, j) on, stored where i <= j, to
  // both places: the products and their order are the same both ways.
  const auto block = [&](auto rows_i, auto rows_j, int64_t i, int64_t j) {
    constexpr int I = decltype(rows_i)::value, J = decltype(rows_j)::value;
    double dot[I][J];
    products<I, J>(table + i * dim, table + j * dim, dim, dot);
    for (int r = 0; r < I; ++r) {
      for (int s = 0; s < J; ++s) {
        if (i + r > j + s) continue;
        const double denominator = norms[size_t(i + r)] * norms[size_t(j + s)];
        out[size_t((i + r) * rows + j + s)] = out[size_t((j + s) * rows + i + r)] =
            denominator > 0 ? float(dot[r][s] / denominator) : 0.0f;
      }
    }
  };
  using One = std::integral_constant<int, 1>;
  using Two = std::integral_constant<int, 2>;
  using Four = std::integral_constant<int, 4>;
  // Tile pairs with j's tile not before i's; a tile on the diagonal computes
  // its pairs below the diagonal too (and does not store them).
  const int64_t tiles = (rows + kTileRows - 1) / kTileRows;
  const int team = int(std::clamp<int64_t>(tiles * tiles, 1, threads));
#pragma omp parallel for schedule(dynamic) num_threads(team)
  for (int64_t pair = 0; pair < tiles * tiles; ++pair) {
    const int64_t i_tile = pair / tiles, j_tile = pair % tiles;
    if (j_tile < i_tile) continue;
    const int64_t i_end = std::min(rows, (i_tile + 1) * kTileRows);
    const int64_t j_end = std::min(rows, (j_tile + 1) * kTileRows);
    for (int64_t i = i_tile * kTileRows; i < i_end; i += 2) {
      const bool two = i + 2 <= i_end;
      int64_t j = j_tile * kTileRows;
      for (; j + 4 <= j_end; j += 4) two ? block(Two(), Four(), i, j) : block(One(), Four(), i, j);
      for (; j < j_end; ++j) two ? block(Two(), One(), i, j) : block(One(), One(), i, j);
    }
  }
  return out;
}

}  // namespace posenc::viz
