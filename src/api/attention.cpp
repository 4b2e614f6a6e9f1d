// C ABI: fused attention and the bottleneck block. Validation here; the work
// in ops/attention/attention.cpp and ops/attention/bottleneck.cpp.
#include <array>
#include <cmath>
#include <initializer_list>
#include <string>

#include "api/guard.hpp"
#include "api/validate.hpp"
#include "ops/attention/attention.hpp"
#include "ops/attention/plan.hpp"
#include "ops/attention/bottleneck.hpp"
#include "ops/relative/relative_index.hpp"
#include "posenc/attention.h"
#include "runtime/matmul.hpp"
#include "runtime/dtype.hpp"

using namespace posenc;

namespace {

constexpr int64_t kMaxOffset = int64_t(1) << 40;

void require_bf16_gemm(posenc_dtype dtype) {
  if (dtype != POSENC_BF16) return;
  // Asked once: after oneDNN's first primitive its ISA can no longer change.
  static const bool supported = std::string(onednn_matmul_impl(POSENC_BF16)) != "unsupported";
  if (!supported) {
    fail(POSENC_ERROR_UNSUPPORTED, "dtype: oneDNN has no bf16 GEMM on this CPU");
  }
}

// A tensor the call reads: its address and size, for the aliasing checks.
struct Region {
  const void* pointer;
  int64_t bytes;
  const char* name;
};

// The input regions of a call, at most six: kept without allocating.
class Regions {
 public:
  Regions(std::initializer_list<Region> regions) {
    for (const Region& r : regions) push_back(r);
  }
  void push_back(const Region& r) { items_.at(count_++) = r; }
  const Region* begin() const { return items_.data(); }
  const Region* end() const { return items_.data() + count_; }

 private:
  std::array<Region, 6> items_{};
  size_t count_ = 0;
};

// Checks everything in the desc, returns the rows of the 1D relative table
// (0 when unused).
int64_t validate_desc(const posenc_attention_desc& d) {
  require_positive(d.batch, "desc->batch");
  require_positive(d.heads, "desc->heads");
  require_positive(d.q_len, "desc->q_len");
  require_positive(d.kv_len, "desc->kv_len");
  require_positive(d.head_dim, "desc->head_dim");
  require_enum(d.layout, "desc->layout", {POSENC_LAYOUT_BHTD, POSENC_LAYOUT_BTHD});
  require_dtype(d.dtype, "desc->dtype");
  require_dtype(d.out_dtype, "desc->out_dtype");
  require_finite(d.scale, "desc->scale");
  require_flag(d.causal, "desc->causal");
  require_flag(d.tables_per_head, "desc->tables_per_head");
  require_flag(d.bias_uses_scaled_q, "desc->bias_uses_scaled_q");
  require_flag(d.relative_values, "desc->relative_values");
  if (d.query_offset < -kMaxOffset || d.query_offset > kMaxOffset) {
    invalid("desc->query_offset must be within +-2^40 (got " + std::to_string(d.query_offset) +
            ")");
  }
  if (d.max_distance < 0 || d.max_distance > kMaxOffset) {
    invalid("desc->max_distance must be in [0, 2^40] (got " + std::to_string(d.max_distance) +
            ")");
  }
  require_enum(d.bias, "desc->bias",
               {POSENC_BIAS_NONE, POSENC_BIAS_ABSOLUTE, POSENC_BIAS_RELATIVE_1D,
                POSENC_BIAS_RELATIVE_2D});
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    require_positive(d.map_height, "desc->map_height");
    require_positive(d.map_width, "desc->map_width");
    // (Divided, not multiplied: the product could overflow.)
    if (d.q_len % d.map_width != 0 || d.map_height != d.q_len / d.map_width ||
        d.q_len != d.kv_len) {
      fail(POSENC_ERROR_SHAPE_MISMATCH,
           "desc->map_height * desc->map_width (" + std::to_string(d.map_height) + " x " +
               std::to_string(d.map_width) + ") must equal q_len and kv_len (" +
               std::to_string(d.q_len) + ", " + std::to_string(d.kv_len) + ")");
    }
    if (d.relative_values) {
      invalid("desc->relative_values is not available with RELATIVE_2D bias");
    }
  }
  if (d.kv_heads != 0 && d.kv_heads != d.heads) {
    fail(POSENC_ERROR_UNSUPPORTED, "desc->kv_heads: grouped kv heads are not implemented yet");
  }
  if (d.mask_batch != 0) {
    fail(POSENC_ERROR_UNSUPPORTED, "desc->mask_batch: masks are not implemented yet");
  }
  // Bounds the workspace sizes (which grow with q_len + kv_len) and the 1D
  // table's rows.
  checked_bytes({d.q_len, 2}, size_t(1) << 24, "desc->q_len + desc->kv_len");
  checked_bytes({d.kv_len, 2}, size_t(1) << 24, "desc->q_len + desc->kv_len");
  const bool relative_1d = d.bias == POSENC_BIAS_RELATIVE_1D || d.relative_values;
  if (!relative_1d) return 0;
  return relative_index(d.query_offset, d.q_len, d.kv_len, d.max_distance).rows;
}

// Checks the tensors against the desc and returns the regions they cover.
Regions validate_tensors(const posenc_attention_desc& d,
                                     const posenc_attention_tensors& t, int64_t relative_rows) {
  const size_t es = dtype_bytes(d.dtype);
  require_tensor(t.q, es, "tensors->q");
  require_tensor(t.k, es, "tensors->k");
  require_tensor(t.v, es, "tensors->v");
  require_tensor(t.out, dtype_bytes(d.out_dtype), "tensors->out");
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  Regions inputs{
      {t.q, checked_bytes({d.batch, d.heads, d.q_len, d.head_dim}, es, "tensors->q"), "tensors->q"},
      {t.k, checked_bytes({d.batch, d.heads, d.kv_len, d.head_dim}, es, "tensors->k"), "tensors->k"},
      {t.v, checked_bytes({d.batch, d.heads, d.kv_len, d.head_dim}, es, "tensors->v"), "tensors->v"}};
  auto table = [&](const void* pointer, const char* name, int64_t rows) {
    require_tensor(pointer, es, name);
    inputs.push_back({pointer, checked_bytes({heads, rows, d.head_dim}, es, name), name});
  };
  switch (d.bias) {
    case POSENC_BIAS_ABSOLUTE:
      table(t.table, "tensors->table", d.kv_len);
      break;
    case POSENC_BIAS_RELATIVE_1D:
      table(t.table, "tensors->table", relative_rows);
      break;
    case POSENC_BIAS_RELATIVE_2D:
      table(t.table_h, "tensors->table_h", 2 * d.map_height - 1);
      table(t.table_w, "tensors->table_w", 2 * d.map_width - 1);
      break;
    default:
      break;
  }
  const bool uses_table = d.bias == POSENC_BIAS_ABSOLUTE || d.bias == POSENC_BIAS_RELATIVE_1D;
  if (!uses_table) require_null(t.table, "tensors->table", "unless bias is ABSOLUTE or RELATIVE_1D");
  if (d.bias != POSENC_BIAS_RELATIVE_2D) {
    require_null(t.table_h, "tensors->table_h", "unless bias is RELATIVE_2D");
    require_null(t.table_w, "tensors->table_w", "unless bias is RELATIVE_2D");
  }
  require_null(t.mask, "tensors->mask", "(masks are not implemented yet)");
  require_null(t.kv_lengths, "tensors->kv_lengths", "(not implemented yet)");
  require_null(t.q_lengths, "tensors->q_lengths", "(not implemented yet)");
  require_null(t.query_offsets, "tensors->query_offsets", "(not implemented yet)");
  if (d.relative_values) {
    table(t.value_table, "tensors->value_table", relative_rows);
  } else {
    require_null(t.value_table, "tensors->value_table", "unless relative_values is 1");
  }
  return inputs;
}

// Everything but the workspace; returns the problem and the output's size.
struct Validated {
  ops::AttentionProblem problem;
  int64_t out_bytes;
  Regions inputs;
};

Validated validate(const posenc_attention_desc* desc, const posenc_attention_tensors* tensors) {
  require_not_null(desc, "desc");
  require_not_null(tensors, "tensors");
  const int64_t relative_rows = validate_desc(*desc);
  // Every size product is checked before the problem multiplies them.
  Regions inputs = validate_tensors(*desc, *tensors, relative_rows);
  const int64_t out_bytes = checked_bytes({desc->batch, desc->heads, desc->q_len,
                                           desc->head_dim},
                                          dtype_bytes(desc->out_dtype), "tensors->out");
  Validated v{ops::make_attention_problem(*desc), out_bytes, std::move(inputs)};
  for (const Region& r : v.inputs) {
    require_disjoint(tensors->out, v.out_bytes, "tensors->out", r.pointer, r.bytes, r.name);
  }
  return v;
}

void require_workspace(const void* workspace, size_t workspace_bytes, size_t needed,
                       const void* out, int64_t out_bytes, const char* out_name,
                       const Regions& inputs) {
  if (workspace == nullptr) return;
  if (workspace_bytes < needed) {
    invalid("workspace_bytes (" + std::to_string(workspace_bytes) + ") is less than the " +
            std::to_string(needed) + " bytes this call needs");
  }
  const int64_t bytes = int64_t(needed);
  require_disjoint(out, out_bytes, out_name, workspace, bytes, "workspace");
  for (const Region& r : inputs) {
    require_disjoint(workspace, bytes, "workspace", r.pointer, r.bytes, r.name);
  }
}

void validate_bottleneck_desc(const posenc_bottleneck_desc* desc) {
  require_not_null(desc, "desc");
  const posenc_bottleneck_desc& d = *desc;
  require_positive(d.batch, "desc->batch");
  require_positive(d.channels, "desc->channels");
  require_positive(d.height, "desc->height");
  require_positive(d.width, "desc->width");
  require_positive(d.heads, "desc->heads");
  require_positive(d.head_dim, "desc->head_dim");
  require_dtype(d.dtype, "desc->dtype");
  require_dtype(d.out_dtype, "desc->out_dtype");
  require_finite(d.scale, "desc->scale");
  require_flag(d.tables_per_head, "desc->tables_per_head");
  require_flag(d.bias_uses_scaled_q, "desc->bias_uses_scaled_q");
  if (d.stride != 1 && d.stride != 2) {
    invalid("desc->stride must be 1 or 2 (got " + std::to_string(d.stride) + ")");
  }
  if (d.stride == 2 && (d.height < 2 || d.width < 2)) {
    invalid("desc->stride 2 needs desc->height and desc->width >= 2 (got " +
            std::to_string(d.height) + " x " + std::to_string(d.width) + ")");
  }
  require_non_negative(d.value_head_dim, "desc->value_head_dim");
  if (d.value_head_dim != 0 && d.value_head_dim != d.head_dim) {
    fail(POSENC_ERROR_UNSUPPORTED,
         "desc->value_head_dim: a v head size other than desc->head_dim (" +
             std::to_string(d.head_dim) + ") is not implemented yet (got " +
             std::to_string(d.value_head_dim) + ")");
  }
  // Every intermediate (and the attention workspace) stays far below 2^63:
  // per token, the channels, q, k, v and the attention's output (4 x heads
  // x head_dim) and 4096 for the attention's workspace, 1 KiB each at most.
  const char* per_token_name = "desc->channels + 4 * desc->heads * desc->head_dim";
  const int64_t projections = checked_bytes({4, d.heads, d.head_dim}, 1, per_token_name);
  const int64_t per_token =
      checked_sum(checked_sum(d.channels, projections, per_token_name), 4096, per_token_name);
  checked_bytes({d.batch, d.height, d.width, per_token}, size_t(1) << 10,
                "desc->batch * desc->height * desc->width (the workspace)");
}

// How a bottleneck entry point names its tensors in errors.
struct BottleneckNames {
  const char *fmap, *w_qkv, *qkv_bias, *rel_h, *rel_w, *out;
};
constexpr BottleneckNames kTensorsNames{"tensors->fmap",  "tensors->w_qkv",
                                        "tensors->qkv_bias", "tensors->rel_h",
                                        "tensors->rel_w", "tensors->out"};
constexpr BottleneckNames kArgumentNames{"fmap", "w_qkv", "qkv_bias", "rel_h", "rel_w", "out"};

void run_bottleneck(posenc_context* context, const posenc_bottleneck_desc* desc,
                    const posenc_bottleneck_tensors& t, const BottleneckNames& names,
                    void* workspace, size_t workspace_bytes) {
  validate_bottleneck_desc(desc);
  const posenc_bottleneck_desc& d = *desc;
  const size_t es = dtype_bytes(d.dtype);
  require_tensor(t.fmap, es, names.fmap);
  require_tensor(t.w_qkv, es, names.w_qkv);
  require_tensor(t.rel_h, es, names.rel_h);
  require_tensor(t.rel_w, es, names.rel_w);
  require_tensor(t.out, dtype_bytes(d.out_dtype), names.out);
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  Regions inputs{
      {t.fmap, checked_bytes({d.batch, d.channels, d.height, d.width}, es, names.fmap),
       names.fmap},
      {t.w_qkv, checked_bytes({3, d.heads, d.head_dim, d.channels}, es, names.w_qkv),
       names.w_qkv},
      {t.rel_h, checked_bytes({heads, 2 * d.height - 1, d.head_dim}, es, names.rel_h),
       names.rel_h},
      {t.rel_w, checked_bytes({heads, 2 * d.width - 1, d.head_dim}, es, names.rel_w),
       names.rel_w}};
  if (t.qkv_bias != nullptr) {
    require_tensor(t.qkv_bias, es, names.qkv_bias);
    inputs.push_back({t.qkv_bias, checked_bytes({3, d.heads, d.head_dim}, es, names.qkv_bias),
                      names.qkv_bias});
  }
  const int64_t out_bytes =
      checked_bytes({d.batch, d.heads, d.head_dim, d.height / d.stride, d.width / d.stride},
                    dtype_bytes(d.out_dtype), names.out);
  for (const Region& r : inputs) {
    require_disjoint(t.out, out_bytes, names.out, r.pointer, r.bytes, r.name);
  }
  const ExecContext ctx = resolve_context(context);
  const ops::BottleneckPlan plan = ops::plan_bottleneck(d, ctx.num_threads);
  require_workspace(workspace, workspace_bytes, plan.workspace_bytes, t.out, out_bytes, names.out,
                    inputs);
  require_bf16_gemm(d.dtype);
  ops::bottleneck_mhsa(ctx, d, plan, t, workspace);
}

}  // namespace

namespace {

// 1/sqrt(head_dim), the usual attention scale (1 for a head_dim the call
// will refuse anyway).
float default_scale(int64_t head_dim) {
  return head_dim > 0 ? float(1.0 / std::sqrt(double(head_dim))) : 1.0f;
}

}  // namespace

extern "C" {

void posenc_attention_desc_init(posenc_attention_desc* desc, int64_t batch, int64_t heads,
                                int64_t q_len, int64_t kv_len, int64_t head_dim) {
  if (desc == nullptr) return;
  *desc = posenc_attention_desc{};
  desc->batch = batch;
  desc->heads = heads;
  desc->q_len = q_len;
  desc->kv_len = kv_len;
  desc->head_dim = head_dim;
  desc->layout = POSENC_LAYOUT_BHTD;
  desc->dtype = POSENC_F32;
  desc->out_dtype = POSENC_F32;
  desc->scale = default_scale(head_dim);
  desc->bias = POSENC_BIAS_NONE;
  desc->bias_uses_scaled_q = 1;
}

posenc_status posenc_attention_workspace_size(posenc_context* context,
                                              const posenc_attention_desc* desc, size_t* bytes) {
  return guard("posenc_attention_workspace_size", [&] {
    require_not_null(desc, "desc");
    require_not_null(bytes, "bytes");
    validate_desc(*desc);
    require_bf16_gemm(desc->dtype);
    // The sizes of q and k/v must fit before the problem multiplies them.
    const size_t es = dtype_bytes(desc->dtype);
    checked_bytes({desc->batch, desc->heads, desc->q_len, desc->head_dim}, es,
                  "desc->batch * desc->heads * desc->q_len * desc->head_dim");
    checked_bytes({desc->batch, desc->heads, desc->kv_len, desc->head_dim}, es,
                  "desc->batch * desc->heads * desc->kv_len * desc->head_dim");
    const ExecContext ctx = resolve_context(context);
    *bytes = ops::plan_attention(ops::make_attention_problem(*desc), ctx.num_threads)
                 .workspace_bytes;
  });
}

posenc_status posenc_attention(posenc_context* context, const posenc_attention_desc* desc,
                               const posenc_attention_tensors* tensors, void* workspace,
                               size_t workspace_bytes) {
  return guard("posenc_attention", [&] {
    const Validated v = validate(desc, tensors);
    const ExecContext ctx = resolve_context(context);
    const ops::AttentionPlan plan = ops::plan_attention(v.problem, ctx.num_threads);
    require_workspace(workspace, workspace_bytes, plan.workspace_bytes, tensors->out,
                      v.out_bytes, "tensors->out", v.inputs);
    require_bf16_gemm(desc->dtype);
    ops::attention(ctx, v.problem, plan, *tensors, workspace);
  });
}

void posenc_bottleneck_desc_init(posenc_bottleneck_desc* desc, int64_t batch, int64_t channels,
                                 int64_t height, int64_t width, int64_t heads,
                                 int64_t head_dim) {
  if (desc == nullptr) return;
  *desc = posenc_bottleneck_desc{};
  desc->batch = batch;
  desc->channels = channels;
  desc->height = height;
  desc->width = width;
  desc->heads = heads;
  desc->head_dim = head_dim;
  desc->dtype = POSENC_F32;
  desc->out_dtype = POSENC_F32;
  desc->scale = default_scale(head_dim);
  desc->bias_uses_scaled_q = 1;
  desc->stride = 1;
}

posenc_status posenc_bottleneck_workspace_size(posenc_context* context,
                                               const posenc_bottleneck_desc* desc,
                                               size_t* bytes) {
  return guard("posenc_bottleneck_workspace_size", [&] {
    validate_bottleneck_desc(desc);
    require_not_null(bytes, "bytes");
    require_bf16_gemm(desc->dtype);
    *bytes = ops::plan_bottleneck(*desc, resolve_context(context).num_threads).workspace_bytes;
  });
}

posenc_status posenc_bottleneck(posenc_context* context, const posenc_bottleneck_desc* desc,
                                const posenc_bottleneck_tensors* tensors, void* workspace,
                                size_t workspace_bytes) {
  return guard("posenc_bottleneck", [&] {
    require_not_null(desc, "desc");
    require_not_null(tensors, "tensors");
    run_bottleneck(context, desc, *tensors, kTensorsNames, workspace, workspace_bytes);
  });
}

posenc_status posenc_bottleneck_mhsa(posenc_context* context, const posenc_bottleneck_desc* desc,
                                     const void* fmap, const void* w_qkv, const void* rel_h,
                                     const void* rel_w, void* out, void* workspace,
                                     size_t workspace_bytes) {
  return guard("posenc_bottleneck_mhsa", [&] {
    const posenc_bottleneck_tensors tensors{fmap, w_qkv, nullptr, rel_h, rel_w, out};
    run_bottleneck(context, desc, tensors, kArgumentNames, workspace, workspace_bytes);
  });
}

}  // extern "C"
