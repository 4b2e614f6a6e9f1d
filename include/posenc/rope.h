/* Rotary position embeddings (RoPE, Su et al. 2021), with the context
 * extensions used by Llama-family models.
 *
 * Rotation. A head vector x of head_dim values has rotary_dim/2 "pairs"
 * (rotary_dim even, <= head_dim); pair j at position p is rotated by the angle
 * p * w_j:
 *     x0' = a (x0 cos - x1 sin),   x1' = a (x1 cos + x0 sin)
 * where a is the attention factor (1 except for YaRN). Which two values form
 * pair j is the pairing:
 * - INTERLEAVED: x0 = x[2j], x1 = x[2j+1] (GPT-J, the original LLaMA code);
 * - HALF_SPLIT:  x0 = x[j],  x1 = x[j + rotary_dim/2] (GPT-NeoX, Hugging Face).
 * Values [rotary_dim, head_dim) are passed through unchanged (partial
 * rotation, e.g. GPT-NeoX's rotary_pct).
 *
 * Frequencies. With F the frequency dimension (rotary_dim for 1D RoPE,
 * rotary_dim/2 for 2D) and theta the base, the unscaled inverse frequencies
 * are w_j = theta^(-2j/F) for j < F/2, computed in double. Scalings (s is
 * `factor`, L0 `original_max_positions`):
 * - LINEAR (position interpolation, Chen et al. 2023): w_j / s, i.e. every
 *   position divided by s.
 * - DYNAMIC_NTK (as Hugging Face's dynamic scaling): with L =
 *   max(sequence_length, L0), theta' = theta * (s L / L0 - (s - 1))^(F/(F-2)),
 *   then w_j = theta'^(-2j/F). Unchanged while sequence_length <= L0. Needs
 *   F > 2. The frequencies depend on L: pass the current length (largest
 *   position + 1) and rebuild a cache when it grows.
 * - YARN (Peng et al. 2023, Hugging Face's formulation): pair j's number of
 *   rotations over L0 positions is r_j = L0 w_j / (2 pi); the dimension where
 *   r_j = b is d(b) = F ln(L0 / (2 pi b)) / (2 ln theta). With
 *   lo = max(floor(d(beta_fast)), 0), hi = min(ceil(d(beta_slow)), F - 1)
 *   (without the floor and ceil when fractional_correction_range is 1:
 *   Hugging Face's truncate = False, as gpt-oss sets it; hi += 0.001 if
 *   equal), the ramp is m_j = clamp((j - lo)/(hi - lo), 0, 1) and the
 *   extrapolation weight e_j = (1 - m_j) * extrapolation_factor:
 *       w_j = (1 - e_j) * (w_j / s) + e_j * w_j.
 *   High-frequency pairs (many rotations) keep w_j, low-frequency pairs are
 *   interpolated. The attention factor a multiplies cos and sin (so q.k
 *   scales by a^2, as in Hugging Face); 0 selects the paper's default
 *   0.1 ln(s) + 1 (1 when s <= 1, or when extrapolation_factor is 0).
 *   extrapolation_factor is llama.cpp's ext_factor: 1 is YaRN, 0 pure
 *   position interpolation, whose default attention factor llama.cpp leaves
 *   at 1. Newer Hugging Face configs are the caller's to resolve: an
 *   attention factor of get_mscale(s, mscale) / get_mscale(s,
 *   mscale_all_dim) (DeepSeek) is passed as attention_factor, a factor
 *   derived from max_position_embeddings / original_max_position_embeddings
 *   as factor.
 * - LLAMA3 (Llama 3.1's frequency smoothing): with wavelength
 *   lambda_j = 2 pi / w_j, lambda_hi = L0 / high_freq_factor and
 *   lambda_lo = L0 / low_freq_factor:
 *       lambda_j < lambda_hi: w_j (kept);   lambda_j > lambda_lo: w_j / s;
 *       otherwise, with g = (L0 / lambda_j - low) / (high - low):
 *       (1 - g) w_j / s + g w_j.
 *
 * 2D axial RoPE (grid_width W >= 1, for an X-by-Y feature map with W = Y and
 * token n = x*Y + y): position p is the cell (p / W, p % W). Pairs
 * [0, rotary_dim/4) rotate by the row x and pairs [rotary_dim/4, rotary_dim/2)
 * by the column y (timm's EVA and RotaryEmbeddingCat), or with column_first
 * the first by the column and the second by the row (SAM 2's and RoPE-ViT's
 * compute_axial_cis with end_x = W: t_x = p % W first), both halves with the
 * 1D frequencies of dimension F = rotary_dim/2 (rotary_dim must be a
 * multiple of 4). With HALF_SPLIT the first axis's pairs are therefore
 * values [0, rotary_dim/4) and [rotary_dim/2, 3 rotary_dim/4).
 *
 * Angles. A cos/sin cache (posenc_rope_cache) holds rows computed in double
 * and rounded once to fp32. Without a cache the rows are computed per call:
 * each angle is reduced to [-pi, pi] in double and its sine and cosine taken
 * in fp32. Both are accurate to a few 1e-7 for positions up to about 10^8
 * (where the double product p * w_j still has an error below 1e-8); larger
 * positions (< 2^53) are accepted with a proportionally larger error. This
 * holds for frequencies w_j <= 1 (theta >= 1); a theta below 1 has them up
 * to 1/theta, and the bound is then for p / theta up to about 10^8 (past
 * it a cache, whose angles are exact in double, and the per-call rows
 * differ, by up to O(1) at theta = 2^-64). Hugging Face rounds its inverse
 * frequencies to fp32 and multiplies by the position in fp32, so its angles
 * drift from the exact ones as p grows (its cos/sin are up to 5.6e-4 off
 * over positions 0-8000, 2.3e-3 over 0-32000, with Llama 3.1's config);
 * posenc's follow the exact ones.
 * Non-finite inputs follow IEEE arithmetic as the models' x cos + rot(x) sin
 * does: a NaN element makes both outputs of its pair NaN; an infinite one
 * makes them infinite, or NaN where it meets a sine or cosine of 0 (inf * 0:
 * its partner's output at position 0, where the rotation is the identity)
 * or the pair's other element is infinite too (inf - inf).
 *
 * Tensors. Layouts BTHD [batch, tokens, heads, head_dim] and BHTD
 * [batch, heads, tokens, head_dim], dense; dtype F32 (float) or BF16
 * (uint16_t, computed in fp32, rounded to nearest even). batch, tokens and
 * heads may be 0 (posenc/core.h: the config, cache and positions are still
 * checked); head_dim >= 1.
 */
#ifndef POSENC_ROPE_H
#define POSENC_ROPE_H

#include "posenc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posenc_rope_pairing {
  POSENC_ROPE_INTERLEAVED = 0, /* pairs (2j, 2j+1) */
  POSENC_ROPE_HALF_SPLIT = 1,   /* pairs (j, j + rotary_dim/2) */
  POSENC_ROPE_PAIRING_MAX_ENUM = 0x7FFFFFFF
} posenc_rope_pairing;

typedef enum posenc_rope_layout {
  POSENC_ROPE_BTHD = 0, /* [batch, tokens, heads, head_dim] */
  POSENC_ROPE_BHTD = 1,  /* [batch, heads, tokens, head_dim] */
  POSENC_ROPE_LAYOUT_MAX_ENUM = 0x7FFFFFFF
} posenc_rope_layout;

typedef enum posenc_rope_scaling {
  POSENC_ROPE_SCALING_NONE = 0,
  POSENC_ROPE_SCALING_LINEAR = 1,
  POSENC_ROPE_SCALING_DYNAMIC_NTK = 2,
  POSENC_ROPE_SCALING_YARN = 3,
  POSENC_ROPE_SCALING_LLAMA3 = 4,
  POSENC_ROPE_SCALING_MAX_ENUM = 0x7FFFFFFF
} posenc_rope_scaling;

/* Far above any model's head (a few hundred); bounds the frequency tables. */
#define POSENC_ROPE_MAX_ROTARY_DIM 65536

/* How angles are made. Fill with posenc_rope_config_init, then change what
 * the model needs. Fields a scaling does not use are ignored. */
typedef struct posenc_rope_config {
  int64_t rotary_dim;           /* even, in [2, POSENC_ROPE_MAX_ROTARY_DIM]; a multiple of 4
                                   when grid_width > 0 */
  posenc_rope_pairing pairing;  /* default HALF_SPLIT */
  double base;                  /* theta: finite, >= 2^-64, != 1; default 10000 */
  int64_t grid_width;           /* 0 (default): 1D; W >= 1: 2D axial, see above */
  posenc_rope_scaling scaling;  /* default NONE */
  double factor;                /* s >= 2^-64 (LINEAR, DYNAMIC_NTK, YARN, LLAMA3); default 1 */
  int64_t original_max_positions; /* L0 >= 1 (DYNAMIC_NTK, YARN, LLAMA3); default 0: unset */
  int64_t sequence_length;      /* L >= 1 (DYNAMIC_NTK); default 0: unset */
  double extrapolation_factor;  /* YARN, in [0, 1]; default 1 */
  double attention_factor;      /* YARN, in [0, 2^64]; 0 (default): 0.1 ln(s) + 1, or 1 (see
                                   above) */
  double beta_fast;             /* YARN, >= beta_slow; default 32 */
  double beta_slow;             /* YARN, > 0; default 1 */
  double low_freq_factor;       /* LLAMA3, > 0; default 1 */
  double high_freq_factor;      /* LLAMA3, > low_freq_factor; default 4 */
  /* Added in 0.5. YARN: 0 (default) rounds lo and hi, 1 keeps them fractional. */
  int fractional_correction_range;
  /* Added in 0.6. 2D: 0 (default) the row's pairs first, 1 the column's (SAM 2); 1D ignores
     it. */
  int column_first;
} posenc_rope_config;

/* Fills *config with the defaults above and the given rotary_dim. */
POSENC_API posenc_status posenc_rope_config_init(posenc_rope_config* config,
                                                 int64_t rotary_dim);

/* The inverse frequency of every pair, inv_freq[rotary_dim/2] (pair j's
 * angle at 1D position p is p * inv_freq[j]; in 2D the second half repeats
 * the first), and the attention factor, after scaling. attention_factor may
 * be NULL. */
POSENC_API posenc_status posenc_rope_inverse_frequencies(const posenc_rope_config* config,
                                                         double* inv_freq,
                                                         double* attention_factor);

/* An immutable table of cos/sin rows for positions [0, max_positions) of a
 * config (2D: cells [0, max_positions) of the grid), 2 * rotary_dim floats
 * per position for INTERLEAVED and rotary_dim for HALF_SPLIT. It may be used
 * by any number of calls and threads at once, with any context; destroy it
 * after the last call. The context only sets the threads used to build it. */
typedef struct posenc_rope_cache posenc_rope_cache;
POSENC_API posenc_status posenc_rope_cache_create(posenc_context* context,
                                                  const posenc_rope_config* config,
                                                  int64_t max_positions,
                                                  posenc_rope_cache** cache);
/* A cache of the caller's angles (added in 0.6), for a model whose tables
 * posenc does not compute (LongRoPE, a model's own cos/sin buffers, ...):
 * cos[p * rotary_dim/2 + j] and sin[p * rotary_dim/2 + j] are pair j's
 * cosine and sine at position p < max_positions, used as they are (any
 * scaling or attention factor already in them; non-finite values propagate).
 * These are ONNX Runtime's RotaryEmbedding cos_cache and sin_cache. Of
 * Hugging Face's cos and sin (rotary_emb over positions 0 ..
 * max_positions - 1) they are the first rotary_dim/2 columns where the
 * model builds them as cat(freqs, freqs) (Llama, Mistral, Qwen; GLM's
 * interleaved pairs too), every second column where it repeats each
 * frequency (repeat_interleave: Cohere). rotary_dim is even, in [2,
 * POSENC_ROPE_MAX_ROTARY_DIM]; the tables are copied, so they may be freed
 * after the call. Such a cache has no config (posenc_rope_cache_config
 * refuses it). */
POSENC_API posenc_status posenc_rope_cache_create_from_tables(
    posenc_context* context, int64_t rotary_dim, posenc_rope_pairing pairing,
    int64_t max_positions, const float* cos, const float* sin, posenc_rope_cache** cache);
/* Copies any cache's angles (added in 0.6) as posenc_rope_cache_create_from_
 * tables takes them: cos and sin [max_positions, rotary_dim/2] each
 * (posenc_rope_cache_rotary_dim; a config's with its attention factor in
 * them, in 2D per cell). cos and sin must not overlap. */
POSENC_API posenc_status posenc_rope_cache_tables(const posenc_rope_cache* cache, float* cos,
                                                  float* sin);
POSENC_API void posenc_rope_cache_destroy(posenc_rope_cache* cache);
/* max_positions of the cache (0 for NULL). */
POSENC_API int64_t posenc_rope_cache_max_positions(const posenc_rope_cache* cache);
/* rotary_dim of the cache: its config's or its tables' (0 for NULL; added in 0.6). */
POSENC_API int64_t posenc_rope_cache_rotary_dim(const posenc_rope_cache* cache);
/* Copies the config the cache was built from; INVALID_ARGUMENT for a cache
 * made from tables. */
POSENC_API posenc_status posenc_rope_cache_config(const posenc_rope_cache* cache,
                                                  posenc_rope_config* config);

typedef enum posenc_rope_position_type {
  POSENC_ROPE_POSITIONS_INT32 = 0,
  POSENC_ROPE_POSITIONS_INT64 = 1,
  POSENC_ROPE_POSITIONS_MAX_ENUM = 0x7FFFFFFF
} posenc_rope_position_type;

/* The position of each token. ids == NULL: token t has position offset + t
 * (decoding with a KV cache: offset is the number of cached tokens).
 * Otherwise ids is [batch, tokens] of ids_type and offset must be 0. Every
 * position must be >= 0 and inside the cache ([0, max_positions)), or
 * < 2^53 without a cache. A NULL posenc_rope_positions means offset 0. With
 * batch * tokens = 0, ids may be NULL, which is offset mode: offset +
 * tokens must still be in range. */
typedef struct posenc_rope_positions {
  int64_t offset;
  const void* ids;
  posenc_rope_position_type ids_type;
} posenc_rope_positions;

/* Rotates one tensor x of `heads` heads into out (same layout and dtype).
 * The angles come from exactly one of config (computed on the fly) and cache
 * (the other must be NULL); rotary_dim <= head_dim. On the fly, the calling
 * thread keeps the frequencies of its last config, so repeated calls with one
 * config allocate nothing (memory as in posenc/core.h). out == x is allowed (in
 * place); any other overlap of out with x or ids is POSENC_ERROR_ALIASING.
 * Errors (nothing is written): a bad config field, e.g. an odd rotary_dim
 * or rotary_dim > head_dim, is POSENC_ERROR_INVALID_ARGUMENT naming the field
 * ("rotary_dim"); a position outside the range is INVALID_ARGUMENT naming
 * "positions" (with the first bad index); NULL pointers, overflowing sizes and
 * overlaps are NULL_POINTER, OVERFLOW and ALIASING naming the argument. */
POSENC_API posenc_status posenc_rope(posenc_context* context, const posenc_rope_config* config,
                                     const posenc_rope_cache* cache,
                                     const posenc_rope_positions* positions,
                                     posenc_rope_layout layout, posenc_dtype dtype,
                                     int64_t batch, int64_t tokens, int64_t heads,
                                     int64_t head_dim, const void* x, void* out);

/* Rotates q ([batch, tokens, q_heads, head_dim] or BHTD) and k (k_heads, e.g.
 * fewer for grouped-query attention) with the same angles in one pass (each
 * cos/sin row is made once for both). q_out == q and k_out == k are allowed;
 * q_out and k_out must not overlap each other or the other input. q_heads
 * or k_heads may be 0: the other is rotated alone. */
POSENC_API posenc_status posenc_rope_qk(posenc_context* context,
                                        const posenc_rope_config* config,
                                        const posenc_rope_cache* cache,
                                        const posenc_rope_positions* positions,
                                        posenc_rope_layout layout, posenc_dtype dtype,
                                        int64_t batch, int64_t tokens, int64_t q_heads,
                                        int64_t k_heads, int64_t head_dim, const void* q,
                                        void* q_out, const void* k, void* k_out);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_ROPE_H */
