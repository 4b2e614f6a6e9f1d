/* Position logits for attention: absolute (q R^T), the rel_to_abs skew, and
 * relative logits in 1D and 2D (Shaw et al.; Bello et al.; Ramachandran et
 * al.; Srinivas et al., the bottleneck transformer).
 *
 * Shapes: q is [batch, heads, queries, dim] (row-major); logits are
 * [batch, heads, queries, keys]. A position table is shared by all heads
 * (table_heads = 1, shape [rows, dim]) or has one table per head
 * (table_heads = heads, shape [heads, rows, dim]); any other table_heads is
 * POSENC_ERROR_INVALID_ARGUMENT.
 *
 * Relative distance is key minus query: the logit of query i and key j uses
 * the table row of distance j - i (1D), with the query position offset below.
 *
 * Empty calls (posenc/core.h): batch, heads, queries, keys and length may be
 * 0; dim and the 2D map sides (height, width, map_height, map_width) stay
 * >= 1. With heads = 0, table_heads may be 0 (per head: no tables).
 *
 * Errors (besides the conventions of core.h): sizes out of range and bad
 * options are POSENC_ERROR_INVALID_ARGUMENT; NULL pointers POSENC_ERROR_NULL_POINTER;
 * sizes whose products overflow POSENC_ERROR_OVERFLOW; an output overlapping
 * an input (or another output) POSENC_ERROR_ALIASING.
 */
#ifndef POSENC_RELATIVE_H
#define POSENC_RELATIVE_H

#include "posenc/attention.h" /* posenc_relative_order */
#include "posenc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out[b,h,i,j] = sum_c q[b,h,i,c] * table[j,c] (or table[h,j,c] per head):
 * q of [batch, heads, queries, dim], table of [keys, dim] or
 * [heads, keys, dim], out of [batch, heads, queries, keys]. */
POSENC_API posenc_status posenc_absolute_logits(
    posenc_context* context, int64_t batch, int64_t heads, int64_t queries, int64_t keys,
    int64_t dim, const float* q, const float* table, int64_t table_heads, float* out);

/* The skew from relative to absolute positions:
 * out[b,h,i,j] = in[b,h,i, j - i + length - 1] for in of
 * [batch, heads, length, 2*length-1] and out of [batch, heads, length, length].
 * Bit for bit equal to the pad / flatten / pad / reshape / slice sequence
 * (append a zero column, flatten the last two axes, append length-1 zeros,
 * reshape to [length+1, 2*length-1], keep rows [0, length) and columns
 * [length-1, 2*length-1)). */
POSENC_API posenc_status posenc_rel_to_abs(posenc_context* context, int64_t batch,
                                           int64_t heads, int64_t length, const float* in,
                                           float* out);

/* Options of the 1D relative logits; NULL means all zero. */
typedef struct posenc_relative_options {
  /* p >= 0: query i sits at position p + i; the keys at positions
   * 0 .. keys-1 (decoding with a KV cache: p = keys - queries). */
  int64_t query_offset;
  /* K >= 0. 0: no clipping. K > 0: distances are clamped to [-K, K]
   * (Shaw et al.) and the table has 2K+1 rows, row K + clamp(j - (p+i)). */
  int64_t clip;
  /* 0 or 1. 1: keys after the query's position (j > p + i) are masked: their
   * logit is -INFINITY, so that a softmax over scores plus these logits gives
   * them zero weight. Key 0 is never masked (p >= 0). */
  int causal;
} posenc_relative_options;

/* 1D relative logits: out[b,h,i,j] = sum_c q[b,h,i,c] * table[row(i,j), c]
 * for q of [batch, heads, queries, dim] and out of [batch, heads, queries, keys].
 *
 * Unclipped (clip = 0): the table covers the distances
 * -(p + queries - 1) .. keys - 1 in order, so it has p + queries + keys - 1
 * rows (none if that is -1; also the stride of per-head tables) and
 * row(i,j) = (j - (p + i)) + p + queries - 1 = j - i + queries - 1.
 * posenc_attention's RELATIVE_1D table (posenc/attention.h) is the same,
 * row for row.
 * With p = 0 and queries = keys = T this is the usual [2T-1, dim] table with
 * distance 0 at row T-1. Decoding the last query of a sequence of T tokens
 * (queries = 1, keys = T, p = T-1) takes the same [2T-1, dim] table and gives
 * the last row of the full computation. (Rows past the largest distance that
 * occurs, keys - 1 - p, are not read.)
 *
 * Clipped (clip = K > 0): the table has 2K+1 rows and
 * row(i,j) = K + min(max(j - (p + i), -K), K).
 *
 * Causal: see posenc_relative_options. The table is [rows, dim] if
 * table_heads = 1, [heads, rows, dim] if table_heads = heads. options may be
 * NULL. */
POSENC_API posenc_status posenc_relative_logits_1d(
    posenc_context* context, int64_t batch, int64_t heads, int64_t queries, int64_t keys,
    int64_t dim, const float* q, const float* table, int64_t table_heads,
    const posenc_relative_options* options, float* out);

/* 2D relative logits over a height-by-width feature map (X = height,
 * Y = width, N = X*Y tokens, token n = x*Y + y), q of [batch, heads, N, dim],
 * row_table Rh of [2X-1, dim] and column_table Rw of [2Y-1, dim] (or
 * [heads, 2X-1, dim] and [heads, 2Y-1, dim] with table_heads = heads).
 * For query n1 = (x1, y1):
 *   rel_h[b,h,n1,x2] = sum_c q[b,h,n1,c] * Rh[x2 - x1 + X - 1, c]   [.., N, X]
 *   rel_w[b,h,n1,y2] = sum_c q[b,h,n1,c] * Rw[y2 - y1 + Y - 1, c]   [.., N, Y]
 * Right for X != Y (the row table follows the height, the column table the
 * width). rel_h and rel_w must not overlap each other or the inputs. */
POSENC_API posenc_status posenc_relative_logits_2d_decomposed(
    posenc_context* context, int64_t batch, int64_t heads, int64_t height, int64_t width,
    int64_t dim, const float* q, const float* row_table, const float* column_table,
    int64_t table_heads, float* rel_h, float* rel_w);

/* The full 2D bias, out of [batch, heads, N, N]:
 *   out[b,h,(x1,y1),(x2,y2)] = rel_h[b,h,(x1,y1),x2] + rel_w[b,h,(x1,y1),y2]
 * with rel_h, rel_w as in posenc_relative_logits_2d_decomposed, computed into
 * a temporary of batch*heads*N*(X+Y) floats ((X+Y)/N of out's size): kept by
 * the calling thread for its next calls up to 16 MiB, allocated per call
 * beyond (memory as in posenc/core.h otherwise). */
POSENC_API posenc_status posenc_relative_logits_2d(
    posenc_context* context, int64_t batch, int64_t heads, int64_t height, int64_t width,
    int64_t dim, const float* q, const float* row_table, const float* column_table,
    int64_t table_heads, float* out);

/* Added in 0.3: the decomposed 2D relative logits with SAM's and MViTv2's
 * conventions (segment_anything's get_rel_pos and add_decomposed_rel_pos),
 * those of posenc_attention's RELATIVE_2D bias (posenc/attention.h):
 * a table order and a key map of another size. */
typedef struct posenc_relative_2d_desc {
  int64_t batch, heads;                /* each >= 0 */
  int64_t map_height, map_width;       /* the query map X x Y, each >= 1; N = X*Y */
  int64_t kv_map_height, kv_map_width; /* the key map X' x Y': 0 and 0 (the query
                                          map's) or both >= 1 */
  int64_t dim;                         /* >= 1 */
  int64_t table_heads;                 /* 1 (shared tables) or heads (per head) */
  posenc_relative_order relative_order;
} posenc_relative_2d_desc;

/* Fills *desc with the sizes, table_heads 1, the query map as key map (0
 * and 0) and KEY_MINUS_QUERY order: the problem of
 * posenc_relative_logits_2d_decomposed. Does nothing if desc is NULL. */
POSENC_API void posenc_relative_2d_desc_init(posenc_relative_2d_desc* desc, int64_t batch,
                                             int64_t heads, int64_t map_height,
                                             int64_t map_width, int64_t dim);

/* rel_h [batch, heads, N, X'] and rel_w [batch, heads, N, Y'] for q of
 * [batch, heads, N, dim], N = X*Y, query n1 = (x1, y1) = x1*Y + y1:
 *   rel_h[b,h,n1,x2] = sum_c q[b,h,n1,c] * Rh[row_h(x1, x2), c]
 *   rel_w[b,h,n1,y2] = sum_c q[b,h,n1,c] * Rw[row_w(y1, y2), c]
 * with the rows of posenc_attention's RELATIVE_2D bias (posenc/attention.h):
 * along an axis of query size q and key size k (Rh: X and X', Rw: Y and Y')
 * the table has 2*max(q, k) - 1 rows, and under QUERY_MINUS_KEY
 *   row(a, c) = trunc(a*max(k/q, 1) - c*max(q/k, 1) + (k-1)*max(q/k, 1))
 * in float32 as SAM's get_rel_pos computes it (a - c + k - 1 for q = k);
 * under KEY_MINUS_QUERY 2*max(q, k) - 2 minus that row. So with SAM's
 * rel_pos_h and rel_pos_w as stored and QUERY_MINUS_KEY, rel_h and rel_w
 * are SAM's einsum("bhwc,hkc->bhwk", r_q, Rh) and its Rw counterpart,
 * [B, X, Y, X'] and [B, X, Y, Y'] per head, for add_decomposed_rel_pos or
 * an attention mask rel_h[..., :, None] + rel_w[..., None, :] (reshaped to
 * [batch, heads, N, X'*Y']).
 * Tables are [rows, dim] (table_heads = 1) or [heads, rows, dim]. With the
 * defaults of posenc_relative_2d_desc_init this is, bit for bit,
 * posenc_relative_logits_2d_decomposed. rel_h and rel_w must not overlap
 * each other or the inputs.
 * Errors (nothing written): NULL desc or tensor (POSENC_ERROR_NULL_POINTER);
 * a size, table_heads, key map or order out of range, one of kv_map_height
 * and kv_map_width 0 (POSENC_ERROR_INVALID_ARGUMENT, naming the field);
 * sizes whose product overflows (POSENC_ERROR_OVERFLOW); overlaps
 * (POSENC_ERROR_ALIASING). */
POSENC_API posenc_status posenc_relative_logits_2d_maps(
    posenc_context* context, const posenc_relative_2d_desc* desc, const float* q,
    const float* row_table, const float* column_table, float* rel_h, float* rel_w);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_RELATIVE_H */
