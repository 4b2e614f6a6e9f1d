// Absolute encodings: arguments are validated by the caller (api/absolute.cpp).
#pragma once

#include <cstdint>

#include "posenc/absolute.h"
#include "runtime/context.hpp"

namespace posenc::ops {

void sinusoid_table(const ExecContext& ctx, int64_t length, int64_t dim, int64_t start,
                    double base, posenc_sincos_layout layout, posenc_dtype out_dtype,
                    void* out);

void sinusoid_table_2d(const ExecContext& ctx, int64_t height, int64_t width, int64_t dim,
                       double base, posenc_sincos_layout layout, posenc_dtype out_dtype,
                       void* out);

void add_sinusoid(const ExecContext& ctx, int64_t batch, int64_t tokens, int64_t dim,
                  int64_t offset, double base, posenc_sincos_layout layout, const float* x,
                  float* out);

void add_learned(const ExecContext& ctx, int64_t batch, int64_t tokens, int64_t dim,
                 int64_t offset, const float* table, const float* x, float* out);

void concat_sinusoid(const ExecContext& ctx, int64_t batch, int64_t tokens, int64_t x_dim,
                     int64_t pos_dim, int64_t offset, double base,
                     posenc_sincos_layout layout, const float* x, float* out);

}  // namespace posenc::ops
