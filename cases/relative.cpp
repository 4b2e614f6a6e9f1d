// Position logits:
// - rel_to_abs, bit for bit against the pad / flatten / pad / reshape /
//   slice skew of PyTorch code, and timed against that skew on all threads;
// - 1D relative logits against the naive loops, timed against one GEMM to
//   [T, 2T-1] (posenc's oneDNN matmul) followed by that skew;
//   absolute_logits on the same shape is a oneDNN GEMM with the same FLOPs
//   and output, for comparison;
// - 2D relative logits, decomposed and full; and decomposed with SAM's
//   conventions (tables by query minus key, a key map of another size).
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cases/case.hpp"
#include "cases/timing/machine.hpp"
#include "cases/values.hpp"
#include "reference/relative.hpp"
#include "runtime/matmul.hpp"
#include "runtime/parallel.hpp"

namespace posenc::cases {
namespace {

constexpr double kF = sizeof(float);
// Logits are dot products of d values in [-1, 1): fp32 rounding stays far below.
constexpr double kTolerance = 2e-4;

struct Spec {
  int64_t batch, heads, queries, keys, dim;  // 2D: queries x keys is the map (X x Y)
  int64_t table_heads;                       // 1 (shared) or heads
  posenc_relative_options options;           // 1D only
};

std::string head(const Spec& s) {
  return "B" + std::to_string(s.batch) + " H" + std::to_string(s.heads);
}
std::string tail(const Spec& s) {
  std::string t = " d" + std::to_string(s.dim);
  if (s.table_heads > 1) t += " per-head";
  if (s.options.query_offset > 0) t += " @" + std::to_string(s.options.query_offset);
  if (s.options.clip > 0) t += " clip" + std::to_string(s.options.clip);
  if (s.options.causal) t += " causal";
  return t;
}
std::string describe_1d(const Spec& s) {
  const std::string tokens = s.queries == s.keys ? " T" + std::to_string(s.queries)
                                                 : " Tq" + std::to_string(s.queries) + " Tk" +
                                                       std::to_string(s.keys);
  return head(s) + tokens + tail(s);
}
std::string describe_2d(const Spec& s) {
  return head(s) + " " + std::to_string(s.queries) + "x" + std::to_string(s.keys) + tail(s);
}

int64_t rows_of(const Spec& s) { return s.batch * s.heads * s.queries; }

// The pad/reshape skew of `matrices` [L, 2L-1] matrices, one matrix per task on
// the ops' threads, op_threads() (as torch runs its copies on all of its own).
void pad_reshape_all(int64_t matrices, int64_t length, const float* in, float* out) {
  const int64_t workspace_floats = reference::pad_reshape_workspace(length);
#pragma omp parallel num_threads(op_threads())
  {
    std::vector<float> workspace(static_cast<size_t>(workspace_floats));
#pragma omp for schedule(static)
    for (int64_t m = 0; m < matrices; ++m) {
      reference::pad_reshape_rel_to_abs(length, in + m * length * (2 * length - 1),
                                        out + m * length * length, workspace.data());
    }
  }
}

// c[rows, columns] = a[rows, dim] x b[columns, dim]^T on the ops' threads.
void gemm_abt(int64_t rows, int64_t columns, int64_t dim, const float* a, const float* b,
              float* c) {
  MatmulShape s = dense_a_bt(rows, columns, dim);
  s.onednn_threads = onednn_team_threads(op_threads());
  matmul(s, a, b, c);
}

std::vector<double> widened(const std::vector<float>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// --- rel_to_abs: [B, H, L, 2L-1] -> [B, H, L, L].
std::string describe_skew(const Spec& s) { return head(s) + " L" + std::to_string(s.queries); }
Problem skew_problem(const Spec& s) {
  struct Buffers {
    Shared<float> in;
    std::vector<float> out;
  };
  auto b = std::make_shared<Buffers>();
  const int64_t matrices = s.batch * s.heads, length = s.queries;
  b->in = shared_floats(size_t(matrices * length * (2 * length - 1)), 11);
  b->out.assign(size_t(matrices * length * length), 0.0f);
  Problem p;
  p.write_bytes = double(b->out.size()) * kF;
  p.bytes = 2 * p.write_bytes;
  p.run = [b, s](posenc_context* ctx) {
    return posenc_rel_to_abs(ctx, s.batch, s.heads, s.queries, b->in->data(), b->out.data());
  };
  p.output = [b] { return b->out; };
  p.reference = [b, matrices, length] {
    return widened(reference::pad_reshape_rel_to_abs(matrices, length, b->in->data()));
  };
  p.baseline = [b, matrices, length] {
    pad_reshape_all(matrices, length, b->in->data(), b->out.data());
  };
  return p;
}
const Op<Spec> kSkew{"relative", "rel_to_abs", 0.0, "pad/reshape", describe_skew, skew_problem};

// q, the position table(s) and the output of the logits.
struct Logits {
  Shared<float> q, table, table_w;
  std::vector<float> out, out_w, scores;
};

std::shared_ptr<Logits> logits(const Spec& s, int64_t table_rows, int64_t out_columns) {
  auto b = std::make_shared<Logits>();
  b->q = shared_floats(size_t(rows_of(s) * s.dim), 12);
  b->table = shared_floats(size_t(s.table_heads * table_rows * s.dim), 13);
  b->out.assign(size_t(rows_of(s) * out_columns), 0.0f);
  return b;
}

// --- relative_logits_1d: a[i,j] = q_i . R[row(i, j)].
int64_t table_rows_1d(const Spec& s) {
  return reference::table_rows_1d(s.options.query_offset, s.queries, s.keys, s.options.clip);
}
// The table rows the queries of a head read, each a dot product with q:
// query i's keys' distances j - (p + i) (causal: those up to 0), clamped
// to [-K, K] where clipped.
double rows_read_1d(const Spec& s) {
  const int64_t K = s.options.clip;
  double rows = 0.0;
  for (int64_t i = 0; i < s.queries; ++i) {
    const int64_t position = s.options.query_offset + i;
    int64_t lo = -position, hi = s.keys - 1 - position;
    if (s.options.causal) hi = std::min<int64_t>(hi, 0);
    if (hi < lo) continue;
    if (K > 0) {
      lo = std::clamp(lo, -K, K);
      hi = std::clamp(hi, -K, K);
    }
    rows += double(hi - lo + 1);
  }
  return rows;
}
Problem relative_1d_problem(const Spec& s) {
  const int64_t table_rows = table_rows_1d(s);
  auto b = logits(s, table_rows, s.keys);
  Problem p;
  p.write_bytes = double(b->out.size()) * kF;
  p.bytes = double(b->q->size() + b->table->size()) * kF + p.write_bytes;
  p.flops = 2.0 * double(s.batch * s.heads) * rows_read_1d(s) * double(s.dim);
  p.run = [b, s](posenc_context* ctx) {
    return posenc_relative_logits_1d(ctx, s.batch, s.heads, s.queries, s.keys, s.dim,
                                     b->q->data(), b->table->data(), s.table_heads, &s.options,
                                     b->out.data());
  };
  p.output = [b] { return b->out; };
  p.reference = [b, s] {
    return reference::relative_logits_1d(
        s.batch, s.heads, s.queries, s.keys, s.dim, b->q->data(), b->table->data(), s.table_heads,
        {s.options.query_offset, s.options.clip, s.options.causal != 0});
  };
  const bool plain = s.queries == s.keys && s.table_heads == 1 && s.options.query_offset == 0 &&
                     s.options.clip == 0 && !s.options.causal;
  if (plain) {  // that way exists for the plain [2T-1, d] table only
    p.baseline = [b, s, table_rows] {
      b->scores.resize(size_t(rows_of(s) * table_rows));
      gemm_abt(rows_of(s), table_rows, s.dim, b->q->data(), b->table->data(), b->scores.data());
      pad_reshape_all(s.batch * s.heads, s.queries, b->scores.data(), b->out.data());
    };
  }
  return p;
}
const Op<Spec> kRelative1d{"relative", "relative_logits_1d", kTolerance,
                           "one GEMM to [T, 2T-1] + pad/reshape", describe_1d,
                           relative_1d_problem};

// --- absolute_logits: q R^T with R [keys, dim] (or per head).
Problem absolute_problem(const Spec& s) {
  auto b = logits(s, s.keys, s.keys);
  Problem p;
  p.write_bytes = double(b->out.size()) * kF;
  p.bytes = double(b->q->size() + b->table->size()) * kF + p.write_bytes;
  p.flops = 2.0 * double(rows_of(s)) * double(s.keys) * double(s.dim);
  p.run = [b, s](posenc_context* ctx) {
    return posenc_absolute_logits(ctx, s.batch, s.heads, s.queries, s.keys, s.dim, b->q->data(),
                                  b->table->data(), s.table_heads, b->out.data());
  };
  p.output = [b] { return b->out; };
  p.reference = [b, s] {
    return reference::absolute_logits(s.batch, s.heads, s.queries, s.keys, s.dim, b->q->data(),
                                      b->table->data(), s.table_heads);
  };
  return p;
}
const Op<Spec> kAbsolute{"relative", "absolute_logits", kTolerance, "", describe_1d,
                         absolute_problem};

// --- 2D: rel_h [B,H,N,X] and rel_w [B,H,N,Y], or the full bias [B,H,N,N].
// The full bias, or rel_h and rel_w one after the other.
Problem logits_2d_problem(const Spec& s, bool full) {
  const int64_t tokens = s.queries * s.keys;
  Spec rows = s;
  rows.queries = tokens;  // one query per cell
  auto b = logits(rows, 2 * s.queries - 1, full ? tokens : s.queries);
  b->table_w = shared_floats(size_t(s.table_heads * (2 * s.keys - 1) * s.dim), 14);
  if (!full) b->out_w.assign(size_t(rows_of(rows) * s.keys), 0.0f);
  Problem p;
  p.write_bytes = double(b->out.size() + b->out_w.size()) * kF;
  p.bytes = double(b->q->size() + b->table->size() + b->table_w->size()) * kF + p.write_bytes;
  // The exact products: X + Y dot products of length d per query.
  p.flops = 2.0 * double(rows_of(rows)) * double(s.queries + s.keys) * double(s.dim);
  p.run = [b, s, full](posenc_context* ctx) {
    if (full) {
      return posenc_relative_logits_2d(ctx, s.batch, s.heads, s.queries, s.keys, s.dim,
                                       b->q->data(), b->table->data(), b->table_w->data(),
                                       s.table_heads, b->out.data());
    }
    return posenc_relative_logits_2d_decomposed(ctx, s.batch, s.heads, s.queries, s.keys, s.dim,
                                                b->q->data(), b->table->data(), b->table_w->data(),
                                                s.table_heads, b->out.data(), b->out_w.data());
  };
  p.output = [b] {
    std::vector<float> both = b->out;
    both.insert(both.end(), b->out_w.begin(), b->out_w.end());
    return both;
  };
  p.reference = [b, s, full] {
    if (full) {
      return reference::relative_logits_2d(s.batch, s.heads, s.queries, s.keys, s.dim,
                                           b->q->data(), b->table->data(), b->table_w->data(),
                                           s.table_heads);
    }
    reference::Relative2d r = reference::relative_logits_2d_decomposed(
        s.batch, s.heads, s.queries, s.keys, s.dim, b->q->data(), b->table->data(),
        b->table_w->data(), s.table_heads);
    r.rel_h.insert(r.rel_h.end(), r.rel_w.begin(), r.rel_w.end());
    return r.rel_h;
  };
  return p;
}
Problem decomposed_problem(const Spec& s) { return logits_2d_problem(s, false); }
Problem full_2d_problem(const Spec& s) { return logits_2d_problem(s, true); }
const Op<Spec> kDecomposed{"relative", "relative_logits_2d_decomposed", kTolerance, "",
                           describe_2d, decomposed_problem};
const Op<Spec> kFull2d{"relative", "relative_logits_2d", kTolerance, "", describe_2d,
                       full_2d_problem};

// --- relative_logits_2d_maps: rel_h [B,H,N,X'] and rel_w [B,H,N,Y'] of a
// query map X x Y against a key map X' x Y', one after the other.
struct MapsSpec {
  int64_t batch, heads, height, width, kv_height, kv_width, dim, table_heads;
  posenc_relative_order order;

  posenc_relative_2d_desc desc() const {
    posenc_relative_2d_desc d;
    posenc_relative_2d_desc_init(&d, batch, heads, height, width, dim);
    d.kv_map_height = kv_height;
    d.kv_map_width = kv_width;
    d.table_heads = table_heads;
    d.relative_order = order;
    return d;
  }
  reference::Axis2d axis_h() const {
    return {height, kv_height, order == POSENC_RELATIVE_QUERY_MINUS_KEY};
  }
  reference::Axis2d axis_w() const {
    return {width, kv_width, order == POSENC_RELATIVE_QUERY_MINUS_KEY};
  }
};

std::string describe_maps(const MapsSpec& s) {
  auto size = [](int64_t x, int64_t y) { return std::to_string(x) + "x" + std::to_string(y); };
  return "B" + std::to_string(s.batch) + " H" + std::to_string(s.heads) + " " +
         size(s.height, s.width) + " vs " + size(s.kv_height, s.kv_width) + " d" +
         std::to_string(s.dim) + (s.table_heads > 1 ? " per-head" : "") +
         (s.order == POSENC_RELATIVE_QUERY_MINUS_KEY ? " q-k" : " k-q");
}

Problem maps_problem(const MapsSpec& s) {
  const int64_t rows = s.batch * s.heads * s.height * s.width;
  auto b = std::make_shared<Logits>();
  b->q = shared_floats(size_t(rows * s.dim), 12);
  b->table = shared_floats(size_t(s.table_heads * s.axis_h().rows() * s.dim), 13);
  b->table_w = shared_floats(size_t(s.table_heads * s.axis_w().rows() * s.dim), 14);
  b->out.assign(size_t(rows * s.kv_height), 0.0f);
  b->out_w.assign(size_t(rows * s.kv_width), 0.0f);
  Problem p;
  p.write_bytes = double(b->out.size() + b->out_w.size()) * kF;
  p.bytes = double(b->q->size() + b->table->size() + b->table_w->size()) * kF + p.write_bytes;
  p.flops = 2.0 * double(rows) * double(s.kv_height + s.kv_width) * double(s.dim);
  p.run = [b, s](posenc_context* ctx) {
    const posenc_relative_2d_desc d = s.desc();
    return posenc_relative_logits_2d_maps(ctx, &d, b->q->data(), b->table->data(),
                                          b->table_w->data(), b->out.data(), b->out_w.data());
  };
  p.output = [b] {
    std::vector<float> both = b->out;
    both.insert(both.end(), b->out_w.begin(), b->out_w.end());
    return both;
  };
  p.reference = [b, s] {
    reference::Relative2d r = reference::relative_logits_2d_maps(
        s.batch, s.heads, s.axis_h(), s.axis_w(), s.dim, b->q->data(), b->table->data(),
        b->table_w->data(), s.table_heads);
    r.rel_h.insert(r.rel_h.end(), r.rel_w.begin(), r.rel_w.end());
    return r.rel_h;
  };
  return p;
}
const Op<MapsSpec> kMaps2d{"relative", "relative_logits_2d_maps", kTolerance, "",
                           describe_maps, maps_problem};
constexpr auto kQueryMinusKey = POSENC_RELATIVE_QUERY_MINUS_KEY;

// Shapes: [B, H, T, T] logits with a shared table, or a B x H x X x Y map.
Spec plain(int64_t batch, int64_t heads, int64_t tokens, int64_t dim) {
  return {batch, heads, tokens, tokens, dim, 1, {0, 0, 0}};
}
Spec with(Spec s, int64_t table_heads, posenc_relative_options options) {
  s.table_heads = table_heads;
  s.options = options;
  return s;
}
Spec map(int64_t batch, int64_t heads, int64_t height, int64_t width, int64_t dim,
         int64_t table_heads = 1) {
  return {batch, heads, height, width, dim, table_heads, {0, 0, 0}};
}

}  // namespace

std::vector<Case> relative_cases() {
  const std::vector<std::string> timed{"bench", "demo"};
  return {
      kSkew({"check"}, plain(1, 3, 65, 0)),
      kRelative1d({"check"}, with(plain(1, 2, 257, 80), 1, {5, 40, 1})),
      kFull2d({"check"}, map(1, 2, 7, 5, 64, 2)),
      kMaps2d({"check"}, MapsSpec{1, 2, 2, 3, 4, 6, 16, 2, kQueryMinusKey}),
      kSkew({}, plain(2, 4, 70, 0)),
      kRelative1d({}, with(plain(2, 4, 70, 40), 4, {3, 20, 1})),
      kAbsolute({"check"}, with(plain(2, 4, 70, 40), 4, {0, 0, 0})),
      kFull2d({}, map(2, 4, 7, 10, 40, 4)),
      // Per-head tables over 5 heads: oneDNN split these GEMMs' work when
      // their primitives were made for more threads than a task runs on
      // (MatmulShape::onednn_threads), and the bits followed the thread count.
      kDecomposed({"check"}, map(2, 5, 6, 5, 40, 5)),
      kMaps2d({}, MapsSpec{2, 5, 6, 5, 6, 5, 40, 5, kQueryMinusKey}),
      kSkew(timed, plain(2, 8, 512, 0), plain(1, 3, 67, 0)),
      kSkew(timed, plain(1, 8, 2048, 0), plain(2, 2, 130, 0)),
      kRelative1d(timed, plain(2, 8, 512, 64), plain(1, 2, 67, 64)),
      kAbsolute({"bench"}, plain(2, 8, 512, 64), plain(1, 2, 67, 64)),
      kRelative1d(timed, plain(1, 8, 2048, 64), plain(1, 3, 131, 48)),
      kAbsolute({"bench"}, plain(1, 8, 2048, 64), plain(1, 3, 131, 48)),
      kDecomposed(timed, map(8, 4, 14, 14, 128), map(2, 3, 5, 7, 40)),
      kFull2d(timed, map(8, 4, 14, 14, 128), map(2, 3, 7, 5, 40)),
      kDecomposed(timed, map(1, 4, 64, 64, 64), map(1, 2, 9, 13, 64, 2)),
      kFull2d(timed, map(1, 4, 64, 64, 64), map(1, 2, 13, 9, 64, 2)),
      // SAM's global attention (64x64, its tables as stored), and a 14x14
      // query map against a 28x28 key map; beside the decomposed rows above.
      kMaps2d(timed, MapsSpec{1, 4, 64, 64, 64, 64, 64, 1, kQueryMinusKey},
              MapsSpec{1, 2, 9, 13, 9, 13, 64, 2, kQueryMinusKey}),
      kMaps2d(timed, MapsSpec{8, 4, 14, 14, 28, 28, 128, 1, kQueryMinusKey},
              MapsSpec{2, 3, 5, 7, 9, 4, 40, 1, kQueryMinusKey}),
  };
}

}  // namespace posenc::cases
