// The GEMM of the position-logit ops: queries against table rows.
#pragma once

#include <cstdint>

#include "runtime/matmul.hpp"

namespace posenc::ops {

// `count` independent products, operand b at q + b * q_stride,
// table + b * table_stride (0: one table for all) and out + b * out_stride.
struct GemmBatch {
  int64_t count = 1;
  int64_t q_stride = 0, table_stride = 0, out_stride = 0;
};

// The GEMM of query_table_gemm, for GemmSlots::prepare.
inline MatmulShape query_table_shape(int64_t rows, int64_t columns, int64_t dim, int64_t ldq,
                                     int64_t ldo, const GemmBatch& batch = {}) {
  MatmulShape s;
  s.batch = batch.count;
  s.m = rows;
  s.n = columns;
  s.k = dim;
  s.lda = ldq;
  s.ldb = dim;
  s.ldc = ldo;
  s.batch_stride_a = batch.q_stride;
  s.batch_stride_b = batch.table_stride;
  s.batch_stride_c = batch.out_stride;
  s.transpose_b = true;
  return s;
}

// out[r * ldo + c] = sum_k q[r * ldq + k] * table[c * dim + k] for r < rows,
// c < columns: query rows against `columns` consecutive table rows.
inline void query_table_gemm(int64_t rows, int64_t columns, int64_t dim, const float* q,
                             int64_t ldq, const float* table, float* out, int64_t ldo,
                             const GemmBatch& batch = {}) {
  matmul(query_table_shape(rows, columns, dim, ldq, ldo, batch), q, table, out);
}

}  // namespace posenc::ops
