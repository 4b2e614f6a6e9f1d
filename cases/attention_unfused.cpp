#include "cases/attention_unfused.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "cases/timing/machine.hpp"
#include "ops/attention/position_bias.hpp"
#include "ops/bias/attention_bias_desc.hpp"
#include "ops/relative/disentangled_index.hpp"
#include "posenc/bias.h"
#include "runtime/context.hpp"
#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"

namespace posenc::cases {
namespace {

// c[b] = alpha * a[b] x b[b]^T (or x b[b] without transpose) for `batch`
// row-major matrices, through posenc's oneDNN matmul.
void gemm(int64_t batch, int64_t m, int64_t n, int64_t k, const float* a, const float* b,
          bool transpose_b, float alpha, float* c) {
  MatmulShape s;
  s.batch = batch;
  s.m = m;
  s.n = n;
  s.k = k;
  s.lda = k;
  s.ldb = transpose_b ? k : n;
  s.ldc = n;
  s.batch_stride_a = m * k;
  s.batch_stride_b = 0;
  s.batch_stride_c = m * n;
  s.transpose_b = transpose_b;
  s.alpha = alpha;
  // One GEMM at a time, as PyTorch code runs it.
  s.onednn_threads = onednn_team_threads(op_threads());
  matmul(s, a, b, c);
}

// rel_to_abs on `groups` matrices [L, 2L-1]: pad a zero column ([L, 2L]),
// flatten and pad L-1 zeros, view as [L+1, 2L-1], keep [:L, L-1:]. Each
// step is a copy, as in PyTorch code. Result in `out` as [groups, L, L].
void skew(const ExecContext& ctx, int64_t groups, int64_t L, const float* logits,
          float* padded, float* flat_padded, float* out) {
  const int64_t w = 2 * L - 1, flat = 2 * L * L + L - 1;
  parallel_for(ctx.num_threads, groups * L, [&](int64_t gi) {  // pad a column
    float* p = padded + gi * 2 * L;
    std::memcpy(p, logits + gi * w, size_t(w) * sizeof(float));
    p[w] = 0.0f;
  });
  parallel_for(ctx.num_threads, groups * L, [&](int64_t gi) {  // flatten, pad L-1
    const int64_t g = gi / L, i = gi % L;
    float* f = flat_padded + g * flat;
    std::memcpy(f + i * 2 * L, padded + gi * 2 * L, size_t(2 * L) * sizeof(float));
    if (i == L - 1) std::fill(f + 2 * L * L, f + flat, 0.0f);
  });
  parallel_for(ctx.num_threads, groups * L, [&](int64_t gi) {  // reshape, slice
    const int64_t g = gi / L, i = gi % L;
    std::memcpy(out + gi * L, flat_padded + g * flat + i * w + L - 1, size_t(L) * sizeof(float));
  });
}

}  // namespace

bool UnfusedAttention::applies(const posenc_attention_desc& d) {
  const bool disentangled = d.bias == POSENC_BIAS_DISENTANGLED;
  if (d.dtype != POSENC_F32 || d.layout != POSENC_LAYOUT_BHTD ||
      (d.tables_per_head && !disentangled) ||
      d.relative_values || d.q_len != d.kv_len || d.query_offset != 0 || d.sliding_window != 0 ||
      d.sinks || d.softcap > 0 || d.relative_query_bias ||
      (d.kv_heads != 0 && d.kv_heads != d.heads)) {
    return false;
  }
  if (d.value_head_dim != 0 && d.value_head_dim != d.head_dim) return false;
  if (ops::is_position_bias(d.bias)) {
    return d.mask_batch == 0 || (d.mask_q_len == d.q_len && d.mask_dtype == POSENC_F32);
  }
  const bool plain_1d = d.bias == POSENC_BIAS_RELATIVE_1D && d.max_distance == 0;
  // The 2D way is posenc's order on one map (not SAM's conventions).
  const bool plain_2d = d.bias == POSENC_BIAS_RELATIVE_2D &&
                        d.relative_order == POSENC_RELATIVE_KEY_MINUS_QUERY && d.kv_map_height == 0;
  return !d.causal && d.mask_batch == 0 && (plain_1d || plain_2d || disentangled);
}

UnfusedAttention::UnfusedAttention(const posenc_attention_desc& desc) : d_(desc) {
  const size_t n = size_t(d_.q_len);
  scores_.resize(n * n);
  if (ops::is_position_bias(d_.bias)) {
    dense_bias_.resize(size_t(d_.heads) * n * n);
  } else if (d_.bias == POSENC_BIAS_DISENTANGLED) {
    const DisentangledIndex index = disentangled_index(d_.num_buckets, d_.max_distance);
    logits_.resize(n * size_t(index.rows()));
    key_logits_.resize(n * size_t(index.rows()));
    pair_rows_.resize(n * n);
    for (int64_t i = 0; i < d_.q_len; ++i) {
      for (int64_t j = 0; j < d_.q_len; ++j) {
        pair_rows_[size_t(i) * n + size_t(j)] = int32_t(index.row(i - j));
      }
    }
  } else if (d_.bias == POSENC_BIAS_RELATIVE_1D) {
    logits_.resize(n * (2 * n - 1));
    padded_.resize(n * 2 * n);
    flat_padded_.resize(2 * n * n + n - 1);
    skewed_.resize(n * n);
  } else {
    const size_t x = size_t(d_.map_height), y = size_t(d_.map_width);
    logits_.resize(n * (2 * std::max(x, y) - 1));
    padded_.resize(n * 2 * std::max(x, y));
    flat_padded_.resize(std::max(x, y) * (2 * n + std::max(x, y)));
    skewed_.resize(x * y * y);
    skewed_h_.resize(y * x * x);
    q_t_.resize(n * size_t(d_.head_dim));
  }
}

void UnfusedAttention::relative_1d(const ExecContext& ctx, const float* q, const float* table) {
  const int64_t n = d_.q_len, d = d_.head_dim;
  gemm(1, n, 2 * n - 1, d, q, table, true, d_.scale, logits_.data());
  skew(ctx, 1, n, logits_.data(), padded_.data(), flat_padded_.data(), skewed_.data());
  parallel_for(ctx.num_threads, n, [&](int64_t i) {
    float* row = &scores_[size_t(i * n)];
    ctx.kernels->elementwise.add_f32(row, &skewed_[size_t(i * n)], row, n);
  });
}

void UnfusedAttention::relative_2d(const ExecContext& ctx, const float* q, const float* table_h,
                                   const float* table_w) {
  const int64_t X = d_.map_height, Y = d_.map_width, n = X * Y, d = d_.head_dim;
  // Along the width: q as [X, Y, d] against Rw, skewed per row x.
  gemm(1, n, 2 * Y - 1, d, q, table_w, true, d_.scale, logits_.data());
  skew(ctx, X, Y, logits_.data(), padded_.data(), flat_padded_.data(), skewed_.data());
  // Along the height: q transposed to [Y, X, d] against Rh, skewed per y.
  for (int64_t x = 0; x < X; ++x) {
    for (int64_t y = 0; y < Y; ++y) {
      std::memcpy(&q_t_[size_t((y * X + x) * d)], q + (x * Y + y) * d, size_t(d) * sizeof(float));
    }
  }
  gemm(1, n, 2 * X - 1, d, q_t_.data(), table_h, true, d_.scale, logits_.data());
  skew(ctx, Y, X, logits_.data(), padded_.data(), flat_padded_.data(), skewed_h_.data());
  // The expanded sum: bias[(x1,y1),(x2,y2)] = w[x1,y1,y2] + h[y1,x1,x2].
  parallel_for(ctx.num_threads, n, [&](int64_t i) {
    const int64_t x1 = i / Y, y1 = i % Y;
    float* row = &scores_[size_t(i * n)];
    const float* w = &skewed_[size_t((x1 * Y + y1) * Y)];
    const float* h = &skewed_h_[size_t((y1 * X + x1) * X)];
    for (int64_t x2 = 0; x2 < X; ++x2) {
      for (int64_t y2 = 0; y2 < Y; ++y2) row[x2 * Y + y2] += w[y2] + h[x2];
    }
  });
}

// q's logits (c2p) and k's (p2c) against head h's tables, each pair's
// gathered into the scores.
void UnfusedAttention::disentangled(const ExecContext& ctx, int64_t h, const float* q,
                                    const float* k, const posenc_attention_tensors& t) {
  const int64_t n = d_.q_len, d = d_.head_dim;
  const int64_t rows = disentangled_index(d_.num_buckets, d_.max_distance).rows();
  const float alpha = d_.bias_uses_scaled_q ? d_.scale : 1.0f;
  const float* table = static_cast<const float*>(t.table) + h * rows * d;
  const float* key_table = static_cast<const float*>(t.key_table) + h * rows * d;
  gemm(1, n, rows, d, q, table, true, alpha, logits_.data());
  gemm(1, n, rows, d, k, key_table, true, alpha, key_logits_.data());
  parallel_for(ctx.num_threads, n, [&](int64_t i) {
    float* row = &scores_[size_t(i * n)];
    const int32_t* pair_rows = &pair_rows_[size_t(i * n)];
    for (int64_t j = 0; j < n; ++j) {
      row[j] += logits_[size_t(i * rows + pair_rows[j])] +
                key_logits_[size_t(j * rows + pair_rows[j])];
    }
  });
}

// The head's slice of the dense bias (each row times its gate, as WavLM's
// gate_output * position_bias), then the mask, added to the scores.
void UnfusedAttention::add_position_bias(const ExecContext& ctx, int64_t b, int64_t h,
                                         const posenc_attention_tensors& t) {
  const int64_t n = d_.q_len;
  const float* bias = &dense_bias_[size_t(h * n * n)];
  const float* gates =
      d_.bias_gate ? static_cast<const float*>(t.bias_gate) + (b * d_.heads + h) * n : nullptr;
  const float* mask = nullptr;
  if (d_.mask_batch > 0) {
    mask = static_cast<const float*>(t.mask) +
           ((b % d_.mask_batch) * d_.mask_heads + (d_.mask_heads == 1 ? 0 : h)) * n * n;
  }
  parallel_for(ctx.num_threads, n, [&](int64_t i) {
    float* row = &scores_[size_t(i * n)];
    if (gates != nullptr) {
      for (int64_t j = 0; j < n; ++j) row[j] += gates[i] * bias[i * n + j];
    } else {
      ctx.kernels->elementwise.add_f32(row, bias + i * n, row, n);
    }
    if (mask != nullptr) ctx.kernels->elementwise.add_f32(row, mask + i * n, row, n);
  });
}

void UnfusedAttention::run(posenc_context* context, const posenc_attention_tensors& t) {
  const ExecContext ctx = resolve_context(context);
  const int64_t n = d_.q_len, d = d_.head_dim;
  if (ops::is_position_bias(d_.bias)) {  // once per call, shared by the batch
    const posenc_position_bias_desc pd = ops::position_bias_desc_of(d_, d_.query_offset);
    posenc_position_bias(context, &pd, static_cast<const float*>(t.table), dense_bias_.data());
  }
  for (int64_t bh = 0; bh < d_.batch * d_.heads; ++bh) {
    const float* q = static_cast<const float*>(t.q) + bh * n * d;
    const float* k = static_cast<const float*>(t.k) + bh * n * d;
    const float* v = static_cast<const float*>(t.v) + bh * n * d;
    gemm(1, n, n, d, q, k, true, d_.scale, scores_.data());
    if (ops::is_position_bias(d_.bias)) {
      add_position_bias(ctx, bh / d_.heads, bh % d_.heads, t);
    } else if (d_.bias == POSENC_BIAS_DISENTANGLED) {
      disentangled(ctx, bh % d_.heads, q, k, t);
    } else if (d_.bias == POSENC_BIAS_RELATIVE_1D) {
      relative_1d(ctx, q, static_cast<const float*>(t.table));
    } else {
      relative_2d(ctx, q, static_cast<const float*>(t.table_h),
                  static_cast<const float*>(t.table_w));
    }
    parallel_for(ctx.num_threads, n, [&](int64_t i) {  // a softmax per score row
      float* row = &scores_[size_t(i * n)];
      const int64_t valid = d_.causal ? i + 1 : n;  // (causal keys zeroed)
      float row_max = -std::numeric_limits<float>::infinity(), row_sum = 0.0f;
      ctx.kernels->attention.softmax_block(row, valid, n,
                                           ctx.kernels->attention_bias.max_of(row, valid), 1.0f,
                                           &row_max, &row_sum, nullptr, {});
      ctx.kernels->attention.scale_f32(row, row_sum > 0.0f ? 1.0f / row_sum : 0.0f, row, n);
    });
    gemm(1, n, d, n, scores_.data(), v, false, 1.0f, static_cast<float*>(t.out) + bh * n * d);
  }
}

}  // namespace posenc::cases
