// C ABI: the bottleneck block (BoTNet's MHSA over a feature map). Validation
// here; the work in ops/attention/bottleneck.cpp.
#include <string>

#include "api/guard.hpp"
#include "api/validate.hpp"
#include "ops/attention/bottleneck.hpp"
#include "ops/attention/problem.hpp"
#include "posenc/attention.h"
#include "runtime/dtype.hpp"
#include "runtime/matmul.hpp"

using namespace posenc;

namespace {

void validate_bottleneck_desc(const posenc_bottleneck_desc* desc) {
  require_not_null(desc, "desc");
  const posenc_bottleneck_desc& d = *desc;
  require_non_negative(d.batch, "desc->batch");
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
  // The block's attention has the map's tokens as q_len and kv_len: the
  // bounds posenc_attention sets on them and on the head sizes hold here.
  const int64_t tokens = checked_bytes({d.height, d.width}, 1, "desc->height * desc->width");
  checked_bytes({tokens, 2}, size_t(1) << 24, "desc->height * desc->width");
  checked_bytes({d.head_dim}, size_t(1) << 24, "desc->head_dim");
  checked_bytes({d.value_head_dim}, size_t(1) << 24, "desc->value_head_dim");
  // Every intermediate (and the attention workspace) stays far below 2^63:
  // per token, the channels, q, k, v and the attention's output (heads x
  // (2 x head_dim + 2 x value_head_dim)) and 4096 for the attention's
  // workspace, 1 KiB each at most.
  const char* per_token_name =
      "desc->channels + 2 * desc->heads * (desc->head_dim + desc->value_head_dim)";
  const int64_t head_sizes = checked_sum(d.head_dim, ops::value_head_dim(d), per_token_name);
  const int64_t projections = checked_bytes({2, d.heads, head_sizes}, 1, per_token_name);
  const int64_t per_token =
      checked_sum(checked_sum(d.channels, projections, per_token_name), 4096, per_token_name);
  // (Per feature map too, so that a batch of 0 bounds the other sizes.)
  // (A literal, not built from per_token_name: a call allocates nothing.)
  const char* per_map_name =
      "desc->height * desc->width * (desc->channels + 2 * desc->heads * (desc->head_dim + "
      "desc->value_head_dim)) (the workspace)";
  const int64_t per_map =
      checked_bytes({d.height, d.width, per_token}, size_t(1) << 10, per_map_name);
  checked_bytes({d.batch, per_map}, 1, "desc->batch * desc->height * desc->width (the workspace)");
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
  const posenc_bottleneck_desc d = *desc;  // read throughout: out may lie over the caller's
  const size_t es = dtype_bytes(d.dtype);
  const int64_t fmap_bytes =
      checked_bytes({d.batch, d.channels, d.height, d.width}, es, names.fmap);
  require_tensor_or_empty(t.fmap, es, fmap_bytes, names.fmap);
  require_tensor(t.w_qkv, es, names.w_qkv);
  require_tensor(t.rel_h, es, names.rel_h);
  require_tensor(t.rel_w, es, names.rel_w);
  const size_t out_es = dtype_bytes(d.out_dtype);
  const int64_t out_bytes = checked_bytes(
      {d.batch, d.heads, ops::value_head_dim(d), d.height / d.stride, d.width / d.stride}, out_es,
      names.out);
  require_tensor_or_empty(t.out, out_es, out_bytes, names.out);
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  // Channels of qkv per head: q's and k's head_dim, v's value_head_dim
  // (bounded by validate_bottleneck_desc).
  const int64_t qkv_head = 2 * d.head_dim + ops::value_head_dim(d);
  Regions inputs{
      {t.fmap, fmap_bytes, names.fmap},
      {t.w_qkv, checked_bytes({d.heads, qkv_head, d.channels}, es, names.w_qkv), names.w_qkv},
      {t.rel_h, checked_bytes({heads, 2 * d.height - 1, d.head_dim}, es, names.rel_h), names.rel_h},
      {t.rel_w, checked_bytes({heads, 2 * d.width - 1, d.head_dim}, es, names.rel_w), names.rel_w}};
  if (t.qkv_bias != nullptr) {
    require_tensor(t.qkv_bias, es, names.qkv_bias);
    inputs.push_back({t.qkv_bias, checked_bytes({d.heads, qkv_head}, es, names.qkv_bias),
                      names.qkv_bias});
  }
  for (const Region& r : inputs) {
    require_disjoint(t.out, out_bytes, names.out, r.pointer, r.bytes, r.name);
  }
  if (d.batch == 0) return;  // no feature maps
  const ExecContext ctx = resolve_context(context);
  const PrimitiveHold hold;  // the plan's primitives serve the call
  const ops::BottleneckPlan plan =
      ops::plan_bottleneck(d, t.qkv_bias != nullptr, ctx.num_threads, ctx.isa);
  require_workspace(workspace, workspace_bytes, plan.workspace_bytes, t.out, out_bytes, names.out,
                    inputs);
  ops::bottleneck_mhsa(ctx, plan, t, workspace);
}

}  // namespace

extern "C" {

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
  desc->scale = ops::default_scale(head_dim);
  desc->bias_uses_scaled_q = 1;
  desc->stride = 1;
}

posenc_status posenc_bottleneck_workspace_size(posenc_context* context,
                                               const posenc_bottleneck_desc* desc,
                                               size_t* bytes) {
  return guard("posenc_bottleneck_workspace_size", [&] {
    validate_bottleneck_desc(desc);
    require_not_null(bytes, "bytes");
    if (desc->batch == 0) {
      *bytes = 0;
      return;
    }
    const ExecContext ctx = resolve_context(context);
    *bytes = ops::bottleneck_workspace_bytes(*desc, ctx.num_threads, ctx.isa);
  });
}

posenc_status posenc_bottleneck(posenc_context* context, const posenc_bottleneck_desc* desc,
                                const posenc_bottleneck_tensors* tensors, void* workspace,
                                size_t workspace_bytes) {
  return guard("posenc_bottleneck", [&] {
    require_not_null(desc, "desc");
    require_not_null(tensors, "tensors");
    const posenc_bottleneck_tensors t = *tensors;  // the same
    run_bottleneck(context, desc, t, kTensorsNames, workspace, workspace_bytes);
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
