/* Fused multi-head attention with position information, and the BoTNet
 * bottleneck block (multi-head self-attention over a feature map).
 *
 *   out[b,h,i,:] = sum_j a[b,h,i,j] v[b,h,j,:]  (+ sum_j a[b,h,i,j] RV[row(i,j),:])
 *   a[b,h,i,:]   = softmax_j(scale * q[b,h,i,:] . k[b,h,j,:] + bias[b,h,i,j])
 *
 * for i < q_len (queries) and j < kv_len (keys). Nothing of size
 * q_len x kv_len per head is ever stored: queries are processed in blocks
 * against blocks of keys (online softmax), with the bias computed per block.
 *
 * Empty calls: batch, heads and q_len may be 0 (no output rows: the call
 * checks every other argument as usual and returns POSENC_OK having read
 * and written nothing), and so may kv_len (no keys: every output row is
 * zeros, written as out's layout and out_dtype place it). head_dim,
 * value_head_dim and the other sizes keep their rules. With no heads,
 * kv_heads must be 0. A tensor with no elements may be NULL (q, k, v, out,
 * the mask, a table of no rows or, with tables_per_head, of no heads).
 * Tables keep their shapes by the rules below (an unclipped 1D table over
 * no queries and no keys has max(P - 1, 0) rows). The kinds that tie the
 * lengths to a map need them: RELATIVE_2D (X*Y = q_len with X, Y >= 1,
 * kv_len likewise) and TABLE_2D (q_len = kv_len = Wh*Ww + class_token)
 * take only batch or heads 0. The workspace of a call with a size 0 among
 * these four is 0 bytes.
 *
 * Positions: key j sits at position j, query i at position query_offset + i
 * (query_offset > 0 when decoding with a KV cache; it may be negative). The
 * relative distance is key minus query: dist(i,j) = j - (query_offset + i).
 *
 * Bias kinds (tables have head_dim columns; "c" below is scale when
 * bias_uses_scaled_q is non-zero, else 1):
 * - NONE: bias = 0.
 * - ABSOLUTE: bias[i,j] = c * q_i . R[j], R of [kv_len, head_dim].
 * - RELATIVE_1D: bias[i,j] = c * q_i . R[row(i,j)], with the table rows
 *     - max_distance = K >= 1 (clipped, Shaw et al.): R of [2K+1, head_dim],
 *       row(i,j) = clamp(dist(i,j), -K, K) + K; row K is distance 0.
 *     - max_distance = 0 (unclipped, the layout of self-attention-cv's
 *       RelPosEmb1D and of BoTNet, Srinivas et al. 2021):
 *       row(i,j) = j - i + q_len - 1, i.e. row 0 is distance
 *       -(query_offset + q_len - 1) and distance 0 is row
 *       query_offset + q_len - 1; R has P + q_len + kv_len - 1 rows with
 *       P = max(query_offset, 0) (also the stride of per-head tables), as
 *       posenc_relative_logits_1d's table. With q_len = kv_len = T and no
 *       offset this is the usual [2T-1, d] table, R[j - i + T - 1]; a
 *       decode step (q_len = 1, query_offset = T - 1) takes the same table
 *       (its last P rows are not read). Changed in 0.2: R had
 *       q_len + kv_len - 1 rows whatever the offset.
 * - RELATIVE_2D: decomposed relative logits over a map_height x map_width
 *   (X x Y) feature map, token n = x*Y + y, q_len = kv_len = X*Y:
 *   bias[(x1,y1),(x2,y2)] = c * (q . Rh[x2-x1+X-1] + q . Rw[y2-y1+Y-1]),
 *   Rh of [2X-1, head_dim], Rw of [2Y-1, head_dim]. Right for X != Y.
 *   Added in 0.3, SAM's and MViTv2's conventions (segment_anything's and
 *   timm's get_rel_pos and add_decomposed_rel_pos):
 *   - relative_order = POSENC_RELATIVE_QUERY_MINUS_KEY: the tables are
 *     indexed by query minus key, Rh[x1-x2+X-1] and Rw[y1-y2+Y-1], so SAM's
 *     rel_pos_h and rel_pos_w load as stored (KEY_MINUS_QUERY, the default,
 *     is the formula above: BoTNet's and posenc's relative logits). Any
 *     other bias takes KEY_MINUS_QUERY (0).
 *   - A key map of another size: kv_map_height x kv_map_width (X' x Y',
 *     token n = x*Y' + y, kv_len = X'*Y'; 0 and 0 mean the query map's, one
 *     0 alone is an error, and any other bias takes 0 and 0). Along each
 *     axis, with q and k the query's and key's sizes, SAM scales the
 *     coordinates: under QUERY_MINUS_KEY the row of query coordinate a and
 *     key coordinate c is
 *       row(a, c) = trunc(a*max(k/q, 1) - c*max(q/k, 1) + (k-1)*max(q/k, 1))
 *     evaluated as SAM's get_rel_pos does in torch: the ratios and the
 *     offset in double rounded to float32, the products, the difference and
 *     the sum in float32, then truncated (for integer ratios the exact
 *     value; for some others, e.g. q = 8 against k = 6, one row below the
 *     exact floor, as in SAM; a row float32 rounding puts outside the
 *     table, possible only on axes of millions of positions where SAM's
 *     own indexing fails, is clamped to it). Under KEY_MINUS_QUERY the row is
 *     2*max(q, k) - 2 minus that one. The tables have 2*max(q, k) - 1 rows
 *     (Rh: q = X, k = X'; Rw: q = Y, k = Y'). With q = k this is the plain
 *     formula of either order.
 *   SAM itself takes the logits from the unscaled q: bias_uses_scaled_q 0.
 * With tables_per_head non-zero every table (R, Rh, Rw, RV) has a leading
 * heads dimension ([heads, rows, head_dim]); otherwise one table serves all
 * heads.
 *
 * Bias kinds that need no q (added in 0.3): the learned and fixed biases of
 * posenc/bias.h, which describes each kind and its index rules in full. The
 * bias is added to the scores in units of the softmax input, as the mask is
 * (s = scale q k^T + bias + mask), and is never stored for the batch: a
 * TABLE_2D bias of a batch of windows is expanded once per call to
 * [heads, N, N] in the workspace, shared by every window, when that is at
 * most 2^20 floats (Swin's, BEiT's); else, and for the other kinds, it is
 * added per block of keys from the table. `table` holds the weights as
 * the model stores them, of `dtype`; tables_per_head must be 0 (these
 * tables are per head by construction).
 * - TABLE_2D (Swin v1, BEiT, timm's RelPosBias): the window is
 *   map_height x map_width (Wh x Ww), q_len = kv_len = Wh*Ww + class_token;
 *   table [(2Wh-1)(2Ww-1) + 3*class_token, heads]; query_offset 0, no
 *   per-sequence query_offsets.
 * - TABLE_1D: table [heads, 2K+1], K = max_distance in [0, 2^40].
 * - T5: table [num_buckets, heads], T5's buckets of num_buckets,
 *   max_distance and bidirectional.
 * - ALIBI: table = the slopes [heads], or NULL for posenc_alibi_slopes';
 *   bidirectional 0 (slope * d, with causal for decoders) or 1
 *   (-slope * |d|).
 * Positions follow this header's (query i at query_offset + i, or the
 * sequence's query_offsets[b] + i), so a decode step or a continuous batch
 * gets the distances of its cache. These kinds combine with every option
 * but relative_values (refused: its table's rows follow max_distance,
 * which TABLE_1D and T5 read as their own) and tables_per_head;
 * bias_uses_scaled_q is not read. Per call they are laid out once in the
 * workspace: for TABLE_1D and T5 heads x (2L+1) floats, the values of the
 * distances within +-L, L = min(max_distance, q_len + kv_len) (farther
 * distances, from offsets outside [-(q_len+1), kv_len+1] when
 * max_distance > L, are looked up per key).
 *
 * causal: key j is visible to query i only if j <= query_offset + i. A query
 * that sees no key (query_offset + i < 0, or a window on both sides past
 * every key) gets an output row of zeros.
 * sliding_window W >= 1 (added in 0.6) hides the keys W or more before the
 * query's position p = query_offset + i: with causal it sees j > p - W, the
 * W keys up to p (transformers' sliding_window, as Mistral and Gemma set
 * it; ONNX Runtime's local_window_size + 1; flash-attn's window_size (W-1,
 * 0)); without causal (0.7) |j - p| < W, W - 1 keys on each side
 * (ModernBERT's local attention of L tokens, |j - p| <= L/2, is W = L/2 + 1;
 * flash-attn's (W-1, W-1)). Key blocks outside every window of a query
 * block are skipped.
 *
 * softcap c > 0 (added in 0.7; bias NONE or a kind without q): each scaled
 * logit scale q.k becomes c tanh(scale q.k / c) before the bias and the
 * mask are added, as Gemma 2's attn_logit_softcapping (ONNX Runtime's
 * GroupQueryAttention softcap, flash-attn's softcap); sinks are not capped.
 * Refused with the kinds whose logits q multiplies (ABSOLUTE, RELATIVE_1D,
 * RELATIVE_2D), and where c / s or s / c is no normal float (s the scale
 * the softmax applies: scale, or 1 below 2^-24).
 *
 * sinks (added in 0.7): a learned logit sigma_h per head (tensors->sinks,
 * [heads] of dtype, in softmax-input units: after scale, as the mask is)
 * joins every row's softmax as one more key whose value is zero:
 *   out[i] = sum_j exp(s[i,j] - M) v[j] / (exp(sigma_h - M) + sum_j exp(s[i,j] - M))
 * over the keys j the row sees (M: the row's largest logit, sigma_h
 * included), as gpt-oss's attention sinks and ONNX Runtime's
 * GroupQueryAttention head_sink (its smooth_softmax: sigma_h = 0). A row
 * that sees no key is zeros, as without sinks, and so is one masked
 * everywhere by -FLT_MAX (below), which a finite sink outweighs by far
 * (without sinks the mean of v at some scales). A sink of +inf takes all
 * the weight: zeros (the unfused softmax gives NaN, inf - inf); a sink far
 * above a row's logits leaves the keys tiny weights, subnormal or 0. The
 * rows of a head read sigma of the head itself (not its kv head).
 *
 * bias_gate (added in 0.11; TABLE_1D, T5 and ALIBI only): the bias of each
 * query row multiplied by a gate of its own (tensors->bias_gate, dense
 * [batch, heads, q_len] of dtype in every layout, heads the query heads):
 *   bias[b,h,i,j] = gate[b,h,i] * bias_h(i, j)
 * (the mask is not gated). This is WavLM's gated relative position bias
 * (transformers' WavLMAttention, torchaudio's WavLMSelfAttention, ONNX
 * Runtime's GatedRelativePositionBias): T5's bidirectional buckets with its
 * num_buckets (320) and max_distance (800), its rel_attn_embed [num_buckets,
 * heads] as the T5 table, and its gate_output of the layer (gate_a * (gate_b
 * * gru_rel_pos_const - 1) + 2, from the layer's input per head) as the gate;
 * scale 1/sqrt(head_dim), the padded keys as kv_lengths. Every layer gates
 * the first layer's table (its position_bias).
 *
 * relative_query_bias (added in 0.9; RELATIVE_1D only): the relative
 * logits take the query plus a learned vector u_h per head
 * (tensors->relative_query_bias, [heads, head_dim] of dtype):
 *   bias[i,j] = c * (q_i + u_h) . R[row(i,j)]
 * computed as c * q_i . R[row] + c * u_h . R[row] (u's against the table
 * rows as stored, accumulated in fp32), so q_i + u_h is never rounded, not
 * even to bf16. This is the position term of Transformer-XL's relative
 * attention (Dai et al. 2019),
 *   score[i,j] = (q_i + a) . k_j + (q_i + b) . P[i - j],
 * a and b learned per head (r_w_bias and r_r_bias), in the form the
 * Conformer keeps: NeMo's RelPositionMultiHeadAttention, ESPnet's
 * RelPositionMultiHeadedAttention (rel_pos_type "latest"; the legacy one
 * has another table and shift) and transformers' Wav2Vec2Conformer with
 * a and b its pos_bias_u and pos_bias_v: pass q + a as q and u = b - a.
 * Their projected positions, 2T-1 rows from distance T-1 down to -(T-1)
 * (query minus key, largest first), are this header's unclipped table
 * R[j - i + T - 1] as stored (a streaming step's 2Tk-1 rows likewise, with
 * query_offset the cached frames); both terms are scaled by
 * 1/sqrt(head_dim): bias_uses_scaled_q 1. Transformer-XL's own table
 * (klen rows, distances klen-1 down to 0) lacks the rows of the future keys
 * this table has (whatever they hold: causal hides them); XLNet's starts a
 * row earlier (its rows from 1 on), and its segment term is not this.
 *
 * DISENTANGLED (added in 0.10): DeBERTa's disentangled attention (He et
 * al. 2021), its content-to-position and position-to-content terms:
 *   bias[i,j] = c * (q_i . R[row(i,j)] + k_j . RK[row(i,j)])
 * R = tensors->table (the c2p term's position keys), RK =
 * tensors->key_table (the p2c term's position queries), both of 2S rows,
 * k_j of query head h's kv head; with r = query_offset + i - j (query
 * minus key) the row is
 *   row(i,j) = clamp(delta(r) + S, 0, 2S - 1), where
 * - num_buckets = 0: S = max_distance >= 1 and delta(r) = r;
 * - num_buckets = B >= 2: S = B, m = B / 2 (rounded down), max_distance
 *   M >= m + 2 with ln((M - 1) / m) >= (m - 1) ln((m + 1) / m) (no bucket
 *   then skips a row: M >= 345 for B = 256, 20 for B = 16; the error
 *   names the least M), and delta(r) = r for |r| <= m, else
 *   sign(r) * (ceil(ln(|r| / m) / ln((M - 1) / m) * (m - 1)) + m),
 *   evaluated in double (DeBERTa's log buckets: make_log_bucket_position;
 *   transformers evaluates it in float32, which gives the same buckets for
 *   DeBERTa-v3's B = 256, M = 512, checked for every |r| <= 4M).
 * transformers' DebertaV2 (DeBERTa-v3, position_buckets B = 256 and
 * max_relative_positions M = 512; without position_buckets, num_buckets 0
 * and max_distance its span, max_relative_positions) with pos_att_type
 * c2p and p2c: scale = 1/sqrt(3 head_dim) (its scale_factor 3) and
 * bias_uses_scaled_q 1; R and RK are its pos_key_layer and pos_query_layer
 * of the head (key_proj and query_proj of its normalized rel_embeddings'
 * first 2S rows, with share_att_key; else pos_key_proj and
 * pos_query_proj), [heads, 2S, head_dim] with tables_per_head 1. Its
 * positions start at 0 for queries and keys alike (query_offset 0).
 * transformers' Deberta (v1) is num_buckets 0 and max_distance its
 * max_relative_positions (max_position_embeddings where that is below 1),
 * its q, k, v (in_proj's output, interleaved per head) with q + q_bias as q
 * and v + v_bias as v, the tables its pos_proj and pos_q_proj (with its
 * bias) of all 2S rows of rel_embeddings per head (the span it slices,
 * min(T, S) rows each side, reads the same rows), scale 1/sqrt(3
 * head_dim) with pos_att_type c2p and p2c (its scale_factor is 1 + the
 * number of terms: 1/sqrt(2 head_dim) with one).
 * Not with relative_values, relative_query_bias, softcap, or the fields of
 * other kinds (relative_order, the maps, class_token, bidirectional);
 * key_table must be NULL with any other bias. A model with c2p or p2c
 * alone passes a zero table for the other term. transformers' BERT with
 * position_embedding_type "relative_key_query" (RoBERTa's, ELECTRA's
 * likewise: q . e + k . e, e = distance_embedding[i - j + M - 1] of 2M - 1
 * rows, M its max_position_embeddings) is num_buckets 0, max_distance M,
 * scale 1/sqrt(head_dim), both tables that embedding after one more row
 * (row 0, distance -M, is never used: |i - j| < M), shared by the heads.
 *
 * relative_values (Shaw et al.): also adds sum_j a[i,j] * RV[row(i,j)], RV
 * indexed exactly as the RELATIVE_1D table above (same max_distance rule and
 * row count). Not available with RELATIVE_2D nor with the kinds without q.
 *
 * Layouts of q, out ([.., q_len, ..]) and k, v ([.., kv_len, ..]):
 * - BHTD: [batch, heads, tokens, head_dim];
 * - BTHD: [batch, tokens, heads, head_dim];
 * - STRIDED: element strides per tensor (desc->q_strides .. out_strides):
 *   row (b, h, t) of a tensor starts b*batch + h*head + t*token elements
 *   after its pointer and its head_dim elements (value_head_dim for v and
 *   out) are contiguous. Strides are >= 0 (0 repeats a tensor, e.g. one k
 *   and v for the whole batch); the token stride of q, k and v is at least
 *   their row's elements where the tensor has more than one token (it is a
 *   GEMM's row stride). Inputs may overlap
 *   each other, but out's elements must be distinct and overlap no input:
 *   out's dimensions (its row's elements of stride 1, then token, head and
 *   batch) of more than one element, sorted by stride, must each have a
 *   stride past the largest offset the smaller ones reach (else
 *   POSENC_ERROR_ALIASING naming desc->out_strides). A tensor spans its
 *   largest row offset plus its row's elements, which the aliasing checks
 *   use. Under BHTD and BTHD the four strides must be zero (so that strides
 *   set by mistake are caught, not ignored).
 *   This reads a KV cache of capacity C > kv_len in place ([B, H, C, d]:
 *   token stride d, head stride C*d; rows past kv_len are never read) and
 *   q, k, v as the three views of one packed [B, N, 3, H, d] qkv tensor
 *   (token stride 3*H*d, head stride d, batch stride 3*N*H*d; k = q + H*d,
 *   v = q + 2*H*d elements).
 *   posenc/attention.hpp has helpers for both (kv_cache_strides,
 *   packed_qkv).
 * Tables are dense [rows, head_dim] (or [heads, rows, head_dim]).
 *
 * Value head size (added in 0.3): value_head_dim, 0 for head_dim, is the
 * head size of v, out and RV (timm's BottleneckAttn with qk_ratio != 1):
 * v [.., kv_len, .., value_head_dim], out [.., q_len, .., value_head_dim],
 * RV [rows, value_head_dim] (or [heads, rows, value_head_dim]); q, k and
 * the bias tables keep head_dim, and so does the default scale. Under
 * STRIDED, v's and out's rows are value_head_dim elements (v's token
 * stride at least value_head_dim). Any size >= 1, smaller or larger than
 * head_dim, with every option of this header.
 *
 * Grouped-query attention: kv_heads (0 means heads) divides heads; k and v
 * have kv_heads heads and query head h reads kv head h / (heads / kv_heads)
 * (kv_heads = 1: multi-query attention). Tables stay per query head. Each
 * thread packs each block of a kv head's keys and values (of the keys its
 * sequence's queries see) once for the run of tasks of its group's query
 * heads it runs, when the first of them that reads the block runs.
 * Decoding (q_len <= 16), a group's query heads are computed together, up
 * to 64 query rows, where that leaves at least 16 tasks (keys of 512 and
 * more split into ranges, or many heads): each key and value is then read
 * once for all of them. A single query a head in groups of up to 8 stacks
 * at most 4 heads (posenc's decode kernels, which read the keys as
 * stored; oneDNN's GEMMs relayout them), reading each key at most twice.
 *
 * Per-sequence options (tensors of `batch` integers of desc->index_type;
 * each optional, NULL when unused):
 * - kv_lengths[b] in [0, kv_len]: keys j >= kv_lengths[b] are masked for
 *   sequence b (padding); key blocks wholly past it are not computed.
 * - q_lengths[b] in [0, q_len]: output rows i >= q_lengths[b] are zeros.
 * - query_offsets[b] (|value| <= 2^40): the position of query 0 of
 *   sequence b, in place of desc->query_offset (which must then be 0), for
 *   causal masks and the biases of distances alike (RELATIVE_2D's map
 *   coordinates take no offset). An unclipped 1D table then has
 *   q_len + kv_len - 1 + P rows with P = max(max_b query_offsets[b], 0).
 * A row that sees no key (past kv_lengths, causal, or masked by -inf)
 * is zeros (but see NaN inputs below). A query block's keys are computed
 * in multiples of 32 (within kv_len): the scores of up to 31 keys past
 * kv_lengths[b] are computed from their k rows and dropped, and their v
 * rows never reach the outputs, so the padding may hold anything, NaN
 * included (a cache's unwritten rows).
 * Rows past kv_lengths[b] up to kv_len may also be read by the copy that
 * packs a kv head's keys and values, and not used. Query rows are computed
 * in multiples of 32 as well: up to 31 q rows past q_lengths[b] (within
 * q_len; none where q_lengths[b] is 0) are read and not used. Nothing past kv_len is ever read.
 *
 * Additive mask (mask_batch > 0): tensors->mask, dense
 * [mask_batch, mask_heads, mask_q_len, kv_len] of mask_dtype, is added to
 * the scores after the position bias (in units of the softmax input:
 * s = scale q k^T + bias + mask), so -inf masks a key. mask_heads is 1 or
 * heads; mask_q_len is q_len, or 1 for one row that serves every query (a
 * key-padding mask); mask_batch is 1, batch, or any m dividing batch, batch
 * item b reading mask b % m (Swin's shifted-window mask with the windows
 * folded into the batch). The mask is read in place, never broadcast into a
 * copy. posenc divides the mask by scale where scale >= 2^-24 (the
 * softmax applies it; the round trip may move a value by fp32 rounding), so
 * below 1 a finite value beyond FLT_MAX * scale in magnitude overflows.
 * -FLT_MAX (torch.finfo(torch.float32).min, which some code pads with)
 * gives a key weight 0 at any scale in a row that has another key; a row
 * masked everywhere by it is zeros where
 * 2^-24 <= scale < 1 (the division made it -inf) and the mean of v at
 * other scales. torch's fp32 softmax gives the mean of v at every scale
 * (scale q.k - FLT_MAX rounds to -FLT_MAX for each key), so at the usual
 * scale 1/sqrt(head_dim) such a row differs from torch's: zeros against
 * the mean of v. With -inf it is zeros, as torch's
 * scaled_dot_product_attention gives from torch 2.5 (unless a score is
 * NaN: below).
 *
 * Types: q, k, v and all tables are of `dtype` (F32, or BF16 as uint16_t
 * bit patterns); out is of out_dtype. With BF16 where oneDNN's bf16 GEMMs
 * outpace its fp32 ones (AMX, or AVX512-BF16 on AMD's CPUs, under the ISA
 * cap) the GEMMs run in bf16 with fp32 accumulation and the softmax in fp32,
 * its probabilities rounded to bf16 for the product with v (except in
 * decode steps of at most 4 query rows per kv head run without AVX512-BF16
 * by the ISA path, which keep them fp32). On every other CPU (AVX2, AVX-512
 * without BF16, Intel's AVX512-BF16 without AMX, Arm; changed in 0.11 for
 * Intel's AVX512-BF16, where oneDNN's bf16 GEMM reached 0.6x its fp32 rate)
 * posenc widens bf16 to fp32 block by block as it reads it and runs fp32
 * GEMMs: the result of F32 inputs of the same values, within fp32's
 * rounding, at about fp32's speed (but the decode kernels of AVX512-BF16,
 * which round the probabilities to bf16 there too). bf16 subnormals (below
 * 2^-126 in magnitude) multiplied in hardware count as zero, as
 * AVX512-BF16 and AMX treat them; widened to fp32 they are kept.
 *
 * Range: at scales below 1 the GEMM forms q.k before the scale applies
 * (where 2^-24 <= scale < 1 the softmax applies it, below 2^-24 the GEMM
 * scales its sums), so a product q.k beyond FLT_MAX in magnitude is inf
 * (and its row NaN) even where scale q.k would be finite, as is a bias
 * beyond FLT_MAX * scale where 2^-24 <= scale < 1 (the mask's case above).
 * As in flash attention, the v rows (and value_table rows) are summed with
 * weights exp(s - max) in [0, 1] before the division by the weights' sum:
 * a row whose keys' |v| add up past FLT_MAX may be inf where its weighted
 * mean is finite. Weights below 2^-64 are 0. torch's math path, scaling q
 * and k first and normalizing before the product with v, keeps such rows
 * finite; model logits and values are far below these bounds.
 *
 * Non-finite inputs propagate as IEEE arithmetic does (a NaN in q, k, v or a
 * table gives NaN where it is used); nothing traps. As in the unfused
 * softmax(scores + mask) v, a key masked by the mask, by causality or by a
 * sliding window has its v row multiplied by a zero weight, so a NaN or Inf
 * there can reach the rows of queries processed together with it (a key
 * past kv_lengths[b] cannot, above), as can a NaN or Inf in a value_table
 * row that another query processed together uses; a NaN in the k or bias
 * of a key hidden by causality or a sliding window cannot (its score is
 * not read, or replaced by -inf); rows that see no key are always zero,
 * except that a NaN score outlasts the mask's -inf (NaN + -inf is NaN): a
 * row masked by -inf everywhere whose scores hold a NaN (from q, k or a
 * table) is NaN, as in the unfused way.
 */
#ifndef POSENC_ATTENTION_H
#define POSENC_ATTENTION_H

#include "posenc/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posenc_attention_layout {
  POSENC_LAYOUT_BHTD = 0,
  POSENC_LAYOUT_BTHD = 1,
  POSENC_LAYOUT_STRIDED = 2,
  POSENC_LAYOUT_MAX_ENUM = 0x7FFFFFFF
} posenc_attention_layout;

typedef enum posenc_attention_bias {
  POSENC_BIAS_NONE = 0,
  POSENC_BIAS_ABSOLUTE = 1,
  POSENC_BIAS_RELATIVE_1D = 2,
  POSENC_BIAS_RELATIVE_2D = 3,
  POSENC_BIAS_TABLE_2D = 4, /* added in 0.3: the kinds of posenc/bias.h */
  POSENC_BIAS_TABLE_1D = 5,
  POSENC_BIAS_T5 = 6,
  POSENC_BIAS_ALIBI = 7,
  POSENC_BIAS_DISENTANGLED = 8, /* added in 0.10: DeBERTa's c2p and p2c */
  POSENC_BIAS_MAX_ENUM = 0x7FFFFFFF
} posenc_attention_bias;

/* The order of the rows of a 2D relative table (RELATIVE_2D). */
typedef enum posenc_relative_order {
  POSENC_RELATIVE_KEY_MINUS_QUERY = 0, /* posenc, BoTNet */
  POSENC_RELATIVE_QUERY_MINUS_KEY = 1, /* SAM, MViTv2 (get_rel_pos) */
  POSENC_RELATIVE_ORDER_MAX_ENUM = 0x7FFFFFFF
} posenc_relative_order;

/* Element strides of one tensor under POSENC_LAYOUT_STRIDED. */
typedef struct posenc_token_strides {
  int64_t batch, head, token;
} posenc_token_strides;

/* The integer type of the per-sequence tensors. */
typedef enum posenc_index_type {
  POSENC_INDEX_INT32 = 0,
  POSENC_INDEX_INT64 = 1,
  POSENC_INDEX_MAX_ENUM = 0x7FFFFFFF
} posenc_index_type;

typedef struct posenc_attention_desc {
  int64_t batch, heads, q_len, kv_len, head_dim; /* head_dim >= 1, the others >= 0 */
  posenc_attention_layout layout;
  posenc_dtype dtype;     /* q, k, v and tables */
  posenc_dtype out_dtype;
  float scale;            /* finite; posenc_attention_desc_init sets 1/sqrt(head_dim) */
  int causal;             /* 0 or 1 */
  int64_t query_offset;   /* position of query 0; |query_offset| <= 2^40 */
  posenc_attention_bias bias;
  int tables_per_head;    /* 0 or 1 */
  int bias_uses_scaled_q; /* 0 or 1: position logits from scale*q (BoTNet as
                             bottleneck-transformer-pytorch writes it) or q */
  int64_t max_distance;   /* RELATIVE_1D and relative_values: 0 unclipped, else K >= 1;
                             TABLE_1D: K >= 0; T5: T5's max_distance; DISENTANGLED:
                             S, or DeBERTa's max_relative_positions; else 0 */
  int64_t map_height, map_width; /* RELATIVE_2D: X, Y with X*Y = q_len (and kv_len
                                    without a key map); TABLE_2D: Wh, Ww; else 0 */
  int relative_values;    /* 0 or 1 */
  int64_t kv_heads;       /* 0 (= heads), or a divisor of heads */
  posenc_token_strides q_strides, k_strides, v_strides, out_strides; /* STRIDED only */
  posenc_index_type index_type; /* of kv_lengths, q_lengths, query_offsets */
  int64_t mask_batch;     /* 0: no mask; else 1, batch or a divisor of batch */
  int64_t mask_heads;     /* with a mask: 1 or heads */
  int64_t mask_q_len;     /* with a mask: q_len, or 1 */
  posenc_dtype mask_dtype;
  posenc_relative_order relative_order;  /* RELATIVE_2D */
  int64_t kv_map_height, kv_map_width;   /* RELATIVE_2D: 0 and 0, or the key map */
  int class_token;        /* TABLE_2D: 0 or 1 (BEiT) */
  int64_t num_buckets;    /* T5 (max_distance: T5's max_distance); DISENTANGLED: 0 or
                             DeBERTa's position_buckets */
  int bidirectional;      /* T5 and ALIBI: 0 or 1 */
  int64_t value_head_dim; /* 0 (= head_dim), or the head size of v, out and RV */
  /* Added in 0.6. */
  int64_t sliding_window; /* 0: none; W >= 1: keys less than W from the query (causal:
                             the W keys up to it) */
  /* Added in 0.7. */
  int sinks;              /* 0 or 1: a sink logit per head, tensors->sinks */
  float softcap;          /* 0: none; c > 0 (finite): scale q.k becomes c tanh(scale q.k / c) */
  /* Added in 0.9. */
  int relative_query_bias; /* 0 or 1 (RELATIVE_1D): the relative logits take q + u_h,
                              tensors->relative_query_bias */
  /* Added in 0.11. */
  int bias_gate;          /* 0 or 1 (TABLE_1D, T5, ALIBI): each query row's bias times
                             its gate, tensors->bias_gate */
} posenc_attention_desc;

/* The tensors of one call. Pointers a desc does not use must be NULL. */
typedef struct posenc_attention_tensors {
  const void* q;           /* required (NULL only without elements, above) */
  const void* k;           /* required (likewise) */
  const void* v;           /* required (likewise) */
  const void* table;       /* ABSOLUTE or RELATIVE_1D: R */
  const void* table_h;     /* RELATIVE_2D: Rh */
  const void* table_w;     /* RELATIVE_2D: Rw */
  const void* value_table; /* relative_values: RV */
  void* out;               /* required (likewise); must not overlap any input or the
                              workspace */
  /* Added in 0.3. */
  const void* mask;          /* mask_batch > 0 */
  const void* kv_lengths;    /* optional, [batch] */
  const void* q_lengths;     /* optional, [batch] */
  const void* query_offsets; /* optional, [batch] */
  /* Added in 0.7. */
  const void* sinks;         /* sinks: [heads] */
  /* Added in 0.9. */
  const void* relative_query_bias; /* relative_query_bias: [heads, head_dim] */
  /* Added in 0.10. */
  const void* key_table;   /* DISENTANGLED: RK, the table k multiplies */
  /* Added in 0.11. */
  const void* bias_gate;   /* bias_gate: [batch, heads, q_len] */
} posenc_attention_tensors;

/* Fills *desc for plain attention: the given sizes, BHTD, F32 in and out,
 * scale 1/sqrt(head_dim), no bias, no mask, offset 0, bias_uses_scaled_q 1,
 * kv_heads 0 (= heads), INT32 per-sequence tensors, no sliding window, no
 * sinks, no softcap, no relative query bias, no bias gate. Added in 0.3:
 * the fields from kv_heads on, and the tensors mask .. query_offsets; in
 * 0.6 sliding_window; in 0.7 sinks, softcap and the tensor sinks; in 0.9
 * relative_query_bias and its tensor (the tensor key_table in 0.10); in
 * 0.11 bias_gate and its tensor; a desc made without this function must
 * zero them.
 * Does nothing if desc is NULL. */
POSENC_API void posenc_attention_desc_init(posenc_attention_desc* desc, int64_t batch,
                                           int64_t heads, int64_t q_len, int64_t kv_len,
                                           int64_t head_dim);

/* The workspace posenc_attention needs for this desc on this context, in
 * bytes (it grows with threads x kv_len x (query block + head_dim +
 * value_head_dim): score blocks, and each thread's copy of one head's keys
 * and values in oneDNN's layout, at most 8 MiB; never with batch x heads x
 * q_len x kv_len; a decode step, q_len <= 16, whose keys are split across
 * tasks adds their partial results: fewer than 128 of at most 64 rows (q_len
 * times the query heads computed together) of about value_head_dim floats;
 * 0 for an empty call, above).
 * Valid as long as the context's thread count and ISA path are: a context
 * with num_threads 0 follows OpenMP's default, a NULL context the process's
 * ISA cap (posenc_set_max_isa). Errors: as posenc_attention for the desc,
 * NULL `bytes`. */
POSENC_API posenc_status posenc_attention_workspace_size(posenc_context* context,
                                                         const posenc_attention_desc* desc,
                                                         size_t* bytes);

/* Runs the attention described by desc. workspace: NULL or at least
 * posenc_attention_workspace_size bytes, any alignment, not overlapping any
 * tensor. NULL: posenc's own, kept by the calling thread for its next calls
 * without one (grown to the largest, shared with posenc_bottleneck's) up to
 * 256 MiB, or 16 MiB per thread of the call where that is more; a larger
 * one is allocated per call. With a workspace (or posenc's own within that
 * bound), a repeated call of one desc on one thread allocates nothing in
 * posenc (oneDNN's execute
 * allocates its small argument map per GEMM; see posenc/core.h); the first
 * call of a desc on a thread makes its GEMMs' primitives, memory objects and
 * scratchpads, running the GEMMs of the first head's blocks dry to find
 * them, before anything is written. With per-sequence tensors the GEMMs
 * follow the values: each call runs those of each sequence's first head
 * dry (lookups), and a call whose lengths or offsets need a block shape not
 * seen before makes it then (key counts in multiples of 32: a bounded set).
 * Errors (nothing written): NULL desc or tensors or a required pointer
 * (POSENC_ERROR_NULL_POINTER); a size, enum, flag, scale or offset out of
 * range, a per-sequence value out of range (the message names the first
 * bad index), query_offsets with a non-zero query_offset, a table pointer
 * the desc does not use, relative_values with RELATIVE_2D or a kind
 * without q, a field of those kinds out of range or set for another kind
 * (posenc/bias.h's rules, naming map_height and map_width for the window),
 * query_offsets with TABLE_2D, map_height, map_width or max_distance not 0
 * with a bias (and no relative_values) that does not read them, kv_heads not 0
 * nor a divisor of heads (with heads 0: not 0), a negative value_head_dim,
 * a negative sliding_window, sinks not 0 nor 1, relative_query_bias not 0
 * nor 1 or set with a bias other than RELATIVE_1D, bias_gate not 0 nor 1 or
 * set with a bias other than TABLE_1D, T5 and ALIBI, a negative or non-finite
 * softcap, one too far from the scale or with bias ABSOLUTE, RELATIVE_1D or
 * RELATIVE_2D,
 * a negative stride or a too short token stride, strides under BHTD or BTHD,
 * relative_order or a key map with a bias other than RELATIVE_2D, one of
 * kv_map_height and kv_map_width 0 (POSENC_ERROR_INVALID_ARGUMENT);
 * map_height*map_width != q_len, or the key map's size
 * (kv_map_height*kv_map_width, or the query map's without them) != kv_len
 * (POSENC_ERROR_SHAPE_MISMATCH); sizes whose product overflows, strided
 * tensors whose extent does, head sizes of 2^39 or more, q_len or kv_len of
 * 2^38 or more, a workspace past 2^62 bytes (POSENC_ERROR_OVERFLOW); out
 * overlapping an input or the workspace, or itself (POSENC_ERROR_ALIASING);
 * workspace_bytes too small (POSENC_ERROR_INVALID_ARGUMENT naming
 * workspace_bytes). */
POSENC_API posenc_status posenc_attention(posenc_context* context,
                                          const posenc_attention_desc* desc,
                                          const posenc_attention_tensors* tensors,
                                          void* workspace, size_t workspace_bytes);

/* BoTNet's multi-head self-attention (MHSA) layer over a feature map, as
 * timm's BottleneckAttn (layers/bottleneck_attn.py) computes it, with dh =
 * head_dim (timm's dim_head_qk) and dv = value_head_dim (dim_head_v; dh
 * when 0):
 *   qkv = W_qkv * fmap[b] + qkv_bias (a 1x1 convolution; channels [0, H*dh)
 *         give q, [H*dh, 2*H*dh) k, [2*H*dh, 2*H*dh + H*dv) v; channel
 *         h*dh + c of q and k, h*dv + c of v, is head h, column c: timm's
 *         split and reshape of qkv),
 *   out[b, h*dv + c, x, y] = attention of head h with RELATIVE_2D bias (no
 *         mask), position logits from scale*q or q (bias_uses_scaled_q),
 *   then with stride 2 a 2x2 average pooling of out with stride 2.
 * fmap [batch, channels, height, width] (NCHW), w_qkv [H*(2*dh + dv),
 * channels] (timm's qkv.weight [.., channels, 1, 1] as stored), qkv_bias
 * [H*(2*dh + dv)] (qkv.bias), rel_h [2*height-1, dh], rel_w
 * [2*width-1, dh] (pos_embed.height_rel and width_rel as stored; or
 * [heads, .., dh] with tables_per_head), out [batch, H*dv,
 * height / stride, width / stride] (rounded down, as AvgPool2d(2, 2): an odd
 * map's last row or column is dropped). fmap, w_qkv, qkv_bias and the
 * tables are of dtype, out of out_dtype.
 *
 * BF16 runs on every CPU. Where oneDNN's bf16 GEMMs outpace its fp32 ones
 * (AMX, or AVX512-BF16 on AMD's CPUs, under the ISA cap; posenc_attention's
 * types) the projection and the attention's GEMMs run in bf16 (qkv rounded
 * to bf16 once, with its bias, as a bf16 nn.Conv2d rounds). On every other
 * CPU (AVX2, AVX-512 without BF16, Intel's AVX512-BF16 without AMX, Arm)
 * the block widens fmap, w_qkv, qkv_bias and the tables
 * to fp32 in its workspace and runs the F32 block on them: bit for bit the
 * result of F32 inputs of the same values, at about fp32's speed.
 *
 * A batch of 0 is an empty call: every other argument is checked as usual,
 * nothing is read or written (fmap and out may be NULL), and the workspace
 * is 0 bytes. The other sizes stay >= 1 (the tables have 2*height-1 and
 * 2*width-1 rows, w_qkv projects channels). */
typedef struct posenc_bottleneck_desc {
  int64_t batch, channels, height, width, heads, head_dim; /* batch >= 0, the others >= 1 */
  posenc_dtype dtype;
  posenc_dtype out_dtype;
  float scale;         /* finite; posenc_bottleneck_desc_init sets 1/sqrt(head_dim) */
  int tables_per_head; /* 0 or 1 */
  /* Added in 0.3; a desc made without posenc_bottleneck_desc_init must set
   * them (init gives the behaviour of 0.2). */
  int bias_uses_scaled_q; /* 1: position logits from scale*q (timm's
                             scale_pos_embed=True; 0.2's only rule);
                             0: from q (scale_pos_embed=False, timm's default) */
  int64_t stride;         /* 1, or 2 (timm's stride=2: AvgPool2d(2, 2) on the
                             output; height and width >= 2) */
  int64_t value_head_dim; /* 0 (= head_dim), or timm's dim_head_v = dim_out
                             / heads, which differs from head_dim
                             (dim_head_qk) when qk_ratio != 1 or dim_head
                             is set; scale stays 1/sqrt(head_dim) */
} posenc_bottleneck_desc;

/* The tensors of posenc_bottleneck (added in 0.3). */
typedef struct posenc_bottleneck_tensors {
  const void* fmap;     /* required (NULL only with batch 0) */
  const void* w_qkv;    /* required */
  const void* qkv_bias; /* optional (NULL: no bias; timm's qkv_bias=False) */
  const void* rel_h;    /* required */
  const void* rel_w;    /* required */
  void* out;            /* required (NULL only with batch 0); must not overlap any input
                           or the workspace */
} posenc_bottleneck_tensors;

/* Fills *desc: the given sizes, F32 in and out, scale 1/sqrt(head_dim),
 * shared tables, position logits from scale*q (bias_uses_scaled_q 1),
 * stride 1, value_head_dim 0. Does nothing if desc is NULL. */
POSENC_API void posenc_bottleneck_desc_init(posenc_bottleneck_desc* desc, int64_t batch,
                                            int64_t channels, int64_t height, int64_t width,
                                            int64_t heads, int64_t head_dim);

/* Workspace in bytes: the token-major copy of fmap, the projected q, k, v
 * and the attention's output for the whole batch (so it grows with
 * batch x height x width x (channels + 2 x heads x (head_dim +
 * value_head_dim)); with stride 2
 * the output is fp32 and its pooled copy is added), plus the attention's own
 * workspace (posenc_attention_workspace_size). An fp32 projection of more
 * than 128 tokens adds w_qkv in oneDNN's layout for its GEMMs (about
 * 4 x channels x its output channels bytes). Where BF16 is widened (above)
 * the copy and the projection are fp32, and a bf16 token-major copy of fmap
 * and fp32 copies of w_qkv, qkv_bias and the tables are added. The query
 * makes the GEMMs it sizes, as a first call would. */
POSENC_API posenc_status posenc_bottleneck_workspace_size(posenc_context* context,
                                                          const posenc_bottleneck_desc* desc,
                                                          size_t* bytes);

/* Runs the block. workspace: NULL (posenc's own, kept as posenc_attention
 * keeps it) or at least posenc_bottleneck_workspace_size bytes. Errors (nothing written) as
 * posenc_attention: NULL pointers, sizes, dtypes, scale, flags, stride,
 * overflow, out overlapping an input or the workspace, workspace_bytes too
 * small.
 * Added in 0.3. */
POSENC_API posenc_status posenc_bottleneck(posenc_context* context,
                                           const posenc_bottleneck_desc* desc,
                                           const posenc_bottleneck_tensors* tensors,
                                           void* workspace, size_t workspace_bytes);

/* posenc_bottleneck without a qkv bias, the tensors as arguments (errors
 * name them without "tensors->"). */
POSENC_API posenc_status posenc_bottleneck_mhsa(posenc_context* context,
                                                const posenc_bottleneck_desc* desc,
                                                const void* fmap, const void* w_qkv,
                                                const void* rel_h, const void* rel_w,
                                                void* out, void* workspace,
                                                size_t workspace_bytes);

#ifdef __cplusplus
}
#endif

#endif /* POSENC_ATTENTION_H */
