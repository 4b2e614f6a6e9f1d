// Fused attention (every bias kind, mask, layout, dtype, offset, relative
// values) and the BoTNet bottleneck block, each with no workspace, one of the
// size posenc asks for, one byte short of it, or one overlapping the output.
#include <algorithm>
#include <cmath>
#include <limits>

#include "checks.hpp"
#include "families.hpp"

namespace posenc::fuzz {
namespace {

posenc_dtype dtype(FuzzInput& in, int& invalid) {
  const int v = in.choice(6) % 3;  // 2 is no dtype
  if (v > 1) ++invalid;
  return posenc_dtype(v);
}

// A scale: the default, a finite one, or NaN/Inf (refused).
float scale(FuzzInput& in, float default_scale, int& invalid) {
  switch (in.choice(8)) {
    case 0: ++invalid; return std::numeric_limits<float>::quiet_NaN();
    case 1: ++invalid; return std::numeric_limits<float>::infinity();
    case 2: return -0.5f;
    default: return default_scale;
  }
}

// The workspace of a call whose output is `out`: none, the size posenc asks
// for, one byte less (refused), or `out` itself (refused). `bad` is set for
// the refused ones.
struct Workspace {
  std::vector<unsigned char> buffer;
  void* pointer = nullptr;
  size_t bytes = 0;
  bool bad = false;
};

Workspace draw_workspace(FuzzInput& in, posenc_status size_status, size_t needed,
                         std::vector<float>& out) {
  Workspace w;
  const int kind = size_status == POSENC_OK ? in.choice(4) : 0;
  if (kind == 0) return w;
  w.bytes = kind == 2 && needed > 0 ? needed - 1 : needed;
  w.bad = kind == 3 || w.bytes < needed;
  if (kind == 3) {
    w.pointer = out.data();
    w.bytes = std::max(needed, size_t(1));
  } else {
    w.buffer.resize(std::max(w.bytes, size_t(1)));
    w.pointer = w.buffer.data();
  }
  return w;
}

}  // namespace

void fuzz_attention(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.size(2, invalid), heads = in.size(3, invalid),
                head_dim = in.size(20, invalid);
  posenc_attention_desc desc;
  posenc_attention_desc_init(&desc, 1, 1, 1, 1, 1);
  desc.batch = batch;
  desc.heads = heads;
  desc.head_dim = head_dim;
  desc.bias = posenc_attention_bias(in.choice(5));
  // The map sizes are only passed (and may only be invalid) for 2D.
  const bool map = desc.bias == POSENC_BIAS_RELATIVE_2D;
  const int64_t height = map ? in.size(6, invalid) : 1 + in.byte() % 6;
  const int64_t width = map ? in.size(6, invalid) : 1 + in.byte() % 6;
  desc.causal = in.choice(3);
  desc.tables_per_head = in.choice(2);
  desc.layout = posenc_attention_layout(in.choice(3));
  desc.query_offset = int64_t(in.byte() % 16) - 4;
  desc.max_distance = in.byte() % 8;
  desc.relative_values = in.choice(2);
  desc.dtype = dtype(in, invalid);
  desc.out_dtype = dtype(in, invalid);
  desc.scale = scale(in, desc.scale, invalid);
  desc.bias_uses_scaled_q = in.choice(3);
  if (desc.bias > POSENC_BIAS_RELATIVE_2D || desc.causal > 1 || desc.layout > 1 ||
      desc.bias_uses_scaled_q > 1) {
    ++invalid;
  }
  if (desc.bias == POSENC_BIAS_RELATIVE_2D && desc.relative_values) ++invalid;
  // Tokens: a map for 2D (sometimes a mismatched one), else free lengths.
  if (desc.bias == POSENC_BIAS_RELATIVE_2D) {
    desc.map_height = height;
    desc.map_width = width;
    desc.q_len = desc.kv_len = invalid > 0 ? 1 : height * width + (in.choice(8) == 0 ? 1 : 0);
    if (invalid == 0 && desc.q_len != height * width) ++invalid;
  } else {
    desc.q_len = invalid > 0 ? 1 : height * 3;
    desc.kv_len = invalid > 0 ? 1 : width * 3;
    desc.map_height = desc.map_width = 0;
  }
  const int64_t table_heads = desc.tables_per_head ? heads : 1;
  // attention.h: 2K + 1 rows when clipped, else q_len + kv_len - 1 + max(offset, 0).
  const int64_t rows_1d =
      desc.max_distance > 0
          ? 2 * desc.max_distance + 1
          : desc.q_len + desc.kv_len - 1 + std::max<int64_t>(desc.query_offset, 0);
  const int64_t table_rows = desc.bias == POSENC_BIAS_ABSOLUTE ? desc.kv_len : rows_1d;
  // Buffers of floats, large enough for either dtype.
  const size_t qn = elements({batch, heads, desc.q_len, head_dim}, invalid);
  const size_t kvn = elements({batch, heads, desc.kv_len, head_dim}, invalid);
  std::vector<float> q(qn, 0.3f), k(kvn, -0.2f), v(kvn, 0.7f), out(qn, kUntouched);
  std::vector<float> table(elements({table_heads, table_rows, head_dim}, invalid), 0.1f);
  const int64_t h_rows = invalid > 0 ? 1 : 2 * height - 1, w_rows = invalid > 0 ? 1 : 2 * width - 1;
  std::vector<float> table_h(elements({table_heads, h_rows, head_dim}, invalid), 0.2f);
  std::vector<float> table_w(elements({table_heads, w_rows, head_dim}, invalid), 0.3f);
  std::vector<float> values(elements({table_heads, rows_1d, head_dim}, invalid), 0.4f);
  posenc_attention_tensors t{q.data(), k.data(), v.data(), nullptr, nullptr, nullptr, nullptr,
                             out.data()};
  if (desc.bias == POSENC_BIAS_ABSOLUTE || desc.bias == POSENC_BIAS_RELATIVE_1D) {
    t.table = table.data();
  } else if (desc.bias == POSENC_BIAS_RELATIVE_2D) {
    t.table_h = table_h.data();
    t.table_w = table_w.data();
  }
  if (desc.relative_values) t.value_table = values.data();
  // A pointer the desc does not use, a required one missing, or no tensors.
  const int pointers = in.choice(16);
  if (pointers == 0) t.value_table = desc.relative_values ? nullptr : values.data();
  if (pointers == 1) t.v = nullptr;
  const posenc_attention_tensors* tensors = pointers == 2 ? nullptr : &t;
  size_t needed = 0;
  const posenc_status size_status = posenc_attention_workspace_size(context.get(), &desc, &needed);
  if (invalid > 0) expect_outcome(size_status, true, {});
  const Workspace w = draw_workspace(in, size_status, needed, out);
  const posenc_status status = posenc_attention(context.get(), &desc, tensors, w.pointer, w.bytes);
  // Other refusals (an offset the causal mask cannot use, bf16 without a
  // oneDNN bf16 GEMM) leave the output untouched.
  expect_refusal_if(status, invalid > 0 || pointers <= 2 || w.bad, out);
}

void fuzz_bottleneck(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  // (Named first: the order in which arguments are evaluated is unspecified.)
  const int64_t batch = in.size(2, invalid), channels = in.size(12, invalid),
                height = in.size(6, invalid), width = in.size(6, invalid),
                heads = in.size(3, invalid), head_dim = in.size(8, invalid);
  posenc_bottleneck_desc desc;
  posenc_bottleneck_desc_init(&desc, batch, channels, height, width, heads, head_dim);
  desc.dtype = dtype(in, invalid);
  desc.out_dtype = dtype(in, invalid);
  desc.scale = scale(in, desc.scale, invalid);
  desc.tables_per_head = in.choice(3);
  if (desc.tables_per_head > 1) ++invalid;
  desc.bias_uses_scaled_q = in.choice(3);
  if (desc.bias_uses_scaled_q > 1) ++invalid;
  desc.stride = in.choice(4);  // 0 and 3 are refused, 2 on a map under 2x2 too
  if (desc.stride != 1 && (desc.stride != 2 || height < 2 || width < 2)) ++invalid;
  desc.value_head_dim = in.choice(8) == 0 ? 9 : 0;  // > head_dim: not implemented
  if (desc.value_head_dim != 0) ++invalid;
  // Derived sizes only of valid ones (invalid sizes may overflow them).
  const bool valid = invalid == 0;
  const int64_t table_heads = desc.tables_per_head && valid ? desc.heads : 1;
  const int64_t inner = valid ? desc.heads * desc.head_dim : 1;
  const int64_t h_rows = valid ? 2 * desc.height - 1 : 1, w_rows = valid ? 2 * desc.width - 1 : 1;
  const int64_t pool = valid ? desc.stride : 1;
  std::vector<float> fmap(
      elements({desc.batch, desc.channels, desc.height, desc.width}, invalid), 0.5f);
  std::vector<float> w_qkv(elements({3 * inner, desc.channels}, invalid), 0.1f);
  std::vector<float> qkv_bias(elements({3 * inner}, invalid), 0.3f);
  std::vector<float> rel_h(elements({table_heads, h_rows, desc.head_dim}, invalid), 0.2f);
  std::vector<float> rel_w(elements({table_heads, w_rows, desc.head_dim}, invalid), -0.2f);
  std::vector<float> out(
      elements({desc.batch, inner, desc.height / pool, desc.width / pool}, invalid), kUntouched);
  const bool null_fmap = in.choice(16) == 0, with_bias = in.choice(2) == 0;
  size_t needed = 0;
  const posenc_status size_status =
      posenc_bottleneck_workspace_size(context.get(), &desc, &needed);
  if (invalid > 0) expect_outcome(size_status, true, {});
  const Workspace w = draw_workspace(in, size_status, needed, out);
  const posenc_bottleneck_tensors tensors{null_fmap ? nullptr : fmap.data(), w_qkv.data(),
                                          with_bias ? qkv_bias.data() : nullptr,
                                          rel_h.data(), rel_w.data(), out.data()};
  const posenc_status status = posenc_bottleneck(context.get(), &desc, &tensors, w.pointer,
                                                 w.bytes);
  expect_refusal_if(status, invalid > 0 || null_fmap || w.bad, out);
}

}  // namespace posenc::fuzz
