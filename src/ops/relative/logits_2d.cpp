#include "ops/relative/logits_2d.hpp"

#include <algorithm>
#include <vector>

#include "ops/relative/gemm.hpp"
#include "ops/relative/stream.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// Heads per batched GEMM, at most: keeps enough independent GEMMs for the
// threads when the map is small.
constexpr int64_t kHeadsPerGemm = 64;

// The most bytes of decomposed logits the full 2D logits keep per calling
// thread between calls.
constexpr size_t kKeptLogitsBytes = size_t(16) << 20;

}  // namespace

void relative_logits_2d_decomposed(const ExecContext& ctx, int64_t batch, int64_t heads,
                                   int64_t height, int64_t width, int64_t dim, const float* q,
                                   const float* row_table, const float* column_table,
                                   int64_t table_heads, float* rel_h, float* rel_w) {
  const int64_t X = height, Y = width, N = X * Y;
  // A group of heads runs as one batched GEMM: with shared tables any
  // consecutive heads of the batch * heads; with per-head tables, the heads
  // of one batch entry (the table stride then follows the head).
  const bool per_head = table_heads > 1;
  const int64_t group_heads = std::min(per_head ? heads : batch * heads, kHeadsPerGemm);
  const int64_t groups_per_run = ((per_head ? heads : batch * heads) + group_heads - 1) / group_heads;
  const int64_t groups = (per_head ? batch : 1) * groups_per_run;
  const int64_t row_stride = per_head ? (2 * X - 1) * dim : 0;
  const int64_t column_stride = per_head ? (2 * Y - 1) * dim : 0;
  auto heads_of = [&](int64_t group) {
    return std::min(group_heads, (per_head ? heads : batch * heads) -
                                     group % groups_per_run * group_heads);
  };
  auto row_gemm = [&](int64_t count) {
    return query_table_shape(Y, X, dim, dim, X, GemmBatch{count, N * dim, row_stride, N * X});
  };
  auto column_gemm = [&](int64_t count) {
    return query_table_shape(X, Y, dim, Y * dim, Y * Y,
                             GemmBatch{count, N * dim, column_stride, N * Y});
  };
  const GemmSlots gemms(region_threads(ctx.num_threads, groups * (X + Y)));
  for (const int64_t group : {int64_t(0), groups_per_run - 1}) {
    gemms.prepare(row_gemm(heads_of(group)));
    gemms.prepare(column_gemm(heads_of(group)));
  }
  parallel_for(ctx.num_threads, groups * (X + Y), [&](int64_t index) {
    const int64_t group = index / (X + Y), line = index % (X + Y);
    const int64_t run = group / groups_per_run, first = group % groups_per_run * group_heads;
    const int64_t count = heads_of(group);
    const int64_t head0 = run * (per_head ? heads : 0) + first;  // b * heads + h of the first
    const float* q0 = q + head0 * N * dim;
    if (line < X) {  // map row x1 = line: rel_h of its Y queries
      const int64_t x1 = line;
      matmul(row_gemm(count), q0 + x1 * Y * dim,
             row_table + first * row_stride + (X - 1 - x1) * dim, rel_h + (head0 * N + x1 * Y) * X);
    } else {  // map column y1: rel_w of its X queries, Y rows apart
      const int64_t y1 = line - X;
      matmul(column_gemm(count), q0 + y1 * dim,
             column_table + first * column_stride + (Y - 1 - y1) * dim, rel_w + (head0 * N + y1) * Y);
    }
  });
}

void relative_logits_2d(const ExecContext& ctx, int64_t batch, int64_t heads, int64_t height,
                        int64_t width, int64_t dim, const float* q, const float* row_table,
                        const float* column_table, int64_t table_heads, float* out) {
  const int64_t X = height, Y = width, N = X * Y, rows = batch * heads * N;
  // The decomposed logits: in a buffer the calling thread keeps, up to
  // kKeptLogitsBytes; larger ones for this call only.
  const size_t bytes = size_t(rows * (X + Y)) * sizeof(float);
  std::vector<float> owned;
  if (bytes > kKeptLogitsBytes) owned.resize(size_t(rows * (X + Y)));
  float* rel_h = bytes > kKeptLogitsBytes
                     ? owned.data()
                     : reinterpret_cast<float*>(thread_buffer<struct Relative2dLogitsTag>(bytes));
  float* rel_w = rel_h + rows * X;
  relative_logits_2d_decomposed(ctx, batch, heads, height, width, dim, q, row_table,
                                column_table, table_heads, rel_h, rel_w);
  const RelativeKernels& kernels = ctx.kernels->relative;
  const auto broadcast_sum_row = stream_relative_output(rows * N * 4)
                                     ? kernels.broadcast_sum_row_stream
                                     : kernels.broadcast_sum_row;
  parallel_for(ctx.num_threads, rows, [&](int64_t row) {
    broadcast_sum_row(rel_h + row * X, X, rel_w + row * Y, Y, out + row * N);
  });
}

}  // namespace posenc::ops
