#include "api/attention_layout.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <utility>

#include "api/validate.hpp"
#include "ops/attention/problem.hpp"
#include "runtime/dtype.hpp"

namespace posenc {
namespace {

// One of the four tensors as the layout checks see it.
struct Tensor {
  const posenc_token_strides& strides;
  int64_t heads, tokens;
  int64_t row;           // elements of a row: head_dim, or value_head_dim for v and out
  const char* row_name;  // "desc->head_dim" or "desc->value_head_dim"
  size_t element_bytes;
  const char* field;   // of its strides, "desc->q_strides"
  const char* tensor;  // "tensors->q (desc->batch * desc->heads * ..)": its dense size
  bool gemm_operand;   // q, k, v: the token stride is a GEMM's row stride
};

std::string member(const char* field, const char* name) {
  return std::string(field) + "." + name;
}

bool all_zero(const posenc_token_strides& s) {
  return s.batch == 0 && s.head == 0 && s.token == 0;
}

// BHTD and BTHD: the dense product.
int64_t dense_extent(const posenc_attention_desc& d, const Tensor& t) {
  if (!all_zero(t.strides)) {
    invalid(std::string(t.field) + " must be zero unless desc->layout is STRIDED");
  }
  return checked_bytes({d.batch, t.heads, t.tokens, t.row}, t.element_bytes, t.tensor) /
         int64_t(t.element_bytes);
}

// STRIDED: the last row's offset plus the row's elements (0 without rows).
int64_t strided_extent(const posenc_attention_desc& d, const Tensor& t) {
  const std::array<std::pair<int64_t, int64_t>, 3> dims{
      {{d.batch, t.strides.batch}, {t.heads, t.strides.head}, {t.tokens, t.strides.token}}};
  const char* names[] = {"batch", "head", "token"};
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].second < 0) {  // (the name is made only then: a call allocates nothing)
      invalid(member(t.field, names[i]) + " must be >= 0 (got " +
              std::to_string(dims[i].second) + ")");
    }
  }
  checked_bytes({t.row}, t.element_bytes, t.tensor);  // a row fits, with rows or without
  if (d.batch == 0 || t.heads == 0 || t.tokens == 0) return 0;
  if (t.gemm_operand && t.tokens > 1 && t.strides.token < t.row) {
    invalid(member(t.field, "token") + " (" + std::to_string(t.strides.token) +
            ") must be at least " + t.row_name + " (" + std::to_string(t.row) +
            ") when there is more than one token: it is the row stride of a GEMM");
  }
  int64_t extent = t.row;
  for (const auto& [count, stride] : dims) {
    extent = checked_sum(extent, checked_bytes({count - 1, stride}, 1, t.field), t.field);
  }
  checked_bytes({extent}, t.element_bytes, t.field);
  return extent;
}

// out's elements, as (stride, count) per dimension, are all distinct if,
// smallest stride first, each stride passes the largest offset the smaller
// dimensions reach (the usual sufficient test; dimensions of one element
// place nothing).
void require_rows_disjoint(const posenc_attention_desc& d, int64_t row) {
  const posenc_token_strides& s = d.out_strides;
  std::array<std::pair<int64_t, int64_t>, 4> dims{
      {{1, row}, {s.token, d.q_len}, {s.head, d.heads}, {s.batch, d.batch}}};
  // (Sorted in place: std::stable_sort would allocate. Ties may go either
  // way: dimensions of equal stride and more than one element overlap.)
  std::sort(dims.begin(), dims.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  int64_t reach = 0;  // bounded by out's extent, which fits
  for (const auto& [stride, count] : dims) {
    if (count == 1) continue;
    if (stride <= reach) {
      fail(POSENC_ERROR_ALIASING,
           "desc->out_strides: rows of tensors->out overlap each other (sorted by stride, "
           "each stride must pass the elements the smaller ones reach)");
    }
    reach += (count - 1) * stride;
  }
}

}  // namespace

AttentionExtents validate_attention_layout(const posenc_attention_desc& d) {
  // (k's heads divide q's: with no heads, kv_heads is 0.)
  if (d.kv_heads < 0 || (d.kv_heads > 0 && (d.heads % d.kv_heads != 0 || d.kv_heads > d.heads))) {
    invalid("desc->kv_heads must be 0 or a divisor of desc->heads (" + std::to_string(d.heads) +
            "; got " + std::to_string(d.kv_heads) + ")");
  }
  const int64_t kv_heads = ops::key_value_heads(d);
  // v's and out's rows: value_head_dim elements, named so when it is set.
  const bool value_dim = d.value_head_dim != 0;
  const int64_t value_row = ops::value_head_dim(d);
  const char* value_name = value_dim ? "desc->value_head_dim" : "desc->head_dim";
  const size_t es = dtype_bytes(d.dtype), out_es = dtype_bytes(d.out_dtype);
  const Tensor tensors[] = {
      {d.q_strides, d.heads, d.q_len, d.head_dim, "desc->head_dim", es, "desc->q_strides",
       "tensors->q (desc->batch * desc->heads * desc->q_len * desc->head_dim)", true},
      {d.k_strides, kv_heads, d.kv_len, d.head_dim, "desc->head_dim", es, "desc->k_strides",
       "tensors->k (desc->batch * desc->kv_heads * desc->kv_len * desc->head_dim)", true},
      {d.v_strides, kv_heads, d.kv_len, value_row, value_name, es, "desc->v_strides",
       value_dim
           ? "tensors->v (desc->batch * desc->kv_heads * desc->kv_len * desc->value_head_dim)"
           : "tensors->v (desc->batch * desc->kv_heads * desc->kv_len * desc->head_dim)",
       true},
      {d.out_strides, d.heads, d.q_len, value_row, value_name, out_es, "desc->out_strides",
       value_dim ? "tensors->out (desc->batch * desc->heads * desc->q_len * desc->value_head_dim)"
                 : "tensors->out (desc->batch * desc->heads * desc->q_len * desc->head_dim)",
       false}};
  int64_t extents[4];
  for (int i = 0; i < 4; ++i) {
    extents[i] = d.layout == POSENC_LAYOUT_STRIDED ? strided_extent(d, tensors[i])
                                                   : dense_extent(d, tensors[i]);
  }
  // (out without rows overlaps nothing.)
  if (d.layout == POSENC_LAYOUT_STRIDED && extents[3] > 0) require_rows_disjoint(d, value_row);
  return AttentionExtents{extents[0], extents[1], extents[2], extents[3]};
}

}  // namespace posenc
