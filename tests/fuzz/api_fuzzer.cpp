// Fuzzes the C ABI: each input picks an op, its shapes and parameters (valid
// or not), pointers (NULL or not) and enum values. Valid calls must succeed
// and stay inside their buffers (ASan); invalid ones must fail with a message
// and leave the output untouched. Any violation aborts.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "fuzz_input.hpp"
#include "posenc/posenc.h"

namespace posenc::fuzz {
namespace {

constexpr float kUntouched = 77.0f;

void require(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "posenc fuzz: %s (last error: %s)\n", what, posenc_last_error());
    std::abort();
  }
}

// Product of sizes if all are valid, else 1 (a buffer a rejected call must
// not touch anyway).
size_t elements(std::initializer_list<int64_t> sizes, int invalid) {
  if (invalid > 0) return 1;
  size_t n = 1;
  for (int64_t s : sizes) n *= size_t(s);
  return n;
}

// Checks the outcome of a call whose output buffer is `out`, which held only
// `untouched` before the call.
void expect_outcome(posenc_status status, bool must_fail, const std::vector<float>& out,
                    float untouched = kUntouched) {
  if (must_fail) {
    require(status != POSENC_OK, "an invalid call succeeded");
    require(posenc_last_error()[0] != '\0', "a failed call left no message");
    for (float v : out) require(v == untouched, "a failed call wrote its output");
  } else {
    require(status == POSENC_OK, "a valid call failed");
  }
}

posenc_sincos_layout layout(FuzzInput& in, int& invalid) {
  const int v = in.choice(5);
  if (v > 1) ++invalid;
  return posenc_sincos_layout(v);
}

void fuzz_sinusoid_table(FuzzInput& in) {
  int invalid = 0;
  const int64_t length = in.size(64, invalid), dim = in.size(64, invalid);
  const int64_t start = in.flag() ? int64_t(in.byte()) * 4099 : -int64_t(in.byte());
  if (start < 0) ++invalid;
  const double base = in.real(10000.0);
  const posenc_sincos_layout lay = layout(in, invalid);
  const bool bf16 = in.flag();
  std::vector<float> out(elements({length, dim}, invalid), kUntouched);
  const bool null_out = in.choice(16) == 0;
  const posenc_status status =
      posenc_sinusoid_table(nullptr, length, dim, start, base, lay, bf16 ? POSENC_BF16 : POSENC_F32,
                            null_out ? nullptr : out.data());
  expect_outcome(status, invalid + in.invalid_reals() > 0 || null_out, out);
}

void fuzz_add(FuzzInput& in) {
  int invalid = 0;
  const int64_t batch = in.size(8, invalid), tokens = in.size(32, invalid),
                dim = in.size(48, invalid);
  const int64_t offset = in.flag() ? int64_t(in.byte()) : -1 - int64_t(in.byte());
  if (offset < 0) ++invalid;
  const size_t n = elements({batch, tokens, dim}, invalid);
  std::vector<float> x(n, 0.5f), out(n, kUntouched);
  const int pointers = in.choice(8);  // 0: x NULL, 1: out NULL, 2: in place, 3: overlap
  const bool in_place = pointers == 2;
  float* out_ptr = pointers == 1 ? nullptr : in_place ? x.data() : out.data();
  const float* x_ptr = pointers == 0 ? nullptr : x.data();
  std::vector<float> overlapping(n + 1, kUntouched);
  if (pointers == 3) {
    x_ptr = overlapping.data();
    out_ptr = overlapping.data() + 1;
  }
  // x and out shifted by one element overlap when they hold more than one.
  const bool bad_pointers = pointers <= 1 || (pointers == 3 && n > 1);
  posenc_status status;
  if (in.flag()) {
    const double base = in.real(10000.0);
    const posenc_sincos_layout lay = layout(in, invalid);
    status = posenc_add_sinusoid(nullptr, batch, tokens, dim, offset, base, lay, x_ptr, out_ptr);
  } else {
    int table_invalid = 0;
    const int64_t rows = in.size(64, table_invalid);
    const bool too_short = table_invalid == 0 && invalid == 0 && offset + tokens > rows;
    std::vector<float> table(elements({rows, dim}, table_invalid + invalid), 0.25f);
    invalid += table_invalid + (too_short ? 1 : 0);
    status = posenc_add_learned(nullptr, batch, tokens, dim, offset, table.data(), rows, x_ptr,
                                out_ptr);
  }
  const bool must_fail = invalid + in.invalid_reals() > 0 || bad_pointers;
  if (in_place) {
    expect_outcome(status, must_fail, x, 0.5f);
  } else {
    expect_outcome(status, must_fail, pointers == 3 ? overlapping : out);
  }
}

void fuzz_relative_1d(FuzzInput& in) {
  int invalid = 0;
  const int64_t batch = in.size(3, invalid), heads = in.size(4, invalid),
                queries = in.size(40, invalid), keys = in.size(40, invalid),
                dim = in.size(24, invalid);
  posenc_relative_options options{int64_t(in.byte() % 48) - 4, int64_t(in.byte() % 40) - 2,
                                  in.choice(3)};
  if (options.query_offset < 0 || options.clip < 0 || options.causal > 1) ++invalid;
  // table_heads: 1 (shared) or heads are valid; 0 and heads + 1 are not.
  const int64_t choice = in.choice(4);
  const int64_t table_heads = invalid > 0 ? 1 : choice == 0 ? 1 : choice == 1 ? heads
                                                : choice == 2 ? 0 : heads + 1;
  const bool bad_table_heads = table_heads != 1 && table_heads != heads;
  const int64_t rows = invalid > 0        ? 1
                      : options.clip > 0 ? 2 * options.clip + 1
                                         : options.query_offset + queries + keys - 1;
  std::vector<float> q(elements({batch, heads, queries, dim}, invalid), 0.25f);
  std::vector<float> table(
      elements({std::max<int64_t>(table_heads, 1), std::max<int64_t>(rows, 1), dim}, invalid),
      0.5f);
  std::vector<float> out(elements({batch, heads, queries, keys}, invalid), kUntouched);
  const posenc_status status =
      posenc_relative_logits_1d(nullptr, batch, heads, queries, keys, dim, q.data(),
                                table.data(), table_heads, &options, out.data());
  expect_outcome(status, invalid > 0 || bad_table_heads, out);
}

void fuzz_rope(FuzzInput& in) {
  int invalid = 0;
  const int64_t batch = in.size(3, invalid), tokens = in.size(24, invalid),
                heads = in.size(4, invalid), head_dim = in.size(40, invalid);
  posenc_rope_config config;
  require(posenc_rope_config_init(&config, 2 * (1 + in.byte() % 24)) == POSENC_OK,
          "config init failed");
  config.pairing = posenc_rope_pairing(in.choice(3));
  config.scaling = posenc_rope_scaling(in.choice(6));
  config.factor = in.real(2.0);
  config.original_max_positions = in.byte() % 64;
  config.sequence_length = in.byte() % 64;
  if (in.flag()) config.rotary_dim += 1;  // odd: always refused
  const posenc_rope_positions positions{int64_t(in.byte()) - 8, nullptr,
                                        POSENC_ROPE_POSITIONS_INT64};
  const size_t n = elements({batch, tokens, heads, head_dim}, invalid);
  std::vector<float> x(n, 0.5f), out(n, kUntouched);
  const posenc_status status =
      posenc_rope(nullptr, &config, nullptr, &positions, posenc_rope_layout(in.choice(3)),
                  POSENC_F32, batch, tokens, heads, head_dim, x.data(), out.data());
  const bool must_fail = invalid > 0 || config.rotary_dim % 2 != 0 ||
                         config.rotary_dim > head_dim || positions.offset < 0;
  if (must_fail) {
    expect_outcome(status, true, out);
  } else if (status != POSENC_OK) {
    // Other refusals (a scaling's parameters, an unknown enum) must leave
    // the output untouched and say why.
    expect_outcome(status, true, out);
  }
}

void fuzz_attention(FuzzInput& in) {
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
  if (desc.bias > POSENC_BIAS_RELATIVE_2D || desc.causal > 1 || desc.layout > 1) ++invalid;
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
  const int64_t rows_1d = desc.max_distance > 0 ? 2 * desc.max_distance + 1
                                                : desc.q_len + desc.kv_len - 1;
  const int64_t table_rows = desc.bias == POSENC_BIAS_ABSOLUTE ? desc.kv_len : rows_1d;
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
  const posenc_status status = posenc_attention(nullptr, &desc, &t, nullptr, 0);
  if (invalid > 0) {
    expect_outcome(status, true, out);
  } else if (status != POSENC_OK) {
    // Other refusals (e.g. an offset the causal mask cannot use) leave the
    // output untouched.
    expect_outcome(status, true, out);
  }
}

}  // namespace
}  // namespace posenc::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace posenc::fuzz;
  FuzzInput in(data, size);
  switch (in.choice(5)) {
    case 0: fuzz_sinusoid_table(in); break;
    case 1: fuzz_add(in); break;
    case 2: fuzz_relative_1d(in); break;
    case 3: fuzz_rope(in); break;
    default: fuzz_attention(in); break;
  }
  return 0;
}
