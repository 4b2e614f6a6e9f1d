// Reference loops for the absolute encodings (posenc/absolute.h), in double.
#pragma once

#include <cstdint>
#include <vector>

#include "posenc/absolute.h"

namespace posenc::reference {

std::vector<double> sinusoid_table(int64_t length, int64_t dim, int64_t start, double base,
                                   posenc_sincos_layout layout);

std::vector<double> sinusoid_table_2d(int64_t height, int64_t width, int64_t dim, double base,
                                      posenc_sincos_layout layout);

std::vector<double> add_sinusoid(int64_t batch, int64_t tokens, int64_t dim, int64_t offset,
                                 double base, posenc_sincos_layout layout, const float* x);

std::vector<double> add_learned(int64_t batch, int64_t tokens, int64_t dim, int64_t offset,
                                const float* table, const float* x);

std::vector<double> concat_sinusoid(int64_t batch, int64_t tokens, int64_t x_dim,
                                    int64_t pos_dim, int64_t offset, double base,
                                    posenc_sincos_layout layout, const float* x);

}  // namespace posenc::reference
