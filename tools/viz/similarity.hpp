// Position-wise cosine similarity of an encoding table (Wang and Chen 2020,
// "What Do Position Embeddings Learn?").
#pragma once

#include <cstdint>
#include <vector>

namespace posenc::viz {

// out[i, j] = <P[i], P[j]> / (|P[i]| |P[j]|) for table P of [rows, dim],
// accumulated in double; out is [rows, rows], computed on `threads` OpenMP
// threads (at least 1). A pair with a zero row has similarity 0.
std::vector<float> cosine_similarity(const float* table, int64_t rows, int64_t dim, int threads);

}  // namespace posenc::viz
