#include "ops/attention/gemms.hpp"

#include <algorithm>

#include "runtime/ceil_div.hpp"

namespace posenc::ops {
namespace {

// The most workspace a thread's packed copy may take: past it (very long
// keys), oneDNN relayouts them per GEMM instead. Per thread, not in all, so
// that the choice (and with it oneDNN's kernels, and the bits of the
// result) does not depend on the thread count.
constexpr size_t kMaxPackedBytes = size_t(8) << 20;

}  // namespace

MatmulShape scores_gemm(const AttentionProblem& p, const TaskGemms& task, int64_t rows,
                        const KeyBlock& kb) {
  MatmulShape s;
  s.m = rows;
  s.n = kb.count;
  s.k = p.head_dim;
  s.lda = task.ldq;
  s.ldb = task.ldk;
  s.ldc = gemm_output_stride(kb.count, p.gemm_dtype);
  s.transpose_b = true;
  s.ab_type = p.gemm_dtype;
  s.alpha = p.qk_alpha;
  return s;
}

MatmulShape output_gemm(const AttentionProblem& p, const TaskGemms& task, int64_t rows,
                        const KeyBlock& kb, bool accumulate) {
  MatmulShape s;
  s.m = rows;
  s.n = p.value_head_dim;
  s.k = kb.count;
  s.lda = gemm_output_stride(kb.count, p.gemm_dtype);
  s.ldb = task.ldv;
  s.ldc = task.acc_ld;
  s.ab_type = p.gemm_dtype;
  s.accumulate = accumulate;
  return s;
}

PackedBlock packed_block(const AttentionProblem& p, const TaskGemms& task, int64_t index,
                         int64_t keys) {
  const int64_t first = index * task.key_block;
  PackedBlock block{KeyBlock{first, std::min(task.key_block, keys - first)}, {}, {}};
  block.keys = scores_gemm(p, task, task.rows, block.kb);
  block.values = output_gemm(p, task, task.rows, block.kb, first > 0);
  block.keys.b_packed = block.values.b_packed = true;
  return block;
}

PackedKeyValues packed_key_values(const AttentionProblem& p, const TaskGemms& task) {
  PackedKeyValues packed{0, 0, ceil_div(p.kv_len, task.key_block)};
  // The blocks' GEMMs differ only in the first (it does not accumulate) and
  // the last (it may be short): the second stands for those between, which
  // are skipped.
  const int64_t last = packed.key_blocks - 1;
  for (int64_t i = 0; i <= last; i = i == 1 ? std::max(last, int64_t(2)) : i + 1) {
    const PackedBlock block = packed_block(p, task, i, p.kv_len);
    packed.key_block_bytes = std::max(packed.key_block_bytes, packed_b_bytes(block.keys));
    packed.value_block_bytes = std::max(packed.value_block_bytes, packed_b_bytes(block.values));
  }
  const bool fits = packed.bytes() > 0 && packed.bytes() <= kMaxPackedBytes;
  return fits ? packed : PackedKeyValues{0, 0, 0};
}

}  // namespace posenc::ops
