// Batched GEMM through oneDNN, with primitives cached by shape and type.
//
// C[b] = alpha * A[b] x op(B[b]) (+ C[b] if accumulate), for b < batch, where
// A[b] is m x k (row stride lda), op(B[b]) is k x n: B[b] stored k x n (row
// stride ldb) or, with transpose_b, stored n x k (row stride ldb). Batch
// strides of 0 broadcast A or B across the batch. C is fp32 unless c_type
// says bf16; A and B share a_type (fp32 or bf16), accumulation is fp32.
//
// With b_packed (batch 1 only), b is instead B in oneDNN's own blocked
// layout for the GEMM, written by pack_b (for GEMMs that reuse one B, such as one head's keys for
// all its query blocks: the layout change is then paid once).
//
// Safe to call from many threads at once. Inside an OpenMP parallel region
// the GEMM runs on the calling thread alone.
#pragma once

#include <cstddef>
#include <cstdint>

#include "posenc/core.h"

namespace posenc {

struct MatmulShape {
  int64_t batch = 1;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch_stride_a = 0, batch_stride_b = 0, batch_stride_c = 0;
  bool transpose_b = false;
  posenc_dtype ab_type = POSENC_F32;
  posenc_dtype c_type = POSENC_F32;
  float alpha = 1.0f;
  bool accumulate = false;
  bool b_packed = false;

  bool operator==(const MatmulShape& other) const;
};

void matmul(const MatmulShape& shape, const void* a, const void* b, void* c);

// Bytes of B packed for the GEMM of `shape` (b_packed set, batch 1), or 0
// when oneDNN takes B as it is stored (packing would only copy it).
size_t packed_b_bytes(const MatmulShape& shape);

// Writes B (stored as `shape` says: ldb, transpose_b) to `packed`, of
// packed_b_bytes(shape) bytes, in the layout of the GEMM of `shape`.
void pack_b(const MatmulShape& shape, const void* b, void* packed);

// True if B packed for the GEMM of `packed_for` serves the GEMM of `shape`
// too (oneDNN's layout can depend on m, alpha or accumulate).
bool packed_b_serves(const MatmulShape& shape, const MatmulShape& packed_for);

// oneDNN 2.6.3's AMX bf16 matmul, with more than one thread configured,
// computes dense outputs (ldc == n) of 49 to 63 columns wrong and can fault
// on them; a longer row stride sends them to a slower path that is right.
// matmul() does this itself through a padded copy; callers that own their
// output layout can choose such a stride and avoid the copy.
inline bool onednn_bf16_dense_width_is_broken(int64_t columns) {
  return columns >= 49 && columns <= 63;
}

// oneDNN's version and the ISA its primitives dispatch to, for `posenc info`.
const char* onednn_version_string();
const char* onednn_isa_string();
// The implementation oneDNN picks for an fp32 or bf16 square GEMM (e.g.
// "brg:avx512_core"); creates, but does not run, a primitive.
const char* onednn_matmul_impl(posenc_dtype type);

}  // namespace posenc
