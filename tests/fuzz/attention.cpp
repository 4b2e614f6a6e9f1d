// Fused attention (every bias kind, causal and additive masks, per-sequence
// lengths and offsets, layout and strides, grouped kv heads, dtype, offset,
// relative values, a value head size) and the BoTNet bottleneck block, each
// with no workspace, one of the size posenc asks for, one byte short of it,
// or one overlapping the output.
#include <algorithm>
#include <cmath>
#include <climits>
#include <limits>
#include <tuple>
#include <vector>

#include "checks.hpp"
#include "families.hpp"
#include "posenc/attention.hpp"

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
// for, one byte less (refused), or `out` itself (refused unless the call
// needs no workspace: an empty one). `bad` is set for the refused ones.
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
  w.bad = (kind == 3 && needed > 0) || w.bytes < needed;
  if (kind == 3) {
    w.pointer = out.data();
    w.bytes = std::max(needed, size_t(1));
  } else {
    w.buffer.resize(std::max(w.bytes, size_t(1)));
    w.pointer = w.buffer.data();
  }
  return w;
}

// The per-sequence tensors of a call (posenc/attention.h), each drawn
// sometimes: values mostly in range, sometimes one past it (refused), of
// the desc's index type; query_offsets with a non-zero desc->query_offset
// is refused; with no batch, none. `bad` when posenc_attention must refuse
// them (the workspace size, which has no tensors, does not).
struct Sequences {
  std::vector<int64_t> wide[3];    // kv_lengths, q_lengths, query_offsets
  std::vector<int32_t> narrow[3];  // the same as int32
  bool present[3] = {false, false, false};
  int64_t max_offset;
  bool bad = false;

  const void* tensor(int which, posenc_index_type type) const {
    if (!present[which]) return nullptr;
    return type == POSENC_INDEX_INT64 ? static_cast<const void*>(wide[which].data())
                                      : static_cast<const void*>(narrow[which].data());
  }
};

Sequences draw_sequences(FuzzInput& in, const posenc_attention_desc& d, int64_t batch) {
  Sequences s;
  s.max_offset = d.query_offset;
  const int64_t count = batch < 0 || batch > 4 ? 1 : batch;  // (an invalid batch: 1)
  for (int which = 0; which < 3; ++which) {
    s.present[which] = in.choice(3) == 0 && count > 0;
    for (int64_t b = 0; b < count; ++b) {
      const uint8_t byte = in.byte();
      int64_t value;
      if (which == 2) {
        value = byte == 255 ? (int64_t(1) << 40) + 1 : int64_t(byte % 16) - 4;
      } else {
        const int64_t length = which == 0 ? d.kv_len : d.q_len;
        value = byte == 255 ? length + 1 : byte % (length + 1);
      }
      s.wide[which].push_back(value);
      // (An int32 offset cannot be out of range: the huge one becomes 1000,
      // whose table the harness can allocate.)
      s.narrow[which].push_back(int32_t(std::min<int64_t>(value, 1000)));
      const bool wide = d.index_type == POSENC_INDEX_INT64;
      if (s.present[which] && byte == 255 && (which != 2 || wide)) s.bad = true;
    }
  }
  if (s.present[2]) {
    if (d.query_offset != 0) s.bad = true;
    s.max_offset = d.index_type == POSENC_INDEX_INT64
                       ? *std::max_element(s.wide[2].begin(), s.wide[2].end())
                       : *std::max_element(s.narrow[2].begin(), s.narrow[2].end());
  }
  return s;
}

// kv_heads: 0 (= heads), 1 (multi-query), heads, or a drawn one (negative,
// not dividing heads, or positive for no heads: refused).
int64_t draw_kv_heads(FuzzInput& in, int64_t heads, int& invalid) {
  const int choice = in.choice(4);
  const int64_t kv_heads = choice == 0   ? 0
                           : choice == 1 ? 1
                           : choice == 2 ? heads
                                         : int64_t(in.byte() % 5) - 1;
  if (kv_heads < 0 || (kv_heads > 0 && (heads % kv_heads != 0 || kv_heads > heads))) ++invalid;
  return kv_heads;
}

// value_head_dim: mostly 0 (= head_dim), else 1 to 24 (below, equal to or
// above head_dim), sometimes negative or huge (refused).
int64_t draw_value_head_dim(FuzzInput& in, int& invalid) {
  const uint8_t b = in.byte();
  if (b < 128) return 0;
  if (b < 250) return 1 + b % 24;
  ++invalid;
  return b % 2 == 0 ? -1 : int64_t(1) << 62;
}

// Elements a STRIDED tensor of rows of `row` elements spans (none without
// rows), its negative strides (refused) taken as 0.
size_t extent(const posenc_token_strides& s, int64_t batch, int64_t heads, int64_t tokens,
              int64_t row) {
  if (batch == 0 || heads == 0 || tokens == 0) return 0;
  return size_t((batch - 1) * std::max<int64_t>(s.batch, 0) +
                (heads - 1) * std::max<int64_t>(s.head, 0) +
                (tokens - 1) * std::max<int64_t>(s.token, 0) + row);
}

// Strides of a STRIDED desc with valid sizes: those of a dense layout, a
// packed qkv (returns true: q, k, v are then views of one buffer), a KV
// cache with spare rows, or drawn ones (a negative one is refused; too short
// a token stride or out rows that overlap may be). v and out have rows of
// dv (the value head size) elements.
bool draw_strides(FuzzInput& in, posenc_attention_desc& d, int64_t kv_heads, int64_t dv,
                  int& invalid) {
  const int64_t dh = d.head_dim;
  const auto dense = [&](posenc_attention_layout layout) {
    d.q_strides = posenc::dense_strides(layout, d.heads, d.q_len, dh);
    d.out_strides = posenc::dense_strides(layout, d.heads, d.q_len, dv);
    d.k_strides = posenc::dense_strides(layout, kv_heads, d.kv_len, dh);
    d.v_strides = posenc::dense_strides(layout, kv_heads, d.kv_len, dv);
  };
  switch (in.choice(5)) {
    case 0: dense(POSENC_LAYOUT_BHTD); return false;
    case 1: dense(POSENC_LAYOUT_BTHD); return false;
    case 2:
      dense(POSENC_LAYOUT_BTHD);
      d.q_strides = d.k_strides = d.v_strides =
          posenc::packed_qkv(d.q_len, d.heads, kv_heads, dh).strides;
      return true;
    case 3:
      dense(POSENC_LAYOUT_BHTD);
      {
        const int64_t capacity = d.kv_len + in.byte() % 4;
        d.k_strides = posenc::kv_cache_strides(kv_heads, capacity, dh);
        d.v_strides = posenc::kv_cache_strides(kv_heads, capacity, dv);
      }
      return false;
    default:
      for (posenc_token_strides* s : {&d.q_strides, &d.k_strides, &d.v_strides, &d.out_strides}) {
        for (int64_t* stride : {&s->batch, &s->head, &s->token}) {
          *stride = int64_t(in.byte() % 64) - 1;
          if (*stride < 0) ++invalid;
        }
      }
      return false;
  }
}

// The fields of a kind without q: BEiT's class token (TABLE_2D), T5's
// buckets and max_distance, the direction (T5, ALIBI), each sometimes out of
// range; the shared fields a kind does not use (max_distance, the offset of
// a window) refused when not 0.
void draw_position_bias(FuzzInput& in, posenc_attention_desc& d, int& invalid) {
  d.bidirectional = in.choice(3);  // 2 is refused
  const bool directed = d.bias == POSENC_BIAS_T5 || d.bias == POSENC_BIAS_ALIBI;
  if (d.bidirectional > 1 || (!directed && d.bidirectional != 0)) ++invalid;
  if (d.tables_per_head) ++invalid;
  switch (d.bias) {
    case POSENC_BIAS_TABLE_2D:
      if (in.choice(4) != 0) d.max_distance = d.query_offset = 0;  // mostly valid
      d.class_token = in.choice(3);
      if (d.class_token > 1 || d.max_distance != 0 || d.query_offset != 0) ++invalid;
      break;
    case POSENC_BIAS_T5: {
      const int64_t buckets[] = {32, 8, 4, 2, 0};
      d.num_buckets = buckets[in.choice(5)];
      d.max_distance = in.byte() % 40;
      const int64_t n = d.bidirectional == 1 ? d.num_buckets / 2 : d.num_buckets;
      if (d.num_buckets < (d.bidirectional == 1 ? 4 : 2) || d.max_distance <= n / 2) ++invalid;
      break;
    }
    case POSENC_BIAS_ALIBI:
      if (in.choice(4) != 0) d.max_distance = 0;  // mostly valid
      if (d.max_distance != 0) ++invalid;
      break;
    default:
      break;
  }
}

// Floats of a valid no-q desc's table (ALiBi: its slopes); 1 otherwise.
int64_t position_table_floats(const posenc_attention_desc& d) {
  switch (d.bias) {
    case POSENC_BIAS_TABLE_2D:
      return ((2 * d.map_height - 1) * (2 * d.map_width - 1) + 3 * d.class_token) * d.heads;
    case POSENC_BIAS_TABLE_1D: return (2 * d.max_distance + 1) * d.heads;
    case POSENC_BIAS_T5: return d.num_buckets * d.heads;
    case POSENC_BIAS_ALIBI: return d.heads;
    default: return 1;
  }
}

}  // namespace

void fuzz_attention(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  const int64_t batch = in.count(4, invalid), heads = in.count(3, invalid),
                head_dim = in.size(20, invalid);
  posenc_attention_desc desc;
  posenc_attention_desc_init(&desc, 1, 1, 1, 1, 1);
  desc.batch = batch;
  desc.heads = heads;
  desc.head_dim = head_dim;
  desc.bias = posenc_attention_bias(in.choice(10));  // 9: no kind
  // The kinds without q (posenc/bias.h's): TABLE_2D, TABLE_1D, T5, ALIBI.
  const bool no_q = desc.bias >= POSENC_BIAS_TABLE_2D && desc.bias <= POSENC_BIAS_ALIBI;
  // The map sizes are only passed (and may only be invalid) for the 2D
  // kinds (a TABLE_2D window).
  const bool map = desc.bias == POSENC_BIAS_RELATIVE_2D || desc.bias == POSENC_BIAS_TABLE_2D;
  const int64_t height = map ? in.size(6, invalid) : 1 + in.byte() % 6;
  const int64_t width = map ? in.size(6, invalid) : 1 + in.byte() % 6;
  desc.causal = in.choice(3);
  desc.tables_per_head = in.choice(2);
  desc.layout = posenc_attention_layout(in.choice(4));
  // A STRIDED tensor without rows has no extent: with batch or heads 0, a
  // huge count of the other addresses nothing, and posenc may take the call.
  const int unbounded = desc.layout == POSENC_LAYOUT_STRIDED && (batch == 0 || heads == 0)
                            ? int(batch > 4) + int(heads > 3)
                            : 0;
  desc.kv_heads = draw_kv_heads(in, heads, invalid);
  desc.query_offset = int64_t(in.byte() % 16) - 4;
  desc.relative_values = in.choice(2);
  // Read by RELATIVE_1D, the relative values and the kinds without q (their
  // own rules below); for the others mostly 0, else refused.
  const bool disentangled = desc.bias == POSENC_BIAS_DISENTANGLED;
  const bool reads_max_distance =
      desc.bias == POSENC_BIAS_RELATIVE_1D || desc.relative_values || no_q || disentangled;
  desc.max_distance = reads_max_distance || in.choice(8) == 0 ? in.byte() % 8 : 0;
  if (!reads_max_distance && desc.max_distance != 0) ++invalid;
  desc.dtype = dtype(in, invalid);
  desc.out_dtype = dtype(in, invalid);
  desc.scale = scale(in, desc.scale, invalid);
  desc.bias_uses_scaled_q = in.choice(3);
  if (desc.bias > POSENC_BIAS_DISENTANGLED || desc.causal > 1 || desc.layout > 2 ||
      desc.bias_uses_scaled_q > 1) {
    ++invalid;
  }
  // A sliding window: none mostly; never negative.
  desc.sliding_window = in.choice(4) == 0 ? int64_t(in.byte() % 12) - 2 : 0;
  if (desc.sliding_window < 0) ++invalid;
  // Sinks sometimes; 2 is no flag.
  desc.sinks = in.choice(4) == 0 ? in.choice(3) : 0;
  if (desc.sinks == 2) ++invalid;
  // A soft cap sometimes: refused negative, NaN, or with a bias of q.
  const float caps[] = {30.0f, 0.5f, -1.0f, std::numeric_limits<float>::quiet_NaN()};
  desc.softcap = in.choice(4) == 0 ? caps[in.choice(4)] : 0.0f;
  const bool bias_of_q = desc.bias == POSENC_BIAS_ABSOLUTE ||
                         desc.bias == POSENC_BIAS_RELATIVE_1D ||
                         desc.bias == POSENC_BIAS_RELATIVE_2D || disentangled;
  if (!(desc.softcap >= 0.0f) || (desc.softcap > 0.0f && bias_of_q)) ++invalid;
  // The relative query bias sometimes: RELATIVE_1D's only; 2 is no flag.
  desc.relative_query_bias = in.choice(8) == 0 ? in.choice(3) : 0;
  if (desc.relative_query_bias == 2 ||
      (desc.relative_query_bias == 1 && desc.bias != POSENC_BIAS_RELATIVE_1D)) {
    ++invalid;
  }
  // The bias gate sometimes: TABLE_1D's, T5's and ALiBi's only; 2 is no flag.
  desc.bias_gate = in.choice(8) == 0 ? in.choice(3) : 0;
  const bool gated_kind = desc.bias == POSENC_BIAS_TABLE_1D || desc.bias == POSENC_BIAS_T5 ||
                          desc.bias == POSENC_BIAS_ALIBI;
  if (desc.bias_gate == 2 || (desc.bias_gate == 1 && !gated_kind)) ++invalid;
  if ((desc.bias == POSENC_BIAS_RELATIVE_2D || no_q || disentangled) && desc.relative_values) {
    ++invalid;
  }
  if (no_q) draw_position_bias(in, desc, invalid);
  // DeBERTa's span (max_distance) or buckets (1 is none; the least M of 2, 4
  // and 8 buckets is 3, 4 and 9).
  if (disentangled) {
    const int64_t buckets[] = {0, 2, 4, 8, 1}, least[] = {1, 3, 4, 9, 1};
    const int choice = in.choice(5);
    desc.num_buckets = buckets[choice];
    desc.max_distance = in.byte() % 12;
    if (choice == 4 || desc.max_distance < least[choice]) ++invalid;
  }
  const int index_type = in.choice(8);  // 7: 2, no type
  desc.index_type = posenc_index_type(index_type == 7 ? 2 : index_type % 2);
  if (index_type == 7) ++invalid;
  // SAM's table order: RELATIVE_2D only (2 is no order).
  const int order = in.choice(8);
  desc.relative_order = posenc_relative_order(order == 7 ? 2 : order == 6 ? 1 : 0);
  if (order == 7 || (order == 6 && desc.bias != POSENC_BIAS_RELATIVE_2D)) ++invalid;
  // Tokens: a map for 2D (sometimes a mismatched one; for RELATIVE_2D
  // sometimes keys on a map of their own, whose sizes may be invalid;
  // BEiT's class token for TABLE_2D), else free lengths.
  int64_t kv_height = height, kv_width = width;
  if (map) {
    desc.map_height = height;
    desc.map_width = width;
    if (desc.bias == POSENC_BIAS_RELATIVE_2D && in.choice(3) == 0) {
      std::tie(desc.kv_map_height, desc.kv_map_width) = in.key_map(7, false, invalid);
      if (desc.kv_map_height != 0 || desc.kv_map_width != 0) {  // (0 x 0: the query map)
        kv_height = desc.kv_map_height;
        kv_width = desc.kv_map_width;
      }
    }
    // (Only for valid sizes: an invalid height times width can overflow.)
    const int64_t tokens = invalid > 0 ? 1 : height * width + desc.class_token;
    desc.q_len = invalid > 0 ? 1 : tokens + (in.choice(8) == 0 ? 1 : 0);
    desc.kv_len = invalid > 0 ? 1 : kv_height * kv_width + desc.class_token;
    if (invalid == 0 && desc.q_len != tokens) ++invalid;
  } else {  // sometimes no queries or no keys
    const bool no_queries = in.choice(16) == 0, no_keys = in.choice(16) == 0;
    desc.q_len = invalid > 0 ? 1 : no_queries ? 0 : height * 3;
    desc.kv_len = invalid > 0 ? 1 : no_keys ? 0 : width * 3;
    desc.map_height = desc.map_width = 0;
  }
  Sequences sequences = draw_sequences(in, desc, batch);
  // A window has no offset.
  if (desc.bias == POSENC_BIAS_TABLE_2D && sequences.present[2]) sequences.bad = true;
  desc.value_head_dim = draw_value_head_dim(in, invalid);
  // v's, out's and the value table's rows (only used for valid sizes).
  const int64_t dv = desc.value_head_dim > 0 ? desc.value_head_dim : head_dim;
  const int64_t table_heads = desc.tables_per_head ? heads : 1;
  // attention.h: 2K + 1 rows when clipped, else q_len + kv_len - 1 + max(offset, 0),
  // the largest offset of query_offsets when given (a huge one is refused),
  // and no rows where that is -1 (no queries and no keys).
  const int64_t rows_1d =
      desc.max_distance > 0 ? 2 * desc.max_distance + 1
      : invalid > 0 || sequences.bad
          ? 1
          : std::max<int64_t>(
                desc.q_len + desc.kv_len - 1 + std::max<int64_t>(sequences.max_offset, 0), 0);
  const int64_t span = desc.num_buckets > 0 ? desc.num_buckets : desc.max_distance;
  const int64_t table_rows = desc.bias == POSENC_BIAS_ABSOLUTE ? desc.kv_len
                             : disentangled                    ? 2 * span
                                                               : rows_1d;
  // Buffers of floats, large enough for either dtype.
  size_t qn = elements({batch, heads, desc.q_len, head_dim}, invalid);
  size_t kn = elements({batch, heads, desc.kv_len, head_dim}, invalid);
  size_t vn = elements({batch, heads, desc.kv_len, dv}, invalid);
  size_t outn = elements({batch, heads, desc.q_len, dv}, invalid);
  bool packed = false;
  const int64_t kv_heads = desc.kv_heads > 0 ? desc.kv_heads : heads;
  if (desc.layout == POSENC_LAYOUT_STRIDED && invalid == 0) {
    packed = draw_strides(in, desc, kv_heads, dv, invalid);
    qn = extent(desc.q_strides, batch, heads, desc.q_len, head_dim);
    kn = extent(desc.k_strides, batch, kv_heads, desc.kv_len, head_dim);
    vn = extent(desc.v_strides, batch, kv_heads, desc.kv_len, dv);
    outn = extent(desc.out_strides, batch, heads, desc.q_len, dv);
  }
  // A packed qkv: k and v start heads and heads + kv_heads rows of head_dim
  // into q's buffer (elements of the desc's dtype).
  const size_t k_offset = packed ? size_t(heads * head_dim) : 0;
  const size_t v_offset = packed ? size_t((heads + kv_heads) * head_dim) : 0;
  if (packed) qn = std::max({qn, k_offset + kn, v_offset + vn});
  std::vector<float> q(qn, 0.3f), k(kn, -0.2f), v(vn, 0.7f), out(outn, kUntouched);
  std::vector<float> table(elements({table_heads, table_rows, head_dim}, invalid), 0.1f);
  // 2D: 2 max(q, k) - 1 rows per axis.
  const int64_t h_rows = invalid > 0 ? 1 : 2 * std::max(height, kv_height) - 1;
  const int64_t w_rows = invalid > 0 ? 1 : 2 * std::max(width, kv_width) - 1;
  std::vector<float> table_h(elements({table_heads, h_rows, head_dim}, invalid), 0.2f);
  std::vector<float> table_w(elements({table_heads, w_rows, head_dim}, invalid), 0.3f);
  std::vector<float> values(elements({table_heads, rows_1d, dv}, invalid), 0.4f);
  posenc_attention_tensors t{q.data(), k.data(), v.data(), nullptr, nullptr, nullptr, nullptr,
                             out.data(), nullptr, nullptr, nullptr, nullptr, nullptr,
                             nullptr, nullptr, nullptr};
  if (packed) {
    const size_t es = desc.dtype == POSENC_BF16 ? 2 : 4;
    t.k = reinterpret_cast<const char*>(q.data()) + k_offset * es;
    t.v = reinterpret_cast<const char*>(q.data()) + v_offset * es;
  }
  std::vector<float> key_table(disentangled ? table.size() : 0, -0.1f);
  if (desc.bias == POSENC_BIAS_ABSOLUTE || desc.bias == POSENC_BIAS_RELATIVE_1D || disentangled) {
    t.table = table.data();
    if (disentangled) t.key_table = key_table.data();
  } else if (desc.bias == POSENC_BIAS_RELATIVE_2D) {
    t.table_h = table_h.data();
    t.table_w = table_w.data();
  }
  // A kind without q: its table as the model stores it (ALiBi: slopes or
  // sometimes NULL for the standard ones).
  std::vector<float> position_table(
      elements({invalid > 0 ? 1 : position_table_floats(desc)}, invalid), 0.25f);
  if (no_q && (desc.bias != POSENC_BIAS_ALIBI || in.flag())) t.table = position_table.data();
  if (desc.relative_values) t.value_table = values.data();
  std::vector<float> sinks(desc.sinks == 1 ? elements({heads}, invalid) : 0, 2.0f);
  if (desc.sinks == 1) t.sinks = sinks.data();
  std::vector<float> query_bias(
      desc.relative_query_bias == 1 ? elements({heads, desc.head_dim}, invalid) : 0, 0.5f);
  if (desc.relative_query_bias == 1) t.relative_query_bias = query_bias.data();
  std::vector<float> gate(
      desc.bias_gate == 1 ? elements({batch, heads, desc.q_len}, invalid) : 0, 1.5f);
  if (desc.bias_gate == 1) t.bias_gate = gate.data();
  t.kv_lengths = sequences.tensor(0, desc.index_type);
  t.q_lengths = sequences.tensor(1, desc.index_type);
  t.query_offsets = sequences.tensor(2, desc.index_type);
  // Half the time a mask: mask_batch 1, batch, half of an even batch (a
  // window period) or -1; mask_heads 1, heads or 0; mask_q_len 1, q_len or
  // q_len + 1; any dtype. (With no heads or queries, 0 and 1 are valid;
  // with no batch, mask_batch 0 is no mask, whose other fields are not read.)
  std::vector<float> mask;
  if (in.flag()) {
    const int64_t period = batch % 2 == 0 ? batch / 2 : 1;
    const int64_t mask_batches[] = {1, batch, period, -1};
    const int64_t mask_heads[] = {1, heads, 0};
    const int64_t mask_q_lens[] = {1, desc.q_len, desc.q_len + 1};
    const int batch_choice = in.choice(4), heads_choice = in.choice(3), q_choice = in.choice(3);
    int bad_mask = batch_choice == 3 || (heads_choice == 2 && heads != 0) ||
                   (q_choice == 2 && desc.q_len != 0);
    desc.mask_batch = mask_batches[batch_choice];
    desc.mask_heads = mask_heads[heads_choice];
    desc.mask_q_len = mask_q_lens[q_choice];
    desc.mask_dtype = dtype(in, bad_mask);
    if (desc.mask_batch != 0) invalid += bad_mask;
    mask.assign(elements({desc.mask_batch, desc.mask_heads, desc.mask_q_len, desc.kv_len},
                         invalid),
                in.flag() ? -std::numeric_limits<float>::infinity() : -0.5f);
    t.mask = desc.mask_batch == 0 ? nullptr : mask.data();
  }
  // A pointer the desc does not use, a required one missing (allowed where
  // its tensor has no elements), or no tensors.
  static const float stray = 0.0f;
  const int pointers = in.choice(16);
  bool bad_pointer = pointers == 2;
  if (pointers == 0) {
    t.value_table = desc.relative_values ? nullptr : &stray;
    bad_pointer = !desc.relative_values || !values.empty();
  }
  if (pointers == 1) {
    t.v = nullptr;
    bad_pointer = vn > 0;
  }
  if (pointers == 3) {
    t.mask = desc.mask_batch > 0 ? nullptr : &stray;
    bad_pointer = desc.mask_batch <= 0 || !mask.empty();
  }
  if (pointers == 4) {
    t.sinks = desc.sinks == 1 ? nullptr : &stray;
    bad_pointer = desc.sinks != 1 || !sinks.empty();
  }
  if (pointers == 5) {
    t.relative_query_bias = desc.relative_query_bias == 1 ? nullptr : &stray;
    bad_pointer = desc.relative_query_bias != 1 || !query_bias.empty();
  }
  if (pointers == 6) {
    t.key_table = disentangled ? nullptr : &stray;
    bad_pointer = !disentangled || !key_table.empty();
  }
  if (pointers == 7) {
    t.bias_gate = desc.bias_gate == 1 ? nullptr : &stray;
    bad_pointer = desc.bias_gate != 1 || !gate.empty();
  }
  const posenc_attention_tensors* tensors = pointers == 2 ? nullptr : &t;
  size_t needed = 0;
  const posenc_status size_status = posenc_attention_workspace_size(context.get(), &desc, &needed);
  if (invalid > unbounded) expect_outcome(size_status, true, {});
  const Workspace w = draw_workspace(in, size_status, needed, out);
  const posenc_status status = posenc_attention(context.get(), &desc, tensors, w.pointer, w.bytes);
  // Other refusals (an offset the causal mask cannot use) leave the output
  // untouched.
  expect_refusal_if(status, invalid > unbounded || sequences.bad || bad_pointer || w.bad, out);
}

void fuzz_bottleneck(FuzzInput& in) {
  FuzzContext context(in);
  int invalid = 0;
  // (Named first: the order in which arguments are evaluated is unspecified.)
  const int64_t batch = in.count(2, invalid), channels = in.size(12, invalid),
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
  desc.value_head_dim = draw_value_head_dim(in, invalid);
  // Derived sizes only of valid ones (invalid sizes may overflow them).
  const bool valid = invalid == 0;
  const int64_t table_heads = desc.tables_per_head && valid ? desc.heads : 1;
  const int64_t dv = desc.value_head_dim > 0 ? desc.value_head_dim : desc.head_dim;
  // q and k of heads*head_dim channels, v and out of heads*dv.
  const int64_t qkv = valid ? desc.heads * (2 * desc.head_dim + dv) : 1;
  const int64_t inner = valid ? desc.heads * dv : 1;
  const int64_t h_rows = valid ? 2 * desc.height - 1 : 1, w_rows = valid ? 2 * desc.width - 1 : 1;
  const int64_t pool = valid ? desc.stride : 1;
  std::vector<float> fmap(
      elements({desc.batch, desc.channels, desc.height, desc.width}, invalid), 0.5f);
  std::vector<float> w_qkv(elements({qkv, desc.channels}, invalid), 0.1f);
  std::vector<float> qkv_bias(elements({qkv}, invalid), 0.3f);
  std::vector<float> rel_h(elements({table_heads, h_rows, desc.head_dim}, invalid), 0.2f);
  std::vector<float> rel_w(elements({table_heads, w_rows, desc.head_dim}, invalid), -0.2f);
  std::vector<float> out(
      elements({desc.batch, inner, desc.height / pool, desc.width / pool}, invalid), kUntouched);
  // posenc_bottleneck_mhsa: the tensors as arguments, without a bias.
  const bool null_fmap = in.choice(16) == 0, with_bias = in.choice(2) == 0,
             as_arguments = !with_bias && in.flag();
  size_t needed = 0;
  const posenc_status size_status =
      posenc_bottleneck_workspace_size(context.get(), &desc, &needed);
  if (invalid > 0) expect_outcome(size_status, true, {});
  const Workspace w = draw_workspace(in, size_status, needed, out);
  const posenc_bottleneck_tensors tensors{null_fmap ? nullptr : fmap.data(), w_qkv.data(),
                                          with_bias ? qkv_bias.data() : nullptr,
                                          rel_h.data(), rel_w.data(), out.data()};
  const posenc_status status =
      as_arguments
          ? posenc_bottleneck_mhsa(context.get(), &desc, tensors.fmap, tensors.w_qkv,
                                   tensors.rel_h, tensors.rel_w, tensors.out, w.pointer, w.bytes)
          : posenc_bottleneck(context.get(), &desc, &tensors, w.pointer, w.bytes);
  // (With no batch fmap has no elements: NULL is allowed.)
  expect_refusal_if(status, invalid > 0 || (null_fmap && !fmap.empty()) || w.bad, out);
}

}  // namespace posenc::fuzz
