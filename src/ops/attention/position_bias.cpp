#include "ops/attention/position_bias.hpp"

#include <algorithm>

#include "ops/bias/alibi_slopes.hpp"
#include "posenc/core.h"
#include "runtime/checked_size.hpp"
#include "runtime/dtype.hpp"

namespace posenc::ops {
namespace {

// K: the distance past which the kind's value no longer changes (TABLE_1D's
// clipping, T5's last bucket).
int64_t line_limit(const AttentionProblem& p) { return p.max_distance; }

// L: the distances [-L, L] the line holds.
int64_t line_reach(const AttentionProblem& p) {
  return std::min(line_limit(p), p.q_len + p.kv_len);
}

Window2d window_of(const AttentionProblem& p) {
  return Window2d{p.map_height, p.map_width, p.class_token};
}

// Whether a TABLE_2D bias is expanded once per call to [heads, N, N] (N the
// window's tokens): when several batch items (windows) share it and it is
// small, as Swin's and BEiT's are. Each row's bias is then one contiguous
// run; else window_row copies a row's Wh runs of Ww entries into a stage
// for each of its blocks (which for Swin's 7x7 windows cost more than the
// row's share of its small GEMMs).
constexpr int64_t kMaxExpandedFloats = int64_t(1) << 20;
bool expands_window(const AttentionProblem& p) {
  // (q_len first: q_len * q_len * heads can overflow for a valid desc.)
  return p.bias == POSENC_BIAS_TABLE_2D && p.batch > 1 && p.q_len <= 1024 &&
         p.heads <= kMaxExpandedFloats / (p.q_len * p.q_len);
}

}  // namespace

bool is_position_bias(posenc_attention_bias bias) {
  return bias == POSENC_BIAS_TABLE_2D || bias == POSENC_BIAS_TABLE_1D ||
         bias == POSENC_BIAS_T5 || bias == POSENC_BIAS_ALIBI;
}

bool takes_bias_gate(posenc_attention_bias bias) {
  return bias == POSENC_BIAS_TABLE_1D || bias == POSENC_BIAS_T5 || bias == POSENC_BIAS_ALIBI;
}

int64_t PositionBias::prepared_floats(const AttentionProblem& p) {
  switch (p.bias) {
    case POSENC_BIAS_TABLE_2D:
      return p.heads * window_of(p).table_rows() +
             (expands_window(p) ? p.heads * p.q_len * p.q_len : 0);
    case POSENC_BIAS_TABLE_1D:
    case POSENC_BIAS_T5:
      // (line_reach is at most q_len + kv_len, which validation bounds;
      // heads is not, where a strided layout repeats q's rows.)
      return checked_count_product(p.heads, 2 * line_reach(p) + 1,
                                   "desc->heads x the bias's distances");
    case POSENC_BIAS_ALIBI:
      return p.heads;
    default:
      return 0;
  }
}

void PositionBias::prepare(const AttentionProblem& p, const void* table,
                           const KernelTable& kernels, float* prepared) {
  const float alpha = p.mask_alpha;
  const int64_t heads = p.heads;
  switch (p.bias) {
    case POSENC_BIAS_TABLE_2D: {  // table [rows, heads]
      const Window2d window = window_of(p);
      const int64_t rows = window.table_rows();
      auto entry = [&](int64_t k) { return alpha * element_as_f32(table, p.dtype, k); };
      window_entries(window, heads, entry, prepared);
      if (expands_window(p)) {
        float* expanded = prepared + heads * rows;
        const int64_t n = p.q_len;
        for (int64_t h = 0; h < heads; ++h) {
          for (int64_t i = 0; i < n; ++i) {
            write_window_row(window, prepared + h * rows, i, expanded + (h * n + i) * n,
                             kernels.position_bias.copy_runs);
          }
        }
      }
      break;
    }
    case POSENC_BIAS_TABLE_1D: {  // table [heads, 2K+1]
      const int64_t K = line_limit(p), L = line_reach(p), width = 2 * L + 1;
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t k = 0; k < width; ++k) {
          prepared[h * width + k] =
              alpha * element_as_f32(table, p.dtype, h * (2 * K + 1) + k - L + K);
        }
      }
      break;
    }
    case POSENC_BIAS_T5: {  // table [num_buckets, heads]
      const int64_t L = line_reach(p), width = 2 * L + 1;
      const T5Buckets buckets{p.num_buckets, p.max_distance, p.bidirectional};
      for (int64_t k = 0; k < width; ++k) {
        const int64_t bucket = buckets.bucket(k - L);
        for (int64_t h = 0; h < heads; ++h) {
          prepared[h * width + k] = alpha * element_as_f32(table, p.dtype, bucket * heads + h);
        }
      }
      break;
    }
    case POSENC_BIAS_ALIBI:
      for (int64_t h = 0; h < heads; ++h) {
        prepared[h] =
            alpha * (table != nullptr ? element_as_f32(table, p.dtype, h) : alibi_slope(h, heads));
      }
      break;
    default:
      break;
  }
}

PositionBias::PositionBias(const AttentionProblem& p, const void* table,
                           const KernelTable& kernels, const float* prepared)
    : p_(p), kernels_(kernels), table_(table), prepared_(prepared), window_(window_of(p)),
      stride_(0), buckets_{p.num_buckets, p.max_distance, p.bidirectional}, line_{},
      line_has_ends_(false) {
  if (p.bias == POSENC_BIAS_TABLE_2D) {
    stride_ = window_.table_rows();
    if (expands_window(p)) expanded_ = prepared + p.heads * stride_;
  }
  if (p.bias == POSENC_BIAS_TABLE_1D || p.bias == POSENC_BIAS_T5) {
    const int64_t L = line_reach(p);
    stride_ = 2 * L + 1;
    line_ = DistanceLine{prepared, stride_, -L, L};
    line_has_ends_ = L == line_limit(p);
  }
}

const float* PositionBias::window_row(int64_t h, int64_t i, int64_t first_key, int64_t count,
                                     float* stage) const {
  if (expanded_ != nullptr) return expanded_ + (h * p_.q_len + i) * p_.q_len + first_key;
  if (first_key != 0 || count != p_.kv_len || count > kStageFloats) return nullptr;
  write_window_row(window_, prepared_ + h * stride_, i, stage, kernels_.position_bias.copy_runs);
  return stage;
}

float PositionBias::add_row(int64_t h, int64_t i, int64_t query_pos, int64_t first_key,
                            int64_t count, float gate, float* row) const {
  const int64_t d0 = first_key - query_pos;
  switch (p_.bias) {
    case POSENC_BIAS_TABLE_2D:
      return add_window_row(window_, prepared_ + h * stride_, i, first_key, count, row,
                            kernels_.position_bias.add_runs);
    case POSENC_BIAS_ALIBI:
      return kernels_.position_bias.add_alibi_row(gate * prepared_[h], p_.bidirectional, d0, row,
                                                  count);
    default:
      return add_row_line(h, d0, count, gate, row);
  }
}

float PositionBias::add_row_line(int64_t h, int64_t d0, int64_t count, float gate,
                                 float* row) const {
  // value(h, d) = line[clamp(d - lo, 0, hi - lo)]
  const float* line = line_.values + h * line_.stride;
  const auto& k = kernels_.attention_bias;
  if (line_has_ends_) {
    return k.gather_add(line, d0 - line_.lo, 0, line_.hi - line_.lo, gate, row, count);
  }
  // Distances below -L for c < lo, within the line for c < hi, above after.
  const int64_t lo = std::clamp(line_.lo - d0, int64_t(0), count);
  const int64_t hi = std::clamp(line_.hi - d0 + 1, lo, count);
  for (int64_t c = 0; c < lo; ++c) row[c] += gate * far_value(h, d0 + c);
  for (int64_t c = hi; c < count; ++c) row[c] += gate * far_value(h, d0 + c);
  const float line_max =
      k.gather_add(line, d0 + lo - line_.lo, 0, line_.hi - line_.lo, gate, row + lo, hi - lo);
  return std::max({line_max, k.max_of(row, lo), k.max_of(row + hi, count - hi)});
}

float PositionBias::far_value(int64_t h, int64_t d) const {
  // As prepare() computes the line's values, so a distance gets the same
  // bits either way.
  if (p_.bias == POSENC_BIAS_T5) {
    return p_.mask_alpha * element_as_f32(table_, p_.dtype, buckets_.bucket(d) * p_.heads + h);
  }
  const int64_t K = line_limit(p_);
  const int64_t entry = h * (2 * K + 1) + std::clamp(d, -K, K) + K;
  return p_.mask_alpha * element_as_f32(table_, p_.dtype, entry);
}

}  // namespace posenc::ops
