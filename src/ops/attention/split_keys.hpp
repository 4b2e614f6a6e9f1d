// Split-key attention for decoding (few query rows against long keys): the
// keys of each query block are cut into ranges of whole key blocks, one task
// per range, so that a batch of few heads still gives every thread work.
// Each task leaves a partial softmax (row maximum m_i, row sum l_i and the
// unnormalized output acc_i, all relative to m_i) in the workspace; a second
// pass merges the ranges of a query block in range order, exactly:
//   M = max_i m_i, w_i = exp(scale (m_i - M)),
//   out = (sum_i w_i acc_i) / (sum_i w_i l_i).
// The planner (plan.cpp) fixes the ranges from the problem alone, so the
// bits of the result do not depend on the thread count.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace posenc::ops {

// Keys [first, end) of one task.
struct KeyRange {
  int64_t first, end;
  int64_t count() const { return end - first; }
};

// The keys of range `split` (of keys_per_split each, the first at key
// `first`: a multiple of the key block, so that the blocks stay the
// problem's) among the first `visible` keys: empty past them.
inline KeyRange key_range(int64_t split, int64_t keys_per_split, int64_t first,
                          int64_t visible) {
  const int64_t start = first + split * keys_per_split;
  return KeyRange{start < visible ? start : visible,
                  start + keys_per_split < visible ? start + keys_per_split : visible};
}

// Byte offsets of one task's partial result inside its record, each 64-byte
// aligned; a task's record is `bytes` long, task t's at t * bytes.
struct PartialLayout {
  size_t acc;      // float [query_block, acc_ld]: unnormalized output
  size_t row_max;  // float [query_block]
  size_t row_sum;  // float [query_block]; 0: the range saw no key (acc unset)
  size_t bytes;
};
PartialLayout partial_layout(int64_t query_block, int64_t acc_ld);

// One task's partial result, at its record.
struct Partial {
  float* acc;
  float* row_max;
  float* row_sum;
};
inline Partial partial_at(uint8_t* records, const PartialLayout& layout, int64_t task) {
  uint8_t* record = records + size_t(task) * layout.bytes;
  return Partial{reinterpret_cast<float*>(record + layout.acc),
                 reinterpret_cast<float*>(record + layout.row_max),
                 reinterpret_cast<float*>(record + layout.row_sum)};
}

// The finished tasks of each query block, in the workspace: the task that
// finishes a query block's last range merges it, in the same region (a
// second region would cost a second wait for the slowest thread). Which
// thread merges does not change the bits: the merge reads the records in
// range order.
class MergeCounts {
 public:
  static size_t bytes(int64_t query_tasks) {
    return size_t(query_tasks) * sizeof(std::atomic<int64_t>);
  }
  // Zero counts made at `memory` (64-byte aligned, bytes(query_tasks) long).
  MergeCounts(uint8_t* memory, int64_t query_tasks)
      : counts_(reinterpret_cast<std::atomic<int64_t>*>(memory)) {
    for (int64_t i = 0; i < query_tasks; ++i) new (counts_ + i) std::atomic<int64_t>(0);
  }
  // Counts one more finished task of query_task (its partial written);
  // true for the last of `splits`, which then sees every partial.
  bool finish(int64_t query_task, int64_t splits) const {
    return counts_[query_task].fetch_add(1, std::memory_order_acq_rel) == splits - 1;
  }

 private:
  std::atomic<int64_t>* counts_;
};

// Merges the `splits` partials of tasks first_task.. (one query block of
// `rows` rows) into acc (row stride acc_ld, `columns` columns: the value
// head size), row_max and row_sum, as store() reads them: acc / row_sum is
// the output, both relative to row_max. A row no range saw a key of gets
// acc 0 and row_sum 0.
void merge_partials(uint8_t* records, const PartialLayout& layout, int64_t first_task,
                    int64_t splits, int64_t rows, int64_t columns, int64_t acc_ld,
                    float softmax_scale, float* acc, float* row_max, float* row_sum);

}  // namespace posenc::ops
