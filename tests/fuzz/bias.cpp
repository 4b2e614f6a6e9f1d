// Position biases without q (posenc/bias.h): the dense bias of each kind,
// ALiBi's standard slopes, and the resizes of relative tables.
#include <algorithm>
#include <cstring>

#include "checks.hpp"
#include "families.hpp"

namespace posenc::fuzz {
namespace {

// A kind's value: one of the four mostly, else one outside the enum (stored
// into the desc as a C caller may store any int; the harness keeps the int,
// since loading -1 as the enum is undefined in C++).
int32_t kind(FuzzInput& in, int& invalid) {
  static constexpr int32_t bad[] = {4, -1, 0x7FFFFFFF};
  const int choice = in.choice(10);
  if (choice < 9) return choice % 4;
  ++invalid;
  return bad[in.choice(3)];
}

// A 0/1 flag field: 0 or 1, sometimes 2 (invalid).
int flag_field(FuzzInput& in, int& invalid) {
  const int value = in.choice(9) == 0 ? 2 : in.choice(2);
  if (value > 1) ++invalid;
  return value;
}

// The rows of the kind's table [rows, heads] (or [heads, rows] for TABLE_1D)
// for a valid desc.
int64_t table_rows(const posenc_position_bias_desc& d, int32_t kind) {
  switch (kind) {
    case POSENC_POSITION_BIAS_TABLE_2D:
      return (2 * d.window_height - 1) * (2 * d.window_width - 1) + 3 * d.class_token;
    case POSENC_POSITION_BIAS_TABLE_1D: return 2 * d.max_distance + 1;
    case POSENC_POSITION_BIAS_T5: return d.num_buckets;
    default: return 1;  // ALiBi: the slopes [heads]
  }
}

// Draws the kind's own fields into d (the others stay 0), counting the
// invalid ones.
void kind_fields(FuzzInput& in, int32_t kind, posenc_position_bias_desc& d, int& invalid) {
  switch (kind) {
    case POSENC_POSITION_BIAS_TABLE_2D: {
      d.window_height = in.size(7, invalid);
      d.window_width = in.size(7, invalid);
      d.class_token = flag_field(in, invalid);
      const int64_t tokens = invalid > 0 ? 1 : d.window_height * d.window_width + d.class_token;
      const bool mismatch = in.choice(12) == 0;  // a token count other than the window's
      d.q_len = d.kv_len = tokens + (mismatch ? 1 : 0);
      if (mismatch) ++invalid;
      if (in.choice(12) == 0) {
        d.query_offset = 1;  // must be 0 for TABLE_2D
        ++invalid;
      }
      break;
    }
    case POSENC_POSITION_BIAS_TABLE_1D:
      d.max_distance = int64_t(in.byte() % 24) - 2;
      if (d.max_distance < 0) ++invalid;
      break;
    case POSENC_POSITION_BIAS_T5: {
      d.bidirectional = flag_field(in, invalid);
      d.num_buckets = in.choice(16) == 0 ? (int64_t(1) << 20) + 1 : int64_t(in.byte() % 48);
      d.max_distance = int64_t(in.byte()) - 8;
      const int64_t exact = (d.bidirectional == 1 ? d.num_buckets / 2 : d.num_buckets) / 2;
      if (d.num_buckets < (d.bidirectional == 1 ? 4 : 2) || d.num_buckets > (int64_t(1) << 20) ||
          d.max_distance <= exact) {
        ++invalid;
      }
      break;
    }
    case POSENC_POSITION_BIAS_ALIBI:
      d.bidirectional = flag_field(in, invalid);
      break;
    default:
      break;
  }
}

// Sometimes a field the kind does not read, set (must be refused).
void stray_field(FuzzInput& in, int32_t kind, posenc_position_bias_desc& d, int& invalid) {
  if (in.choice(10) != 0) return;
  switch (in.choice(4)) {
    case 0:
      if (kind == POSENC_POSITION_BIAS_TABLE_2D) return;
      d.window_height = 2;
      break;
    case 1:
      if (kind == POSENC_POSITION_BIAS_T5) return;
      d.num_buckets = 8;
      break;
    case 2:
      if (kind == POSENC_POSITION_BIAS_TABLE_1D || kind == POSENC_POSITION_BIAS_T5) return;
      d.max_distance = 3;
      break;
    default:
      if (kind == POSENC_POSITION_BIAS_T5 || kind == POSENC_POSITION_BIAS_ALIBI) return;
      d.bidirectional = 1;
      break;
  }
  ++invalid;
}

}  // namespace

void fuzz_position_bias(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0, heads_invalid = 0;
  posenc_position_bias_desc d{};
  const int32_t k = kind(in, invalid);
  std::memcpy(&d.kind, &k, sizeof k);
  // Sometimes a valid kind's defaults (T5's buckets), which kind_fields
  // draws over.
  if (invalid == 0 && in.flag()) posenc_position_bias_desc_init(&d, d.kind, 0, 0, 0);
  d.heads = in.count(6, heads_invalid);
  invalid += heads_invalid;
  if (k != POSENC_POSITION_BIAS_TABLE_2D) {  // TABLE_2D: the window's tokens
    d.q_len = in.count(40, invalid);
    d.kv_len = in.count(40, invalid);
    if (in.flag()) {  // a decode step's offset, sometimes past 2^40
      d.query_offset = in.choice(16) == 0 ? (int64_t(1) << 41) : int64_t(in.byte()) - 128;
      if (d.query_offset > (int64_t(1) << 40)) ++invalid;
    }
  }
  kind_fields(in, k, d, invalid);
  stray_field(in, k, d, invalid);

  // ALiBi's table: the standard slopes from posenc_alibi_slopes, or NULL.
  const bool alibi = k == POSENC_POSITION_BIAS_ALIBI;
  std::vector<float> slopes(elements({d.heads}, heads_invalid), kUntouched);
  const bool given_slopes = alibi && in.flag();
  if (given_slopes) {
    const posenc_status status = posenc_alibi_slopes(d.heads, slopes.data());
    expect_outcome(status, heads_invalid > 0, slopes);
    if (status == POSENC_OK) {
      for (float s : slopes) require(s > 0.0f && s <= 1.0f, "an ALiBi slope outside (0, 1]");
    }
  }
  // The table and out in one buffer, out sometimes overlapping the table's
  // last element (when both have elements: an empty range overlaps nothing).
  const size_t table_floats =
      alibi ? slopes.size() : elements({invalid > 0 ? 1 : table_rows(d, k), d.heads}, invalid);
  const size_t out_floats = elements({d.heads, d.q_len, d.kv_len}, invalid);
  std::vector<float> buffer(table_floats + out_floats, 0.25f);
  if (given_slopes) std::copy(slopes.begin(), slopes.end(), buffer.begin());
  const bool overlap = in.choice(12) == 0 && table_floats > 0;
  float* out = buffer.data() + table_floats - (overlap ? 1 : 0);
  std::fill(out, out + out_floats, kUntouched);
  const int pointers = in.choice(16);  // 0: desc NULL, 1: out NULL, 2: table NULL
  const bool null_table = pointers == 2 || (alibi && !given_slopes && in.flag());
  const float* table = null_table ? nullptr : buffer.data();
  const bool bad_pointers = pointers == 0 || (pointers == 1 && out_floats > 0) ||
                            (null_table && !alibi && table_floats > 0) ||
                            (overlap && table != nullptr && out_floats > 0);
  const posenc_status status = posenc_position_bias(
      context.get(), pointers == 0 ? nullptr : &d, table, pointers == 1 ? nullptr : out);
  expect_outcome(status, invalid > 0 || bad_pointers,
                 std::vector<float>(out, out + out_floats));
}

void fuzz_resize_table(FuzzInput& in) {
  int invalid = 0;
  const bool two_d = in.flag();
  if (!two_d) {
    const int64_t rows = in.size(64, invalid), dim = in.size(24, invalid),
                  new_rows = in.count(64, invalid);
    const size_t in_floats = elements({rows, dim}, invalid);
    const size_t out_floats = elements({new_rows, dim}, invalid);
    std::vector<float> buffer(in_floats + out_floats, 0.5f);
    const int pointers = in.choice(12);  // 0: in NULL, 1: out NULL, 2: overlap
    float* out = buffer.data() + in_floats - (pointers == 2 ? 1 : 0);
    std::fill(out, out + out_floats, kUntouched);
    const posenc_status status = posenc_resize_relative_table(
        rows, dim, pointers == 0 ? nullptr : buffer.data(), new_rows,
        pointers == 1 ? nullptr : out);
    // in has elements; NULL out and an overlap need out to have some.
    expect_outcome(status, invalid > 0 || pointers == 0 || (pointers <= 2 && out_floats > 0),
                   std::vector<float>(out, out + out_floats));
    return;
  }
  const int64_t heads = in.count(4, invalid), height = in.size(9, invalid),
                width = in.size(9, invalid), new_height = in.size(9, invalid),
                new_width = in.size(9, invalid);
  const int class_token = flag_field(in, invalid);
  auto rows = [&](int64_t h, int64_t w) {
    return invalid > 0 ? 1 : (2 * h - 1) * (2 * w - 1) + 3 * class_token;
  };
  const size_t in_floats = elements({rows(height, width), heads}, invalid);
  const size_t out_floats = elements({rows(new_height, new_width), heads}, invalid);
  std::vector<float> buffer(in_floats + out_floats, -0.5f);
  const int pointers = in.choice(12);  // 0: in NULL, 1: out NULL, 2: overlap
  float* out = buffer.data() + in_floats - (pointers == 2 && in_floats > 0 ? 1 : 0);
  std::fill(out, out + out_floats, kUntouched);
  const posenc_status status = posenc_resize_relative_bias_table_2d(
      heads, height, width, new_height, new_width, class_token,
      pointers == 0 ? nullptr : buffer.data(), pointers == 1 ? nullptr : out);
  // With no heads, in and out have no elements: NULL is allowed.
  expect_outcome(status, invalid > 0 || (pointers <= 2 && out_floats > 0),
                 std::vector<float>(out, out + out_floats));
}

}  // namespace posenc::fuzz
