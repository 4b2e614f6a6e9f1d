#include "ops/absolute/encodings.hpp"

#include <cstring>
#include <vector>

#include "ops/absolute/frequencies.hpp"
#include "runtime/parallel.hpp"

namespace posenc::ops {
namespace {

// A per-thread row buffer, reused across calls.
float* scratch_row(int64_t size) {
  thread_local std::vector<float> row;
  if (int64_t(row.size()) < size) row.resize(size_t(size));
  return row.data();
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
  const std::vector<double> freqs = inverse_frequencies(dim, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  parallel_for(ctx.num_threads, length, [&](int64_t k) {
    if (out_dtype == POSENC_F32) {
      sinusoid_row(start + k, freqs.data(), dim, layout, static_cast<float*>(out) + k * dim);
    } else {
      float* row = scratch_row(dim);
      sinusoid_row(start + k, freqs.data(), dim, layout, row);
      store_row(ctx, row, dim, out_dtype, out, k * dim);
    }
  });
}

void sinusoid_table_2d(const ExecContext& ctx, int64_t height, int64_t width, int64_t dim,
                       double base, posenc_sincos_layout layout, posenc_dtype out_dtype,
                       void* out) {
  const int64_t half = dim / 2;
  const std::vector<double> freqs = inverse_frequencies(half, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  std::vector<float> column_table(size_t(width * half));
  for (int64_t y = 0; y < width; ++y) {
    sinusoid_row(y, freqs.data(), half, layout, column_table.data() + y * half);
  }
  parallel_for(ctx.num_threads, height, [&](int64_t x) {
    float* row = scratch_row(dim);
    sinusoid_row(x, freqs.data(), half, layout, row);
    for (int64_t y = 0; y < width; ++y) {
      std::memcpy(row + half, column_table.data() + y * half, size_t(half) * sizeof(float));
      store_row(ctx, row, dim, out_dtype, out, (x * width + y) * dim);
    }
  });
}

void add_sinusoid(const ExecContext& ctx, int64_t batch, int64_t tokens, int64_t dim,
                  int64_t offset, double base, posenc_sincos_layout layout, const float* x,
                  float* out) {
  const std::vector<double> freqs = inverse_frequencies(dim, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  const auto add = ctx.kernels->elementwise.add_f32;
  parallel_for(ctx.num_threads, tokens, [&](int64_t t) {
    float* encoding = scratch_row(dim);
    sinusoid_row(offset + t, freqs.data(), dim, layout, encoding);
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
  const std::vector<double> freqs = inverse_frequencies(pos_dim, base);
  const auto sinusoid_row = ctx.kernels->absolute.sinusoid_row;
  const int64_t out_dim = x_dim + pos_dim;
  parallel_for(ctx.num_threads, tokens, [&](int64_t t) {
    float* encoding = scratch_row(pos_dim);
    sinusoid_row(offset + t, freqs.data(), pos_dim, layout, encoding);
    for (int64_t b = 0; b < batch; ++b) {
      float* dst = out + (b * tokens + t) * out_dim;
      std::memcpy(dst, x + (b * tokens + t) * x_dim, size_t(x_dim) * sizeof(float));
      std::memcpy(dst + x_dim, encoding, size_t(pos_dim) * sizeof(float));
    }
  });
}

}  // namespace posenc::ops
