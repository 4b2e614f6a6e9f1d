/* Absolute position encodings: sinusoidal tables, adding encodings or a
 * learned table to embeddings, and concatenating them (as Perceiver IO
 * does with its own Fourier features).
 *
 * Sinusoid of dimension D and base n: frequency i (i = 0 .. ceil(D/2)-1) is
 * w_i = n^(-2i/D); position k has sin(k w_i) and cos(k w_i). Layout:
 * - INTERLEAVED (Vaswani et al., PyTorch tutorials): column 2i holds
 *   sin(k w_i), column 2i+1 holds cos(k w_i).
 * - SPLIT (MAE's get_1d_sincos_pos_embed_from_grid): columns 0..ceil(D/2)-1
 *   hold the sines, the remaining floor(D/2) columns the cosines.
 *   tensor2tensor's get_timing_signal_1d (and fairseq's sinusoids) lay out
 *   sines then cosines too but space their frequencies n^(-i/(D/2-1)),
 *   which base n^(D/(D-2)) gives for an even D, and zero an odd D's last
 *   column.
 * For odd D the last frequency has only its sine (the cosine would fall past
 * column D-1). Angles are reduced in double precision and then rounded to
 * fp32 for fp32 sin/cos, so values stay within 2.5e-7 (absolute) of the
 * exact ones for positions up to 2^28 and 5e-7 up to 2^30 (the reduced
 * angle's fp32 rounding and sin/cos's own error, about 1.8e-7, plus the
 * double reduction's, which grows with k: w_i's and k w_i's roundings and
 * the multiple of 2 pi taken off, each about k 2^-53). These bounds are for
 * base >= 1, where every w_i <= 1; a base below 1 has frequencies up to
 * 1/base, and the reduction's error then grows with k / base instead.
 * Positions are below 2^53 (double holds every integer there): a sinusoid's
 * start + length, or offset + tokens, above 2^53 is
 * POSENC_ERROR_INVALID_ARGUMENT.
 *
 * Empty calls (posenc/core.h): length, height, width, batch, tokens and
 * table_rows may be 0; dim, x_dim and pos_dim stay >= 1.
 */
#ifndef POSENC_ABSOLUTE_H
#define POSENC_ABSOLUTE_H

#include "posenc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posenc_sincos_layout {
  POSENC_SINCOS_INTERLEAVED = 0,
  POSENC_SINCOS_SPLIT = 1,
  POSENC_SINCOS_LAYOUT_MAX_ENUM = 0x7FFFFFFF
} posenc_sincos_layout;

/* Sinusoidal table out[length, dim] for positions start .. start+length-1.
 * length >= 0, start >= 0; base >= 2^-64 and finite, not 1 (10000 is the
 * usual value); out_dtype F32 (float) or BF16 (uint16_t). */
POSENC_API posenc_status posenc_sinusoid_table(
    posenc_context* context, int64_t length, int64_t dim, int64_t start,
    double base, posenc_sincos_layout layout, posenc_dtype out_dtype, void* out);

/* 2D sin-cos table out[height*width, dim] for an height-by-width feature map,
 * token n = x*width + y: columns [0, dim/2) are the 1D sinusoid (dim/2, base,
 * layout) of the row x, columns [dim/2, dim) that of the column y. dim must be
 * even; height, width >= 0. MAE's get_2d_sincos_pos_embed (SPLIT) puts the
 * column's half first: its table is this one with each row's halves swapped.
 * timm's build_sincos2d_pos_embed with interleave_sin_cos=True is this
 * table, SPLIT (its default orders the quarters otherwise). */
POSENC_API posenc_status posenc_sinusoid_table_2d(
    posenc_context* context, int64_t height, int64_t width, int64_t dim,
    double base, posenc_sincos_layout layout, posenc_dtype out_dtype, void* out);

/* out[b,t,:] = x[b,t,:] + P[offset+t, :] for x, out of [batch, tokens, dim],
 * P the sinusoid above (computed on the fly, no table is built); batch,
 * tokens >= 0. offset >= 0 is the position of token 0 (decoding with a
 * cache). out == x is allowed (in place); any other overlap is
 * POSENC_ERROR_ALIASING. */
POSENC_API posenc_status posenc_add_sinusoid(
    posenc_context* context, int64_t batch, int64_t tokens, int64_t dim,
    int64_t offset, double base, posenc_sincos_layout layout, const float* x,
    float* out);

/* out[b,t,:] = x[b,t,:] + table[offset+t, :], table of [table_rows, dim];
 * batch, tokens, table_rows >= 0, offset + tokens <= table_rows. out == x
 * allowed; the table must not overlap out. */
POSENC_API posenc_status posenc_add_learned(
    posenc_context* context, int64_t batch, int64_t tokens, int64_t dim,
    int64_t offset, const float* table, int64_t table_rows, const float* x,
    float* out);

/* out[b,t,:] = [x[b,t,:], P[offset+t,:]]: x of [batch, tokens, x_dim], the
 * sinusoid of pos_dim columns appended, out of [batch, tokens, x_dim+pos_dim];
 * batch, tokens >= 0. out must not overlap x. */
POSENC_API posenc_status posenc_concat_sinusoid(
    posenc_context* context, int64_t batch, int64_t tokens, int64_t x_dim,
    int64_t pos_dim, int64_t offset, double base, posenc_sincos_layout layout,
    const float* x, float* out);

/* Interpolation of posenc_resize_absolute_table_2d, as
 * torch.nn.functional.interpolate's modes of those names. */
typedef enum posenc_interpolation {
  POSENC_INTERPOLATION_BICUBIC = 0,
  POSENC_INTERPOLATION_BILINEAR = 1,
  POSENC_INTERPOLATION_MAX_ENUM = 0x7FFFFFFF
} posenc_interpolation;

/* Added in 0.8. A learned absolute table of a height x width grid resized
 * to new_height x new_width, as a ViT trained at one image size runs at
 * another: timm's resample_abs_pos_embed (at each call of a model with
 * dynamic_img_size), DINOv2's and transformers' interpolate_pos_encoding. */
typedef struct posenc_absolute_resize_desc {
  int64_t dim;                   /* >= 1: columns of a row */
  int64_t prefix_tokens;         /* >= 0: rows before the grid (class, register
                                    tokens), copied unchanged */
  int64_t height, width;         /* >= 1: the grid the table holds */
  int64_t new_height, new_width; /* >= 0 */
  posenc_interpolation interpolation;
  int antialias;                 /* 0 or 1 */
  double height_scale, width_scale; /* 0, or torch's scale_factor (> 0, finite) */
} posenc_absolute_resize_desc;

/* Fills *desc with the sizes and timm's defaults: one prefix token (the
 * class token), BICUBIC, antialias 1, scales 0. Does nothing if desc is
 * NULL. With antialias 0 it is transformers' ViT interpolate_pos_encoding
 * (bicubic by sizes; DINOv2's original code passes scales). */
POSENC_API void posenc_absolute_resize_desc_init(posenc_absolute_resize_desc* desc,
                                                 int64_t dim, int64_t height, int64_t width,
                                                 int64_t new_height, int64_t new_width);

/* in [prefix_tokens + height*width, dim] to out [prefix_tokens +
 * new_height*new_width, dim], grid cell (y, x) at row prefix_tokens +
 * y*width + x: the prefix rows copied, each column of the grid resized as
 * torch.nn.functional.interpolate(mode, align_corners=False, antialias)
 * resizes a [1, dim, height, width] map. Along an axis of n inputs and m
 * outputs, with s = n/m, or 1/scale where a scale is given (torch's
 * scale_factor, which must then give m = floor(n * scale) as interpolate
 * computes it; DINOv2 passes (m + 0.1)/n), output o reads:
 * - without antialias, source coordinate u = (o + 0.5) s - 0.5:
 *   BILINEAR the inputs floor(u') and the next, u' = max(u, 0), weights
 *   1 - f and f (f = u' - floor(u')); BICUBIC the 4 inputs floor(u) - 1 ..
 *   floor(u) + 2 with Keys' cubic weights (A = -0.75) at distances 1 + f,
 *   f, 1 - f, 2 - f (f = u - floor(u)); indices clamped to [0, n). BILINEAR
 *   with m = n reads input o with weight 1 (and again with 0), whatever the
 *   scale, as torch does.
 * - with antialias (Pillow's filters): center c = (o + 0.5) s, support r =
 *   R max(s, 1) (R = 1 BILINEAR, 2 BICUBIC); the inputs i from
 *   max(trunc(c - r + 0.5), 0) up to, not including, min(trunc(c + r +
 *   0.5), n), weighted by filter((i - c + 0.5) / max(s, 1)) normalized to
 *   sum 1: the triangle max(1 - |x|, 0), or the cubic with A = -0.5. An
 *   axis with m = n is copied, whatever the scale, as torch 2 does (1.13
 *   resampled it by the scale).
 * Each input a tap reads is multiplied by its weight, 0 included, as in
 * torch: a non-finite input reaches every output that reads it (inf * 0 is
 * NaN). Computed in double and rounded once: within 1e-7 of the values'
 * scale of torch's interpolate in float64; its float32 kernels compute the
 * coordinates and weights in float32, which moves their results by up to
 * about 1e-5 of the values' scale at sizes of a few dozen. An equal size
 * without a scale is an identity for finite values. out must not overlap
 * in. */
POSENC_API posenc_status posenc_resize_absolute_table_2d(posenc_context* context,
                                                         const posenc_absolute_resize_desc* desc,
                                                         const float* in, float* out);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_ABSOLUTE_H */
