#include "similarity.hpp"

#include <cmath>

namespace posenc::viz {

std::vector<float> cosine_similarity(const float* table, int64_t rows, int64_t dim) {
  std::vector<double> norms(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i) {
    double sum = 0;
    for (int64_t c = 0; c < dim; ++c) sum += double(table[i * dim + c]) * table[i * dim + c];
    norms[size_t(i)] = std::sqrt(sum);
  }
  // Symmetric (the products and their order are the same both ways): each
  // pair is computed once.
  std::vector<float> out(size_t(rows * rows));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = i; j < rows; ++j) {
      const double denominator = norms[size_t(i)] * norms[size_t(j)];
      double dot = 0;
      for (int64_t c = 0; c < dim; ++c) dot += double(table[i * dim + c]) * table[j * dim + c];
      out[size_t(i * rows + j)] = out[size_t(j * rows + i)] =
          denominator > 0 ? float(dot / denominator) : 0.0f;
    }
  }
  return out;
}

}  // namespace posenc::viz
