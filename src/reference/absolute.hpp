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

// torch's interpolate(mode, align_corners=False, antialias) of the grid of
// a [prefix + height*width, dim] table as a [1, dim, height, width] map,
// the prefix rows copied: every output a sum over the whole input grid of
// the two axes' weights, written from the rules of posenc/absolute.h.
std::vector<double> resize_absolute_table_2d(const posenc_absolute_resize_desc& desc,
                                             const float* in);

}  // namespace posenc::reference
