// The GEMM of the position-logit ops: queries against table rows.
#pragma once

#include <cstdint>

#include "runtime/matmul.hpp"

namespace posenc::ops {

// out[r * ldo + c] = sum_k q[r * ldq + k] * table[c * dim + k] for r < rows,
// c < columns: query rows against `columns` consecutive table rows.
inline void query_table_gemm(int64_t rows, int64_t columns, int64_t dim, const float* q,
                             int64_t ldq, const float* table, float* out, int64_t ldo) {
  MatmulShape s;
  s.m = rows;
  s.n = columns;
  s.k = dim;
  s.lda = ldq;
  s.ldb = dim;
  s.ldc = ldo;
  s.transpose_b = true;
  matmul(s, q, table, out);
}

}  // namespace posenc::ops
