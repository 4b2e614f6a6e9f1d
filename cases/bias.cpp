// Position biases without q (posenc/bias.h): the dense bias of each kind,
// the learned tables' and T5's set against the way the models compute it
// each forward (an index or bucket matrix, a gather into [q, kv, heads],
// then a permute to [heads, q, kv]); and the table resizes.
#include <memory>
#include <string>
#include <vector>

#include "cases/case.hpp"
#include "cases/timing/machine.hpp"
#include "cases/values.hpp"
#include "reference/bias.hpp"

namespace posenc::cases {
namespace {

constexpr double kF = sizeof(float);
// Tables are copied exactly; ALiBi's slope * d is rounded once in fp32.
constexpr double kAlibiTolerance = 1e-5;

std::string kind_name(const posenc_position_bias_desc& d) {
  switch (d.kind) {
    case POSENC_POSITION_BIAS_TABLE_2D: return d.class_token ? "BEiT" : "Swin";
    case POSENC_POSITION_BIAS_TABLE_1D: return "1D";
    case POSENC_POSITION_BIAS_T5: return "T5";
    default: return "ALiBi";
  }
}

std::string describe(const posenc_position_bias_desc& d) {
  std::string s = kind_name(d) + " H" + std::to_string(d.heads);
  if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
    return s + " " + std::to_string(d.window_height) + "x" + std::to_string(d.window_width);
  }
  s += d.q_len == d.kv_len ? " T" + std::to_string(d.q_len)
                           : " Tq" + std::to_string(d.q_len) + " Tk" + std::to_string(d.kv_len);
  if (d.query_offset != 0) s += " @" + std::to_string(d.query_offset);
  if (d.kind == POSENC_POSITION_BIAS_TABLE_1D) s += " K" + std::to_string(d.max_distance);
  if (d.kind == POSENC_POSITION_BIAS_T5) {
    s += " " + std::to_string(d.num_buckets) + "/" + std::to_string(d.max_distance);
  }
  if (d.bidirectional) s += " bidirectional";
  return s;
}

int64_t table_floats(const posenc_position_bias_desc& d) {
  switch (d.kind) {
    case POSENC_POSITION_BIAS_TABLE_2D:
      return ((2 * d.window_height - 1) * (2 * d.window_width - 1) + 3 * d.class_token) *
             d.heads;
    case POSENC_POSITION_BIAS_TABLE_1D: return (2 * d.max_distance + 1) * d.heads;
    case POSENC_POSITION_BIAS_T5: return d.num_buckets * d.heads;
    default: return 0;  // ALiBi's standard slopes
  }
}

// The models' way for the tables and T5: per (i, j) the table row
// (Swin's registered index, or T5's buckets computed each forward), a gather
// into [q, kv, heads], a permute into out [heads, q, kv], on the ops'
// threads (op_threads()).
void gather_then_permute(const posenc_position_bias_desc& d, const std::vector<int64_t>& rows,
                         const float* table, std::vector<float>& gathered, float* out) {
  const int64_t pairs = d.q_len * d.kv_len, heads = d.heads;
  gathered.resize(size_t(pairs * heads));
#pragma omp parallel for schedule(static) num_threads(op_threads())
  for (int64_t n = 0; n < pairs; ++n) {
    for (int64_t h = 0; h < heads; ++h) {
      gathered[size_t(n * heads + h)] = table[rows[size_t(n)] * heads + h];
    }
  }
#pragma omp parallel for schedule(static) num_threads(op_threads())
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t n = 0; n < pairs; ++n) out[h * pairs + n] = gathered[size_t(n * heads + h)];
  }
}

Problem bias_problem(const posenc_position_bias_desc& d) {
  struct Buffers {
    Shared<float> table;
    std::vector<float> out, gathered;
    std::vector<int64_t> rows;
  };
  auto b = std::make_shared<Buffers>();
  const int64_t floats = table_floats(d);
  if (floats > 0) b->table = shared_floats(size_t(floats), 31);
  b->out.assign(size_t(d.heads * d.q_len * d.kv_len), 0.0f);
  const float* table = b->table ? b->table->data() : nullptr;
  Problem p;
  p.write_bytes = double(b->out.size()) * kF;
  p.bytes = p.write_bytes + double(floats) * kF;
  p.run = [b, d, table](posenc_context* ctx) {
    return posenc_position_bias(ctx, &d, table, b->out.data());
  };
  p.output = [b] { return b->out; };
  p.reference = [d, table] { return reference::position_bias(d, table); };
  if (d.kind == POSENC_POSITION_BIAS_TABLE_2D) {
    // Swin registers the index once; only the gather and permute run per forward.
    b->rows = reference::swin_relative_position_index(d.window_height, d.window_width,
                                                      d.class_token != 0);
    p.baseline = [b, d, table] {
      gather_then_permute(d, b->rows, table, b->gathered, b->out.data());
    };
  } else if (d.kind == POSENC_POSITION_BIAS_T5) {
    p.baseline = [b, d, table] {
      b->rows.resize(size_t(d.q_len * d.kv_len));
#pragma omp parallel for schedule(static) num_threads(op_threads())
      for (int64_t i = 0; i < d.q_len; ++i) {
        for (int64_t j = 0; j < d.kv_len; ++j) {
          b->rows[size_t(i * d.kv_len + j)] = reference::t5_relative_position_bucket(
              j - (d.query_offset + i), d.bidirectional != 0, d.num_buckets, d.max_distance);
        }
      }
      gather_then_permute(d, b->rows, table, b->gathered, b->out.data());
    };
  }
  return p;
}

const Op<posenc_position_bias_desc> kTables{"bias", "position_bias", 0.0,
                                            "gather + permute", describe, bias_problem};
const Op<posenc_position_bias_desc> kAlibi{"bias", "position_bias", kAlibiTolerance, "",
                                           describe, bias_problem};

posenc_position_bias_desc desc_of(posenc_position_bias_kind kind, int64_t heads, int64_t q_len,
                                  int64_t kv_len, int64_t offset = 0) {
  posenc_position_bias_desc d;
  posenc_position_bias_desc_init(&d, kind, heads, q_len, kv_len);
  d.query_offset = offset;
  return d;
}
posenc_position_bias_desc window(int64_t heads, int64_t height, int64_t width, int class_token) {
  const int64_t n = height * width + class_token;
  posenc_position_bias_desc d = desc_of(POSENC_POSITION_BIAS_TABLE_2D, heads, n, n);
  d.window_height = height;
  d.window_width = width;
  d.class_token = class_token;
  return d;
}
// T5 (T5's 32 buckets and max_distance 128) or ALiBi, either direction.
posenc_position_bias_desc directed(posenc_position_bias_kind kind, int64_t heads, int64_t q_len,
                                   int64_t kv_len, int bidirectional, int64_t offset = 0) {
  posenc_position_bias_desc d = desc_of(kind, heads, q_len, kv_len, offset);
  d.bidirectional = bidirectional;
  return d;
}
posenc_position_bias_desc t5(int64_t heads, int64_t q_len, int64_t kv_len, int bidirectional,
                             int64_t offset = 0) {
  return directed(POSENC_POSITION_BIAS_T5, heads, q_len, kv_len, bidirectional, offset);
}
posenc_position_bias_desc alibi(int64_t heads, int64_t q_len, int64_t kv_len, int bidirectional,
                                int64_t offset = 0) {
  return directed(POSENC_POSITION_BIAS_ALIBI, heads, q_len, kv_len, bidirectional, offset);
}
posenc_position_bias_desc table_1d(int64_t heads, int64_t q_len, int64_t kv_len, int64_t k,
                                   int64_t offset = 0) {
  posenc_position_bias_desc d =
      desc_of(POSENC_POSITION_BIAS_TABLE_1D, heads, q_len, kv_len, offset);
  d.max_distance = k;
  return d;
}

// --- Resizes: SAM's 1D table (linear), a Swin bias table (bicubic).
struct ResizeSpec {
  int64_t columns;     // 1D: dim; 2D: heads
  int64_t from, to;    // 1D: rows; 2D: square window sizes
  int class_token;     // 2D only
  bool two_d;
};
std::string describe_resize(const ResizeSpec& s) {
  if (!s.two_d) {
    return "L" + std::to_string(s.from) + " to " + std::to_string(s.to) + " d" +
           std::to_string(s.columns);
  }
  return "H" + std::to_string(s.columns) + " " + std::to_string(s.from) + "x" +
         std::to_string(s.from) + " to " + std::to_string(s.to) + "x" + std::to_string(s.to) +
         (s.class_token ? " class token" : "");
}
Problem resize_problem(const ResizeSpec& s) {
  struct Buffers {
    Shared<float> in;
    std::vector<float> out;
  };
  auto b = std::make_shared<Buffers>();
  const auto rows = [&s](int64_t size) {
    return s.two_d ? (2 * size - 1) * (2 * size - 1) + 3 * s.class_token : size;
  };
  b->in = shared_floats(size_t(rows(s.from) * s.columns), 32);
  b->out.assign(size_t(rows(s.to) * s.columns), 0.0f);
  Problem p;
  p.write_bytes = double(b->out.size()) * kF;
  p.bytes = p.write_bytes + double(b->in->size()) * kF;
  p.run = [b, s](posenc_context*) {
    return s.two_d ? posenc_resize_relative_bias_table_2d(s.columns, s.from, s.from, s.to, s.to,
                                                          s.class_token, b->in->data(),
                                                          b->out.data())
                   : posenc_resize_relative_table(s.from, s.columns, b->in->data(), s.to,
                                                  b->out.data());
  };
  p.output = [b] { return b->out; };
  p.reference = [b, s] {
    return s.two_d ? reference::resize_bias_table_2d(s.columns, s.from, s.from, s.to, s.to,
                                                     s.class_token != 0, b->in->data())
                   : reference::resize_rows_linear(s.from, s.columns, b->in->data(), s.to);
  };
  return p;
}
const Op<ResizeSpec> kResize1d{"bias", "resize_relative_table", 1e-6, "", describe_resize,
                               resize_problem};
const Op<ResizeSpec> kResize2d{"bias", "resize_relative_bias_table_2d", 1e-6, "",
                               describe_resize, resize_problem};

}  // namespace

std::vector<Case> bias_cases() {
  const std::vector<std::string> timed{"bench", "demo"};
  return {
      kTables({"check"}, window(4, 7, 7, 0)),
      kTables({"check"}, window(3, 3, 5, 1)),
      kTables({"check"}, t5(5, 37, 37, 1)),
      kTables({"check"}, table_1d(3, 9, 40, 12, 31)),
      kAlibi({"check"}, alibi(6, 29, 29, 0)),
      kResize1d({"check"}, {64, 27, 127, 0, false}),
      kResize2d({"check"}, {4, 7, 12, 0, true}),
      kResize2d({"check"}, {3, 12, 7, 1, true}),
      kTables({}, t5(8, 3, 300, 0, 297)),
      kTables({}, table_1d(2, 41, 23, 0, -5)),
      kAlibi({}, alibi(12, 1, 70, 0, 69)),
      kAlibi({}, alibi(5, 23, 31, 1)),
      kTables(timed, window(32, 12, 12, 0), window(3, 5, 4, 0)),
      kTables(timed, window(16, 14, 14, 1), window(2, 3, 7, 1)),
      kTables(timed, t5(12, 512, 512, 1), t5(3, 67, 67, 1)),
      kTables(timed, t5(12, 512, 512, 0), t5(3, 67, 45, 0, 22)),
      kTables(timed, table_1d(8, 1024, 1024, 1023), table_1d(2, 70, 70, 69)),
      kAlibi(timed, alibi(16, 1024, 1024, 0), alibi(12, 67, 67, 0)),
      kAlibi(timed, alibi(16, 1024, 1024, 1), alibi(6, 67, 67, 1)),
  };
}

}  // namespace posenc::cases
