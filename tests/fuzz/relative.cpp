// Position logits: absolute (q R^T), the rel_to_abs skew, relative logits in
// 1D (clipped, offset, causal) and 2D (decomposed, full, and with SAM's
// conventions).
#include <algorithm>
#include <cstring>
#include <tuple>

#include "checks.hpp"
#include "families.hpp"

namespace posenc::fuzz {
namespace {

// table_heads: 1 (shared) or heads are valid; 0 and heads + 1 are not
// (unless heads is 0 or 1).
int64_t table_heads(FuzzInput& in, int64_t heads, int invalid, bool& bad) {
  const int choice = in.choice(4);
  const int64_t value = invalid > 0 ? 1 : choice == 0 ? 1 : choice == 1 ? heads
                                                      : choice == 2 ? 0 : heads + 1;
  bad = value != 1 && value != heads;
  return value;
}

// posenc_relative_logits_2d_maps: SAM's order and a key map of any size
// (0 x 0: the query map's; one 0 alone is refused).
void relative_2d_maps(FuzzInput& in, FuzzContext& context) {
  int invalid = 0;
  posenc_relative_2d_desc d;
  posenc_relative_2d_desc_init(&d, in.count(2, invalid), in.count(3, invalid), in.size(9, invalid),
                               in.size(9, invalid), in.size(20, invalid));
  const int kv_choice = in.choice(6);  // 0: none, 1: height alone, 2 .. 5: a key map
  if (kv_choice > 0) {
    std::tie(d.kv_map_height, d.kv_map_width) = in.key_map(12, kv_choice == 1, invalid);
  }
  const int order = in.choice(3);  // 2 is not an order
  std::memcpy(&d.relative_order, &order, sizeof order);
  bool bad_heads = false;
  d.table_heads = table_heads(in, d.heads, invalid, bad_heads);
  const bool ok = invalid == 0 && !bad_heads && order < 2;
  const int64_t kx = d.kv_map_height ? d.kv_map_height : d.map_height;
  const int64_t ky = d.kv_map_width ? d.kv_map_width : d.map_width;
  const int64_t tokens = ok ? d.map_height * d.map_width : 1, th = ok ? d.table_heads : 1;
  std::vector<float> q(elements({d.batch, d.heads, tokens, d.dim}, invalid), 0.25f);
  std::vector<float> rh(elements({th, ok ? 2 * std::max(d.map_height, kx) - 1 : 1, d.dim},
                                 invalid), 0.5f);
  std::vector<float> rw(elements({th, ok ? 2 * std::max(d.map_width, ky) - 1 : 1, d.dim},
                                 invalid), -0.5f);
  const size_t nh = elements({d.batch, d.heads, tokens, ok ? kx : 1}, invalid);
  std::vector<float> out(nh + elements({d.batch, d.heads, tokens, ok ? ky : 1}, invalid),
                         kUntouched);
  const posenc_status status = posenc_relative_logits_2d_maps(
      context.get(), &d, q.data(), rh.data(), rw.data(), out.data(), out.data() + nh);
  expect_outcome(status, !ok, out);
}

}  // namespace

void fuzz_absolute_logits(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.count(3, invalid), heads = in.count(4, invalid),
                queries = in.count(40, invalid), keys = in.count(40, invalid),
                dim = in.size(24, invalid);
  bool bad_heads = false;
  const int64_t t_heads = table_heads(in, heads, invalid, bad_heads);
  std::vector<float> q(elements({batch, heads, queries, dim}, invalid), 0.25f);
  std::vector<float> table(elements({std::max<int64_t>(t_heads, 1), keys, dim}, invalid), 0.5f);
  std::vector<float> out(elements({batch, heads, queries, keys}, invalid), kUntouched);
  const bool null_q = in.choice(16) == 0;
  const posenc_status status =
      posenc_absolute_logits(context.get(), batch, heads, queries, keys, dim,
                             null_q ? nullptr : q.data(), table.data(), t_heads, out.data());
  expect_outcome(status, invalid > 0 || bad_heads || (null_q && !q.empty()), out);
}

void fuzz_rel_to_abs(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.count(3, invalid), heads = in.count(4, invalid),
                length = in.count(48, invalid);
  const int64_t rel_columns = invalid > 0 ? 1 : std::max<int64_t>(2 * length - 1, 0);
  std::vector<float> rel(elements({batch, heads, length, rel_columns}, invalid), 0.5f);
  std::vector<float> out(elements({batch, heads, length, length}, invalid), kUntouched);
  const int pointers = in.choice(8);  // 0: in NULL, 1: out NULL, 2: out == in
  const float* in_ptr = pointers == 0 ? nullptr : pointers == 2 ? out.data() : rel.data();
  const posenc_status status = posenc_rel_to_abs(context.get(), batch, heads, length, in_ptr,
                                                 pointers == 1 ? nullptr : out.data());
  // in and out have elements together; empty, NULL and out == in are allowed.
  expect_outcome(status, invalid > 0 || (pointers <= 2 && !out.empty()), out);
}

void fuzz_relative_1d(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.count(3, invalid), heads = in.count(4, invalid),
                queries = in.count(40, invalid), keys = in.count(40, invalid),
                dim = in.size(24, invalid);
  posenc_relative_options options{int64_t(in.byte() % 48) - 4, int64_t(in.byte() % 40) - 2,
                                  in.choice(3)};
  if (options.query_offset < 0 || options.clip < 0 || options.causal > 1) ++invalid;
  bool bad_heads = false;
  const int64_t t_heads = table_heads(in, heads, invalid, bad_heads);
  const int64_t rows = invalid > 0        ? 1
                      : options.clip > 0 ? 2 * options.clip + 1
                                         : options.query_offset + queries + keys - 1;
  std::vector<float> q(elements({batch, heads, queries, dim}, invalid), 0.25f);
  std::vector<float> table(
      elements({std::max<int64_t>(t_heads, 1), std::max<int64_t>(rows, 1), dim}, invalid), 0.5f);
  std::vector<float> out(elements({batch, heads, queries, keys}, invalid), kUntouched);
  const posenc_status status =
      posenc_relative_logits_1d(context.get(), batch, heads, queries, keys, dim, q.data(),
                                table.data(), t_heads, &options, out.data());
  expect_outcome(status, invalid > 0 || bad_heads, out);
}

void fuzz_relative_2d(FuzzInput& in) {
  FuzzContext context(in);
  if (in.choice(4) == 0) {
    relative_2d_maps(in, context);
    return;
  }
  int invalid = 0;
  const int64_t batch = in.count(2, invalid), heads = in.count(3, invalid),
                height = in.size(9, invalid), width = in.size(9, invalid),
                dim = in.size(20, invalid);
  bool bad_heads = false;
  const int64_t t_heads = table_heads(in, heads, invalid, bad_heads);
  const int64_t tokens = invalid > 0 ? 1 : height * width, th = std::max<int64_t>(t_heads, 1);
  std::vector<float> q(elements({batch, heads, tokens, dim}, invalid), 0.25f);
  const int64_t h_rows = invalid > 0 ? 1 : 2 * height - 1, w_rows = invalid > 0 ? 1 : 2 * width - 1;
  std::vector<float> rh(elements({th, h_rows, dim}, invalid), 0.5f);
  std::vector<float> rw(elements({th, w_rows, dim}, invalid), -0.5f);
  const bool null_table = in.choice(16) == 0;
  const float* rh_ptr = null_table ? nullptr : rh.data();
  // Per-head tables of no heads have no elements: NULL is allowed.
  const bool must_fail = invalid > 0 || bad_heads || (null_table && t_heads != 0);
  if (in.flag()) {
    std::vector<float> out(elements({batch, heads, tokens, tokens}, invalid), kUntouched);
    const posenc_status status =
        posenc_relative_logits_2d(context.get(), batch, heads, height, width, dim, q.data(),
                                  rh_ptr, rw.data(), t_heads, out.data());
    expect_outcome(status, must_fail, out);
    return;
  }
  // rel_h and rel_w in one buffer, sometimes overlapping (rel_w one row early).
  const size_t nh = elements({batch, heads, tokens, height}, invalid);
  std::vector<float> out(nh + elements({batch, heads, tokens, width}, invalid), kUntouched);
  const bool overlap = in.choice(8) == 0 && nh > 0;  // empty ranges overlap nothing
  const posenc_status status = posenc_relative_logits_2d_decomposed(
      context.get(), batch, heads, height, width, dim, q.data(), rh_ptr, rw.data(), t_heads,
      out.data(), out.data() + nh - (overlap ? 1 : 0));
  expect_outcome(status, must_fail || overlap, out);
}

}  // namespace posenc::fuzz
