#include "ops/relative/logits_2d.hpp"

#include <algorithm>
#include <memory>

#include "ops/relative/gemm.hpp"
#include "ops/stream_output.hpp"
#include "runtime/ceil_div.hpp"
#include "runtime/parallel.hpp"
#include "runtime/store_fence.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// Heads per batched GEMM, at most: keeps enough independent GEMMs for the
// threads when the map is small.
constexpr int64_t kHeadsPerGemm = 64;

// The most bytes of decomposed logits the full 2D logits keep per calling
// thread between calls.
constexpr size_t kKeptLogitsBytes = size_t(16) << 20;

// The table rows one query coordinate reads along an axis, in key order, for
// each of a group's tables (`table_stride` apart, 0 if shared): in place
// when they are a window of the table, else gathered by the axis's row rule.
struct AxisRows {
  RelativeAxis axis;
  int64_t dim, table_stride;

  // The GEMM's stride between the tables of a group's heads.
  int64_t gemm_stride() const {
    return axis.is_window() || table_stride == 0 ? table_stride : axis.k * dim;
  }
  int64_t scratch_floats(int64_t tables) const {
    return axis.is_window() ? 0 : tables * axis.k * dim;
  }
  // The rows of query coordinate a in the `tables` tables from `table` on.
  const float* of(int64_t a, const float* table, int64_t tables, float* scratch) const {
    if (axis.is_window()) return table + axis.shift(a) * dim;
    for (int64_t t = 0; t < tables; ++t) {
      for (int64_t c = 0; c < axis.k; ++c) {
        std::copy_n(table + t * table_stride + axis.row(a, c) * dim, dim,
                    scratch + (t * axis.k + c) * dim);
      }
    }
    return scratch;
  }
};

}  // namespace

void relative_logits_2d_decomposed(const ExecContext& ctx, int64_t batch, int64_t heads,
                                   const RelativeAxis& axis_h, const RelativeAxis& axis_w,
                                   int64_t dim, const float* q, const float* row_table,
                                   const float* column_table, int64_t table_heads,
                                   float* rel_h, float* rel_w) {
  const int64_t X = axis_h.q, Y = axis_w.q, N = X * Y, KX = axis_h.k, KY = axis_w.k;
  // A group of heads runs as one batched GEMM: with shared tables any
  // consecutive heads of the batch * heads; with per-head tables, the heads
  // of one batch entry (the table stride then follows the head).
  const bool per_head = table_heads > 1;
  const int64_t group_heads = std::min(per_head ? heads : batch * heads, kHeadsPerGemm);
  const int64_t groups_per_run = ceil_div(per_head ? heads : batch * heads, group_heads);
  const int64_t groups = (per_head ? batch : 1) * groups_per_run;
  const int64_t row_stride = per_head ? axis_h.rows() * dim : 0;
  const int64_t column_stride = per_head ? axis_w.rows() * dim : 0;
  const AxisRows rows_h{axis_h, dim, row_stride}, rows_w{axis_w, dim, column_stride};
  auto heads_of = [&](int64_t group) {
    return std::min(group_heads, (per_head ? heads : batch * heads) -
                                     group % groups_per_run * group_heads);
  };
  auto row_gemm = [&](int64_t count) {
    return query_table_shape(Y, KX, dim, dim, KX,
                             GemmBatch{count, N * dim, rows_h.gemm_stride(), N * KX});
  };
  auto column_gemm = [&](int64_t count) {
    return query_table_shape(X, KY, dim, Y * dim, Y * KY,
                             GemmBatch{count, N * dim, rows_w.gemm_stride(), N * KY});
  };
  const int threads = region_threads(ctx.num_threads, groups * (X + Y));
  const int64_t tables = per_head ? group_heads : 1;
  const RegionScratch<float, struct Relative2dRowsTag> scratch(
      threads, std::max(rows_h.scratch_floats(tables), rows_w.scratch_floats(tables)));
  const GemmSlots gemms(threads);
  for (const int64_t group : {int64_t(0), groups_per_run - 1}) {
    gemms.prepare(row_gemm(heads_of(group)));
    gemms.prepare(column_gemm(heads_of(group)));
  }
  parallel_for(ctx.num_threads, groups * (X + Y), [&](int64_t index, int slot) {
    const int64_t group = index / (X + Y), line = index % (X + Y);
    const int64_t run = group / groups_per_run, first = group % groups_per_run * group_heads;
    const int64_t count = heads_of(group);
    const int64_t head0 = run * (per_head ? heads : 0) + first;  // b * heads + h of the first
    const float* q0 = q + head0 * N * dim;
    const int64_t group_tables = per_head ? count : 1;
    if (line < X) {  // map row x1 = line: rel_h of its Y queries
      const int64_t x1 = line;
      matmul(row_gemm(count), q0 + x1 * Y * dim,
             rows_h.of(x1, row_table + first * row_stride, group_tables, scratch.slot(slot)),
             rel_h + (head0 * N + x1 * Y) * KX);
    } else {  // map column y1: rel_w of its X queries, Y rows apart
      const int64_t y1 = line - X;
      matmul(column_gemm(count), q0 + y1 * dim,
             rows_w.of(y1, column_table + first * column_stride, group_tables,
                       scratch.slot(slot)),
             rel_w + (head0 * N + y1) * KY);
    }
  });
}

void relative_logits_2d_decomposed(const ExecContext& ctx, int64_t batch, int64_t heads,
                                   int64_t height, int64_t width, int64_t dim, const float* q,
                                   const float* row_table, const float* column_table,
                                   int64_t table_heads, float* rel_h, float* rel_w) {
  relative_logits_2d_decomposed(ctx, batch, heads, RelativeAxis{height, height, false},
                                RelativeAxis{width, width, false}, dim, q, row_table,
                                column_table, table_heads, rel_h, rel_w);
}

void relative_logits_2d(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t height,
                        int64_t width, int64_t dim, const float* q, const float* row_table,
                        const float* column_table, int64_t table_heads, float* out) {
  const int64_t X = height, Y = width, N = X * Y, rows = batch * heads * N;
  // The decomposed logits: kept by the calling thread up to kKeptLogitsBytes.
  std::unique_ptr<uint8_t[]> owned;
  auto* rel_h = reinterpret_cast<float*>(call_memory<struct Relative2dLogitsTag>(
      size_t(rows * (X + Y)) * sizeof(float), kKeptLogitsBytes, owned));
  float* rel_w = rel_h + rows * X;
  relative_logits_2d_decomposed(ctx, batch, heads, height, width, dim, q, row_table,
                                column_table, table_heads, rel_h, rel_w);
  const RelativeKernels& kernels = ctx.kernels->relative;
  const bool stream = stream_output(rows * N * 4);
  const auto broadcast_sum_row =
      stream ? kernels.broadcast_sum_row_stream : kernels.broadcast_sum_row;
  parallel_for(ctx.num_threads, rows, [&](int64_t row) {
    broadcast_sum_row(rel_h + row * X, X, rel_w + row * Y, Y, out + row * N);
    if (stream) store_fence();
  });
}

}  // namespace posenc::ops
