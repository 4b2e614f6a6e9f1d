// The tensors of one posenc_attention call, for the tests: q, k, v, the
// tables and the mask as fp32 values with their bf16 copies, and the
// per-sequence values; handed to the reference loops as fp32 and to the C
// ABI in the desc's dtype (the mask in mask_dtype, the per-sequence tensors
// in index_type); a desc or a call on one line, for failure messages.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "posenc/posenc.h"
#include "reference/attention.hpp"

namespace posenc::test {

// Per-sequence values; an empty vector leaves its tensor NULL.
struct Sequences {
  std::vector<int64_t> kv_lengths, q_lengths, query_offsets;
};

// The float tensors of posenc_attention_tensors.
enum class Tensor {
  q, k, v, table, table_h, table_w, value_table, mask, sinks, relative_query_bias, key_table,
  bias_gate
};

// The rows of a RELATIVE_1D table (and of the relative values' table) as
// posenc/attention.h states them: 2K+1 when clipped, else from the largest
// query offset (the desc's or a sequence's) on.
int64_t relative_rows(const posenc_attention_desc& d,
                      const std::vector<int64_t>& query_offsets = {});

// `count` mask values: 2x for x of random_floats(count, seed), -inf where
// x < minus_inf_below (-0.8: about one in ten).
std::vector<float> mask_values(size_t count, uint32_t seed, float minus_inf_below = -0.8f);

// A model's attention after its scores, in double: out[i] = sum_j
// softmax_j(scores[i, :]) v[j] for scores [rows, keys] and v [keys, d].
std::vector<double> softmax_rows_times(const std::vector<double>& scores, int64_t rows,
                                       int64_t keys, const float* v, int64_t d);

class AttentionTensors {
 public:
  explicit AttentionTensors(const posenc_attention_desc& d, Sequences s = {});

  // Sets x to `values`, rounded to bf16 where x is passed as bf16 (so that
  // the reference sees what posenc sees); `fill` to `count` values of
  // random_floats(count, seed, low, high). An empty x is passed as NULL.
  void set(Tensor x, std::vector<float> values);
  void fill(Tensor x, size_t count, uint32_t seed, float low = -1.0f, float high = 1.0f);
  // x as the view of of's buffer from element `offset` on (packed q, k, v).
  void view(Tensor x, Tensor of, size_t offset);

  // The buffer x reads from, to change before a call.
  std::vector<float>& values(Tensor x) { return floats_[index(source_[index(x)])]; }
  // x's first value, NULL where x is unset.
  const float* get(Tensor x) const;

  const posenc_attention_desc& desc() const { return d_; }
  const Sequences& sequences() const { return s_; }

  // The inputs of the reference loops (fp32, per-sequence values as int64).
  reference::AttentionInputs reference() const;
  // The tensors as posenc_attention takes them, with `out`; the bf16 copies
  // are made now (of the values as they are) and live until the next call.
  posenc_attention_tensors tensors(void* out) const;

 private:
  static size_t index(Tensor x) { return size_t(x); }
  bool passed_as_bf16(Tensor x) const;
  const void* pass(Tensor x) const;
  const void* index_tensor(const std::vector<int64_t>& values,
                           const std::vector<int32_t>& narrow) const;

  static constexpr size_t kCount = size_t(Tensor::bias_gate) + 1;
  posenc_attention_desc d_;
  Sequences s_;
  std::vector<int32_t> s32_[3];  // s_ as int32, for INT32 index_type
  std::vector<float> floats_[kCount];
  Tensor source_[kCount];  // the tensor whose buffer each reads (itself unless a view)
  size_t offset_[kCount] = {};
  mutable std::vector<uint16_t> bits_[kCount];
};

// The desc on one line, for failure messages: every field (those of other
// kinds 0), the strides under STRIDED, the scale to its last digit (so that
// two descs with the same line are the same desc).
std::string describe(const posenc_attention_desc& d);
// The call on one line: its desc, the per-sequence values, and for ALiBi
// whether slopes are given.
std::string describe(const AttentionTensors& call);

// Runs the call into a guarded out (a status other than OK or a write past
// out fails the test), with a workspace of the size
// posenc_attention_workspace_size gives or NULL (posenc allocates), and
// returns out as floats, dense [batch, heads, q_len, value_head_dim] (a
// STRIDED one gathered from its rows).
std::vector<float> run(posenc_context* context, const AttentionTensors& call, bool asked_workspace);
// The same with `tensors` in place of call.tensors() (its out is not used):
// the call's, some of them replaced.
std::vector<float> run(posenc_context* context, const AttentionTensors& call,
                       posenc_attention_tensors tensors, bool asked_workspace);

// got, the call's output, against want, its double reference: within atol +
// rtol |want| in fp32; in bf16 (dtype or out_dtype) as bf16_attention_close.
::testing::AssertionResult close_to_reference(const std::vector<float>& got,
                                              const std::vector<double>& want,
                                              const AttentionTensors& call, double atol,
                                              double rtol);

// Whether run gives the same bits on contexts of 1, 2 and 3 threads of ISA
// path `isa` (with workspaces asked for).
::testing::AssertionResult same_bits_at_1_to_3_threads(posenc_isa isa,
                                                       const AttentionTensors& call);

}  // namespace posenc::test
