#include "ops/absolute/encodings.hpp"

#include <cstring>

#include "ops/absolute/frequencies.hpp"
#include "runtime/parallel.hpp"
#include "runtime/workspace.hpp"

namespace posenc::ops {
namespace {

// The inverse frequencies of `dim` columns, in the calling thread's buffer.
using Frequencies = CallScratch<double, struct FrequenciesTag>;
Frequencies frequencies(const ExecContext& ctx, int64_t dim, double base) {
  Frequencies freqs(size_t((dim + 1) / 2), ctx.num_threads);
  inverse_frequencies(dim, base, freqs.get());
  return freqs;
}

// One row of `size` floats per thread of a region of `count` tasks.
using RowScratch = RegionScratch<float, struct EncodingRowTag>;
RowScratch row_scratch(const ExecContext& ctx, int64_t count, int64_t size) {
  return RowScratch(region_threads(ctx.num_threads, count), size);
}

// Writes `count` floats of `row` into element `index` of out (as out_dtype).
void store_row(const ExecContext& ctx, const float* row, int64_t count, posenc_dtype out_dtype,
               void* out, int64_t index) {
  if (out_dtype == POSENC_BF16) {
    ctx.kernels->elementwise.f32_to_bf16(row, static_cast<uint16_t*>(out) + index, count);
  } else {
    std::memcpy(static_cast<float*>(out) + index, row, size_t(count) * sizeof(float));
  }
}

}  // namespace

void sinusoid_table(const ExecContext& ctx, int64_t length, int64_t dim, int64_t start,
                    double base, posenc_sincos_layout layout, posenc_dtype out_dtype,
                    void* out) {
  const Frequencies freqs = frequencies(ctx, dim, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  // bf16 rows are made in fp32 first; fp32 ones in out.
  const RowScratch rows(out_dtype == POSENC_BF16 ? region_threads(ctx.num_threads, length) : 0,
                        dim);
  parallel_for(ctx.num_threads, length, [&](int64_t k, int slot) {
    if (out_dtype == POSENC_F32) {
      sinusoid_row(start + k, freqs.get(), dim, layout, static_cast<float*>(out) + k * dim);
    } else {
      float* row = rows.slot(slot);
      sinusoid_row(start + k, freqs.get(), dim, layout, row);
      store_row(ctx, row, dim, out_dtype, out, k * dim);
    }
  });
}

void sinusoid_table_2d(const ExecContext& ctx, int64_t height, int64_t width, int64_t dim,
                       double base, posenc_sincos_layout layout, posenc_dtype out_dtype,
                       void* out) {
  const int64_t half = dim / 2;
  const Frequencies freqs = frequencies(ctx, half, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  const CallScratch<float, struct ColumnTableTag> columns(size_t(width * half), ctx.num_threads);
  float* column_table = columns.get();
  for (int64_t y = 0; y < width; ++y) {
    sinusoid_row(y, freqs.get(), half, layout, column_table + y * half);
  }
  const RowScratch rows = row_scratch(ctx, height, dim);
  parallel_for(ctx.num_threads, height, [&](int64_t x, int slot) {
    float* row = rows.slot(slot);
    sinusoid_row(x, freqs.get(), half, layout, row);
    for (int64_t y = 0; y < width; ++y) {
      std::memcpy(row + half, column_table + y * half, size_t(half) * sizeof(float));
      store_row(ctx, row, dim, out_dtype, out, (x * width + y) * dim);
    }
  });
}

void add_sinusoid(const ExecContext& ctx, int64_t batch, int64_t tokens, int64_t dim,
                  int64_t offset, double base, posenc_sincos_layout layout, const float* x,
                  float* out) {
  const Frequencies freqs = frequencies(ctx, dim, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  const auto add = ctx.kernels->elementwise.add_f32;
  const RowScratch rows = row_scratch(ctx, tokens, dim);
  parallel_for(ctx.num_threads, tokens, [&](int64_t t, int slot) {
    float* encoding = rows.slot(slot);
    sinusoid_row(offset + t, freqs.get(), dim, layout, encoding);
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t row = (b * tokens + t) * dim;
      add(x + row, encoding, out + row, dim);
    }
  });
}

void add_learned(const ExecContext& ctx, int64_t batch, int64_t tokens, int64_t dim,
                 int64_t offset, const float* table, const float* x, float* out) {
  const auto add = ctx.kernels->elementwise.add_f32;
  parallel_for(ctx.num_threads, batch * tokens, [&](int64_t row) {
    const int64_t t = row % tokens;
    add(x + row * dim, table + (offset + t) * dim, out + row * dim, dim);
  });
}

void concat_sinusoid(const ExecContext& ctx, int64_t batch, int64_t tokens, int64_t x_dim,
                     int64_t pos_dim, int64_t offset, double base,
                     posenc_sincos_layout layout, const float* x, float* out) {
  const Frequencies freqs = frequencies(ctx, pos_dim, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  const int64_t out_dim = x_dim + pos_dim;
  const RowScratch rows = row_scratch(ctx, tokens, pos_dim);
  parallel_for(ctx.num_threads, tokens, [&](int64_t t, int slot) {
    float* encoding = rows.slot(slot);
    sinusoid_row(offset + t, freqs.get(), pos_dim, layout, encoding);
    for (int64_t b = 0; b < batch; ++b) {
      float* dst = out + (b * tokens + t) * out_dim;
      std::memcpy(dst, x + (b * tokens + t) * x_dim, size_t(x_dim) * sizeof(float));
      std::memcpy(dst + x_dim, encoding, size_t(pos_dim) * sizeof(float));
    }
  });
}

}  // namespace posenc::ops
