// Self-checks of the fused attention and the bottleneck block (fp32).
#include <cmath>

#include "checks.hpp"
#include "reference/attention.hpp"

namespace posenc::cli {
namespace {

// Outputs are weighted means of O(1) values: fp32 rounding stays far below.
constexpr double kTolerance = 1e-4;

CheckResult attention_check(posenc_context* ctx, const posenc_attention_desc& d,
                            int64_t table_rows, int64_t table_w_rows) {
  const int64_t heads = d.tables_per_head ? d.heads : 1;
  const auto q = signal(size_t(d.batch * d.heads * d.q_len * d.head_dim), 0.1f);
  const auto kv = signal(size_t(d.batch * d.heads * d.kv_len * d.head_dim), 0.2f);
  const auto table = signal(size_t(heads * table_rows * d.head_dim), 0.3f);
  const auto table_w = signal(size_t(heads * table_w_rows * d.head_dim), 0.4f);
  std::vector<float> out(q.size());
  posenc_attention_tensors t{q.data(), kv.data(), kv.data(), nullptr,
                             nullptr,  nullptr,   nullptr,   out.data()};
  reference::AttentionInputs in{q.data(), kv.data(), kv.data(), nullptr, nullptr, nullptr, nullptr};
  if (d.bias == POSENC_BIAS_RELATIVE_2D) {
    t.table_h = in.table_h = table.data();
    t.table_w = in.table_w = table_w.data();
  } else {
    t.table = in.table = table.data();
  }
  if (d.relative_values) t.value_table = in.value_table = table.data();
  posenc::check(posenc_attention(ctx, &d, &t, nullptr, 0));
  return CheckResult{max_abs_error(out.data(), reference::attention(d, in)), kTolerance};
}

}  // namespace

std::vector<Check> attention_checks() {
  return {
      {"attention 2D 14x14 H4 d64 per head",
       [](posenc_context* ctx) {
         posenc_attention_desc d;
         posenc_attention_desc_init(&d, 1, 4, 196, 196, 64);
         d.bias = POSENC_BIAS_RELATIVE_2D;
         d.map_height = d.map_width = 14;
         d.tables_per_head = 1;
         return attention_check(ctx, d, 27, 27);
       }},
      {"attention 1D decode K=64 + values",
       [](posenc_context* ctx) {
         posenc_attention_desc d;
         posenc_attention_desc_init(&d, 2, 4, 3, 300, 64);
         d.layout = POSENC_LAYOUT_BTHD;
         d.bias = POSENC_BIAS_RELATIVE_1D;
         d.max_distance = 64;
         d.causal = 1;
         d.query_offset = 297;
         d.relative_values = 1;
         return attention_check(ctx, d, 129, 0);
       }},
      {"bottleneck 7x5 C24 H2 d8",
       [](posenc_context* ctx) {
         posenc_bottleneck_desc d;
         posenc_bottleneck_desc_init(&d, 2, 24, 7, 5, 2, 8);
         const auto fmap = signal(size_t(2 * 24 * 35), 0.5f);
         const auto w = signal(size_t(48 * 24), 0.6f);
         const auto rel = signal(size_t((13 + 9) * 8), 0.7f);
         std::vector<float> out(size_t(2 * 16 * 35));
         posenc::check(posenc_bottleneck_mhsa(ctx, &d, fmap.data(), w.data(), rel.data(),
                                              rel.data() + 13 * 8, out.data(), nullptr, 0));
         return CheckResult{
             max_abs_error(out.data(), reference::bottleneck_mhsa(d, fmap.data(), w.data(),
                                                                  rel.data(), rel.data() + 13 * 8)),
             kTolerance};
       }},
  };
}

}  // namespace posenc::cli
