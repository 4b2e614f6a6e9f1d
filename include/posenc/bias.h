/* Position biases that need no q: learned relative bias tables (Swin v1,
 * BEiT, timm's RelPosBias; and per-head 1D tables), T5's bucketed bias and
 * ALiBi, written as the dense bias [heads, q_len, kv_len] that a model adds
 * to its attention scores; ALiBi's standard slopes; and the resizing of
 * relative tables (SAM's get_rel_pos, the 2D bias table of a Swin model
 * fine-tuned at another window size). The resizes are small: they run on the
 * calling thread and take no context.
 *
 * Positions: key j sits at position j and query i at query_offset + i; the
 * distance is key minus query, d(i,j) = j - (query_offset + i), for every
 * kind but the 2D table, which follows Swin (query minus key, below).
 *
 * Kinds (each weight tensor is loaded exactly as the model stores it):
 * - TABLE_2D (Swin v1, timm RelPosBias / WindowAttention): tokens are the
 *   cells of a window_height x window_width window (Wh x Ww), token
 *   n = y*Ww + x, q_len = kv_len = Wh*Ww. table is
 *   relative_position_bias_table, [(2Wh-1)(2Ww-1), heads], and
 *     bias[h,i,j] = table[index(i,j), h],
 *     index(i,j) = (dy + Wh - 1) * (2Ww - 1) + (dx + Ww - 1)
 *   with (dy, dx) = coordinates of query i minus those of key j (Swin's
 *   relative_position_index). With class_token = 1 (BEiT, timm's Beit
 *   with use_rel_pos_bias): token 0 is the class token, token n > 0 is cell
 *   n - 1, q_len = kv_len = Wh*Ww + 1, and the table has 3 more rows,
 *   L = (2Wh-1)(2Ww-1): row L for class to token (query 0, key j > 0),
 *   L + 1 for token to class (query i > 0, key 0), L + 2 for class to class.
 *   query_offset must be 0.
 * - TABLE_1D (per-head scalars, no q): table [heads, 2K+1] with
 *   K = max_distance in [0, 2^40] (a table over 2T-1 distances has
 *   K = T - 1):
 *     bias[h,i,j] = table[h, clamp(d(i,j), -K, K) + K];
 *   row K is distance 0, row K + 1 the key one position after the query;
 *   distances beyond +-K take the edge rows (Shaw et al.'s clipping). The
 *   rows follow the key-minus-query order of posenc's 1D relative logits
 *   (posenc/relative.h, clipped); a table stored in query-minus-key order
 *   has its rows reversed.
 * - T5 (T5, mT5, Flan-T5; transformers' T5Attention): table is
 *   relative_attention_bias.weight, [num_buckets, heads], and
 *     bias[h,i,j] = table[bucket(d(i,j)), h]
 *   with bucket = _relative_position_bucket(d, bidirectional, num_buckets,
 *   max_distance) exactly: bidirectional (the encoder) halves num_buckets
 *   into n and adds n for d > 0, then takes |d|; unidirectional (the
 *   decoder) takes max(-d, 0) with n = num_buckets. Below max_exact = n/2
 *   the bucket is the distance; from there it is
 *   min(max_exact + trunc(log(r / max_exact) / log(max_distance /
 *   max_exact) * (n - max_exact)), n - 1), computed in fp32 as T5's PyTorch
 *   code does (so the truncation lands on the same bucket), with a
 *   correctly rounded fp32 log (the double log rounded, which rounds the
 *   other way for 2 of the floats in [1, 2^41)). An fp32 log that is not
 *   (glibc's logf is an ulp off for about 1 float in 2,000, and torch's own
 *   may be) can move a bucket by one where num_buckets is large: seen at
 *   65536. Against torch 1.13 every bucket of num_buckets up to 320 and
 *   max_distance up to 2048 matched, both directions, every distance.
 *   T5's defaults: num_buckets 32, max_distance 128. num_buckets >= 4
 *   (bidirectional) or >= 2, at most 2^20; max_exact < max_distance <=
 *   2^40. The buckets are looked up once per distance into heads x min(2
 *   max_distance + 1, q_len + kv_len - 1) floats that the calling thread
 *   keeps for its later calls (within posenc/core.h's limit).
 * - ALIBI (Press et al.; BLOOM, MPT, Falcon-RW): table is the slopes,
 *   [heads], or NULL for the standard ones (posenc_alibi_slopes):
 *     bidirectional = 0 (causal decoders): bias = slope[h] * d(i,j), which
 *       is 0 on the diagonal and negative for the keys before the query;
 *       it differs from BLOOM's slope * j by slope * (query_offset + i), a
 *       constant per row, so a softmax over keys j gives the same weights.
 *       Keys after the query get positive values: masking them is the
 *       attention's causal flag, not the bias.
 *     bidirectional = 1 (encoders): bias = -slope[h] * |d(i,j)|.
 *   Computed as slope * d in fp32: where |slope * d| reaches the
 *   thousands (long distances, or keys after the query without a causal
 *   mask) its rounding, about |slope * d| * 2^-24, outweighs the error of
 *   q k^T, as in any fp32 implementation (BLOOM's slope * j alike).
 *
 * Fields a kind does not use must be 0 (posenc_position_bias_desc_init
 * sets them so). query_offset: |query_offset| <= 2^40 (decoding with a KV
 * cache: query_offset = kv_len - q_len).
 *
 * Errors (besides the conventions of core.h, nothing written): NULL desc, or
 * a NULL out or required table with elements (POSENC_ERROR_NULL_POINTER); a size, kind, flag or
 * offset out of range, a field the kind does not use that is not 0
 * (POSENC_ERROR_INVALID_ARGUMENT); q_len or kv_len other than the window's
 * tokens (POSENC_ERROR_SHAPE_MISMATCH); sizes whose product overflows
 * (POSENC_ERROR_OVERFLOW); out overlapping the table (POSENC_ERROR_ALIASING).
 */
#ifndef POSENC_BIAS_H
#define POSENC_BIAS_H

#include "posenc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posenc_position_bias_kind {
  POSENC_POSITION_BIAS_TABLE_2D = 0,
  POSENC_POSITION_BIAS_TABLE_1D = 1,
  POSENC_POSITION_BIAS_T5 = 2,
  POSENC_POSITION_BIAS_ALIBI = 3,
  POSENC_POSITION_BIAS_MAX_ENUM = 0x7FFFFFFF
} posenc_position_bias_kind;

typedef struct posenc_position_bias_desc {
  posenc_position_bias_kind kind;
  int64_t heads, q_len, kv_len;        /* each >= 0 (TABLE_2D: q_len, kv_len the window's) */
  int64_t query_offset;                /* TABLE_1D, T5, ALIBI */
  int64_t window_height, window_width; /* TABLE_2D: Wh, Ww >= 1 */
  int class_token;                     /* TABLE_2D: 0 or 1 (BEiT) */
  int64_t max_distance;                /* TABLE_1D: K >= 0; T5: max_distance */
  int64_t num_buckets;                 /* T5 */
  int bidirectional;                   /* T5, ALIBI: 0 or 1 */
} posenc_position_bias_desc;

/* Fills *desc with the kind and sizes, every other field 0, except for T5:
 * num_buckets 32, max_distance 128, bidirectional 1 (T5's encoder). Does
 * nothing if desc is NULL. */
POSENC_API void posenc_position_bias_desc_init(posenc_position_bias_desc* desc,
                                               posenc_position_bias_kind kind, int64_t heads,
                                               int64_t q_len, int64_t kv_len);

/* out [heads, q_len, kv_len] = the kind's bias (see above). table: the
 * kind's weights as described above; for ALIBI the slopes or NULL. heads,
 * q_len and kv_len may be 0 (posenc/core.h): every field is still checked,
 * and a table with elements is still required. */
POSENC_API posenc_status posenc_position_bias(posenc_context* context,
                                              const posenc_position_bias_desc* desc,
                                              const float* table, float* out);

/* The standard ALiBi slopes of `heads` heads (>= 0) into slopes[heads]:
 * with p the largest power of two <= heads, head h < p gets
 * 2^(-8(h+1)/p) and head p + k gets 2^(-4(2k+1)/p), the odd powers of
 * the slopes of 2p heads (Press et al.'s get_slopes; BLOOM's
 * build_alibi_tensor; MPT's gen_slopes with alibi_bias_max 8 orders them
 * the same way). 8 heads: 2^-1 .. 2^-8. Values rounded once from the exact
 * power; BLOOM's, an fp32-rounded base raised to a power, are a few ulps
 * off (up to 7 for BLOOM-176B's 112 heads, 11 for 128 heads; at most
 * 6e-8, 1.2e-4 of a logit 2048 positions away). */
POSENC_API posenc_status posenc_alibi_slopes(int64_t heads, float* slopes);

/* A relative table [rows, dim] resized to [new_rows, dim] along its rows by
 * linear interpolation, as torch.nn.functional.interpolate(mode="linear",
 * align_corners=False) (SAM's get_rel_pos when the table was trained at
 * another size): row r reads position s = max((r + 0.5) * rows / new_rows
 * - 0.5, 0) of the input, between rows floor(s) and the next (the last row
 * repeated past the end). Computed in double and rounded once: torch's fp32
 * kernel differs from it by its own rounding of the source position (up to
 * about 1e-4 of the values' scale at a few hundred rows). rows, dim >= 1,
 * new_rows >= 0. out must not overlap in. */
POSENC_API posenc_status posenc_resize_relative_table(int64_t rows, int64_t dim,
                                                      const float* in, int64_t new_rows,
                                                      float* out);

/* A TABLE_2D bias table trained for a window_height x window_width window,
 * [(2Wh-1)(2Ww-1) + 3*class_token, heads], resized to a new window,
 * [(2Wh'-1)(2Ww'-1) + 3*class_token, heads]: each head's (2Wh-1) x (2Ww-1)
 * grid by bicubic interpolation as torch.nn.functional.interpolate(
 * mode="bicubic", align_corners=False) (Keys' cubic with A = -0.75, source
 * indices clamped at the borders; no antialiasing), BEiT's 3 class-token
 * rows copied unchanged. This is the resize of Swin's official fine-tuning
 * code and of timm's resize_rel_pos_bias_table_simple (timm's
 * resize_rel_pos_bias_table, used by its checkpoint filters, is BEiT's
 * geometric-progression resampling instead, not provided here). Computed in
 * double and rounded once, as the linear resize. heads >= 0, the windows'
 * sides >= 1. out must not overlap in. In both resizes a non-finite entry
 * reaches every output that weighs it, even by 0 (inf * 0 is NaN), as in
 * torch: an equal size is interpolated too, not copied (the linear resize
 * then reads each row with weight 1 and again with weight 0, as torch's
 * kernel does, so a non-finite row becomes NaN). */
POSENC_API posenc_status posenc_resize_relative_bias_table_2d(
    int64_t heads, int64_t window_height, int64_t window_width, int64_t new_window_height,
    int64_t new_window_width, int class_token, const float* in, float* out);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_BIAS_H */
