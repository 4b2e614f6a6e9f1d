"""Models' attention as transformers writes it (their eager paths, in torch)
and torch's scaled_dot_product_attention (through the float64 reference):
the definitions posenc's options are checked against."""
import math

import torch

import reference


def gemma2_attention(q, k, v, scale, softcap, mask):
    """Gemma 2's eager attention as transformers writes it: the scaled
    logits divided by the cap, tanh, times the cap, then the mask."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    logits = torch.matmul(q, k.transpose(2, 3)) * scale
    logits = torch.tanh(logits / softcap) * softcap
    return torch.matmul(torch.softmax(logits + mask, dim=-1), v)


def gpt_oss_attention(q, k, v, sinks, scale, mask):
    """gpt-oss's eager attention as transformers writes it: the head's sink
    concatenated to each row's scaled, masked logits, the softmax over both,
    the sink's column dropped before the product with v."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    logits = torch.matmul(q, k.transpose(2, 3)) * scale + mask
    sink = sinks.reshape(1, -1, 1, 1).expand(q.shape[0], -1, q.shape[2], -1)
    combined = torch.cat([logits, sink], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = torch.softmax(combined, dim=-1, dtype=combined.dtype)
    return torch.matmul(probs[..., :-1], v)


def sdpa_attention(q, k, v, mask=None, scale=None, is_causal=False):
    """torch's scaled_dot_product_attention as its documentation defines it
    (float64, numpy): k and v repeated to q's heads (enable_gqa), scale
    1/sqrt(d) by default, is_causal aligned top-left, a bool mask's False
    -inf, a float mask added; a row that sees no key is zeros (torch 2.5's)."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    if mask is not None and mask.dtype == torch.bool:
        mask = torch.where(mask, 0.0, -torch.inf)
    return reference.attention(q.numpy(), k.numpy(), v.numpy(),
                               q.shape[-1] ** -0.5 if scale is None else scale,
                               causal=is_causal, mask=None if mask is None else mask.numpy())


def relative_positions(tokens, d_model, max_len=5000):
    """NeMo's RelPositionalEncoding (ESPnet's latest): sinusoids of the
    positions max_len - 1 down to -(max_len - 1) (sin in the even columns,
    cos in the odd, frequencies 10000^(-2i/d_model)), the 2T - 1 rows of
    positions T - 1 down to -(T - 1) sliced around the centre: [1, 2T-1, D]."""
    positions = torch.arange(max_len - 1, -max_len, -1, dtype=torch.float32).unsqueeze(1)
    pe = torch.zeros(positions.size(0), d_model)
    div_term = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float32)
                         * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(positions * div_term)
    pe[:, 1::2] = torch.cos(positions * div_term)
    pe = pe.unsqueeze(0)
    center = pe.size(1) // 2 + 1
    return pe[:, center - tokens:center + tokens - 1]


def rel_shift(x):
    """Transformer-XL's shift as NeMo writes it: [b, h, t1, t2] padded with
    a column of zeros on the left, read as [b, h, t2 + 1, t1], its first row
    dropped, read back as [b, h, t1, t2]."""
    b, h, qlen, pos_len = x.size()
    x = torch.nn.functional.pad(x, pad=(1, 0))
    x = x.view(b, h, -1, qlen)
    return x[:, :, 1:].view(b, h, qlen, pos_len)


def conformer_attention(q, k, v, p, pos_bias_u, pos_bias_v, pad_mask=None):
    """NeMo's RelPositionMultiHeadAttention after its projections: q, k, v
    [B, H, T, d], p = linear_pos(pos_emb) as [1, H, 2T-1, d], pos_bias_u and
    pos_bias_v [H, d]; (q + u) k^T plus the shifted (q + v) p^T, over
    sqrt(d); pad_mask [B, T, T] (True: masked) filled with -10000 before the
    softmax and with 0 after it."""
    q = q.transpose(1, 2)  # [B, T, H, d], as the model adds its biases
    q_with_bias_u = (q + pos_bias_u).transpose(1, 2)
    q_with_bias_v = (q + pos_bias_v).transpose(1, 2)
    matrix_bd = rel_shift(torch.matmul(q_with_bias_v, p.transpose(-2, -1)))
    matrix_bd = matrix_bd[:, :, :, :k.size(-2)]
    matrix_ac = torch.matmul(q_with_bias_u, k.transpose(-2, -1))
    scores = (matrix_ac + matrix_bd) / k.size(-1) ** 0.5
    if pad_mask is None:
        return torch.matmul(torch.softmax(scores, dim=-1), v)
    mask = pad_mask.unsqueeze(1)
    attn = torch.softmax(scores.masked_fill(mask, -10000.0), dim=-1).masked_fill(mask, 0.0)
    return torch.matmul(attn, v)


def log_bucket_position(relative_pos, bucket_size, max_position):
    """DeBERTa-v2's make_log_bucket_position as transformers computes it:
    relative_pos a long tensor, the log buckets in float32 (long / int and
    torch.tensor of a Python float are float32), returned as float32."""
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    near = (relative_pos < mid) & (relative_pos > -mid)
    abs_pos = torch.where(near, torch.tensor(mid - 1).type_as(relative_pos),
                          torch.abs(relative_pos))
    log_pos = torch.ceil(torch.log(abs_pos / mid)
                         / torch.log(torch.tensor((max_position - 1) / mid))
                         * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)


def deberta_relative_positions(query_size, key_size, bucket_size=-1, max_position=-1):
    """DeBERTa-v2's build_relative_position: query id minus key id [q, k],
    log-bucketed where bucket_size and max_position are > 0, as long."""
    q_ids = torch.arange(query_size, dtype=torch.long)
    k_ids = torch.arange(key_size, dtype=torch.long)
    rel = q_ids[:, None] - k_ids[None, :]
    if bucket_size > 0 and max_position > 0:
        rel = log_bucket_position(rel, bucket_size, max_position)
    return rel.to(torch.long)


def deberta_attention(q, k, v, pos_key, pos_query, position_buckets, max_relative_positions,
                      attention_mask=None):
    """DebertaV2's DisentangledSelfAttention (pos_att_type c2p and p2c)
    after its projections: q [B, H, T, d], k and v [B, Hk, T, d] (repeated
    to q's heads), pos_key and pos_query (its pos_key_layer and
    pos_query_layer) [2S, d] or [H, 2S, d], S = position_buckets if > 0
    else max_relative_positions; scores q k^T, the c2p term gathered from
    q pos_key^T at clamp(rel + S), the p2c term from k pos_query^T at
    clamp(-rel + S) transposed, all over sqrt(3 d); attention_mask [B, T]
    of 0 and 1 as its XSoftmax reads the pair mask: masked scores at the
    dtype's min before the softmax, the probabilities zeroed after (a padded
    query's row is zeros)."""
    groups = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
    tokens, head_dim = q.shape[2], q.shape[3]
    span = position_buckets if position_buckets > 0 else max_relative_positions
    rel = deberta_relative_positions(tokens, tokens, position_buckets, max_relative_positions)
    scale = (head_dim * 3) ** 0.5
    scores = torch.matmul(q, k.transpose(-1, -2)) / scale
    scores = scores + deberta_c2p_p2c(q, k, pos_key, pos_query, rel, span) / scale
    return deberta_softmax_times(scores, attention_mask, v)


def deberta_c2p_p2c(q, k, pos_key, pos_query, rel, span):
    """DeBERTa's two position terms, both versions': q pos_key^T gathered at
    clamp(rel + span, 0, 2 span - 1) (c2p) plus k pos_query^T gathered at
    clamp(-rel + span, ...) and transposed (p2c); rel query minus key."""
    shape = q.shape[:2] + rel.shape
    c2p = torch.matmul(q, pos_key.transpose(-1, -2))
    c2p = torch.gather(c2p, -1, torch.clamp(rel + span, 0, 2 * span - 1).expand(shape))
    p2c = torch.matmul(k, pos_query.transpose(-1, -2))
    p2c = torch.gather(p2c, -1, torch.clamp(-rel + span, 0, 2 * span - 1).expand(shape))
    return c2p + p2c.transpose(-1, -2)


def deberta_softmax_times(scores, attention_mask, v):
    """DeBERTa's XSoftmax of the scores with the pair mask of attention_mask
    [B, T] (0 and 1; None: none), masked scores at the dtype's min before
    the softmax and the probabilities zeroed after (a padded query's row is
    zeros), times v."""
    if attention_mask is None:
        return torch.matmul(torch.softmax(scores, -1), v)
    valid = attention_mask.bool()
    masked = ~(valid[:, None, :, None] & valid[:, None, None, :])
    scores = scores.masked_fill(masked, torch.finfo(scores.dtype).min)
    probs = torch.softmax(scores, -1).masked_fill(masked, 0.0)
    return torch.matmul(probs, v)


def deberta_v1_attention(query_layer, key_layer, value_layer, q_bias, v_bias, rel_embeddings,
                         pos_proj, pos_q_proj, pos_q_bias, max_relative_positions,
                         attention_mask=None):
    """DeBERTa (v1)'s DisentangledSelfAttention as transformers writes it
    (modeling_deberta.py, pos_att_type c2p and p2c, no talking heads) after
    its in_proj: query_layer, key_layer, value_layer [B, H, T, d]; q_bias
    and v_bias [H, d] added to q and v; q over sqrt(3 d); rel_embeddings
    [2S, D], S = max_relative_positions, sliced to the span min(T, S)
    around S; pos_key_layer its pos_proj (weight [H d, D]), pos_query_layer
    its pos_q_proj (with pos_q_bias) over sqrt(3 d); relative_pos = query
    minus key; c2p gathered at clamp(r + span, 0, 2 span - 1), p2c at
    clamp(-r + span, ...) transposed; XSoftmax with the pair mask of
    attention_mask [B, T]."""
    _, heads, tokens, head_dim = query_layer.shape
    query_layer = query_layer + q_bias[:, None]
    value_layer = value_layer + v_bias[:, None]
    scale = math.sqrt(head_dim * 3)
    query_layer = query_layer / scale
    scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
    span = min(tokens, max_relative_positions)
    rel_embeddings = rel_embeddings[max_relative_positions - span:max_relative_positions + span]

    def per_head(x):  # [2 span, H d] -> [H, 2 span, d], as transpose_for_scores
        return x.view(2 * span, heads, head_dim).permute(1, 0, 2)

    pos_key_layer = per_head(rel_embeddings @ pos_proj.T)
    pos_query_layer = per_head(rel_embeddings @ pos_q_proj.T + pos_q_bias) / scale
    rel = deberta_relative_positions(tokens, tokens)
    scores = scores + deberta_c2p_p2c(query_layer, key_layer, pos_key_layer, pos_query_layer,
                                      rel, span)
    return deberta_softmax_times(scores, attention_mask, value_layer)


def bert_relative_key_query(q, k, v, distance_embedding, query_offset=0):
    """transformers' BertSelfAttention with position_embedding_type
    "relative_key_query" (RoBERTa's, ELECTRA's likewise): q [B, H, Tq, d],
    k and v [B, H, Tk, d], distance_embedding its nn.Embedding's weight
    [2M - 1, d]; the query ids from query_offset (a decode step's from
    Tk - 1), distance = query id - key id looked up at distance + M - 1;
    scores q k^T + q . e + k . e, over sqrt(d), softmax, times v."""
    rows, head_dim = distance_embedding.shape
    longest = (rows + 1) // 2
    ids_l = torch.arange(q.shape[2])[:, None] + query_offset
    ids_r = torch.arange(k.shape[2])[None, :]
    positional = distance_embedding[ids_l - ids_r + longest - 1]  # [Tq, Tk, d]
    scores = torch.matmul(q, k.transpose(-1, -2))
    scores = scores + torch.einsum("bhld,lrd->bhlr", q, positional)
    scores = scores + torch.einsum("bhrd,lrd->bhlr", k, positional)
    probs = torch.softmax(scores / head_dim ** 0.5, -1)
    return torch.matmul(probs, v)


def wavlm_buckets(q_len, kv_len, num_buckets=320, max_distance=800):
    """WavLM's bidirectional relative-position buckets [q_len, kv_len] as
    transformers computes them (WavLMAttention._relative_positions_bucket):
    the distance key minus query; half the buckets for each sign (keys
    after the query in the upper half); below half // 2 the distance
    itself, past it the log buckets, whose arithmetic is float32's (the
    long distance made float, divided and scaled by Python floats), cut to
    long and clipped to the half's last bucket."""
    distance = torch.arange(kv_len, dtype=torch.long)[None, :] - \
        torch.arange(q_len, dtype=torch.long)[:, None]
    half = num_buckets // 2
    buckets = (distance > 0).to(torch.long) * half
    distance = distance.abs()
    max_exact = half // 2
    log_part = torch.log(distance.float() / max_exact) / math.log(max_distance / max_exact)
    large = (max_exact + log_part * (half - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, half - 1))
    return buckets + torch.where(distance < max_exact, distance, large)


def wavlm_gate(hidden, weight, bias, const):
    """WavLM's gate of the position bias (WavLMAttention.forward): hidden
    [B, T, H*d] split into heads [B, H, T, d], projected by
    gru_rel_pos_linear (weight [8, d], bias [8]) and summed in two groups
    of four, each group's sigmoid a gate; gate_a * (gate_b *
    gru_rel_pos_const - 1) + 2, const [1, H, 1, 1]: [B, H, T]."""
    batch, tokens, _ = hidden.shape
    heads = const.shape[1]
    per_head = hidden.view(batch, tokens, heads, -1).permute(0, 2, 1, 3)
    projected = torch.nn.functional.linear(per_head, weight, bias)
    projected = projected.view(per_head.shape[:-1] + (2, 4)).sum(-1)
    gate_a, gate_b = torch.sigmoid(projected).chunk(2, dim=-1)
    return (gate_a * (gate_b * const - 1.0) + 2.0).squeeze(-1)


def wavlm_attention(q, k, v, rel_attn_embed, gate, num_buckets=320, max_distance=800,
                    key_padding_mask=None):
    """WavLMAttention after its projections: q, k, v [B, H, T, d],
    rel_attn_embed its nn.Embedding's weight [num_buckets, H], gate [B, H,
    T] (wavlm_gate's); the bias rel_attn_embed[bucket] as [H, T, T] (its
    compute_bias), each query row's times its gate, added as
    F.multi_head_attention_forward adds attn_mask to q k^T / sqrt(d), with
    key_padding_mask [B, T] (True: a padded key) at -inf; softmax, times v."""
    tokens, head_dim = q.shape[2], q.shape[3]
    buckets = wavlm_buckets(tokens, k.shape[2], num_buckets, max_distance)
    bias = rel_attn_embed[buckets].permute(2, 0, 1)  # [H, Tq, Tk]
    scores = torch.matmul(q / head_dim ** 0.5, k.transpose(-1, -2))
    scores = scores + gate[..., None] * bias
    if key_padding_mask is not None:
        scores = scores.masked_fill(key_padding_mask[:, None, None, :], -torch.inf)
    return torch.matmul(torch.softmax(scores, -1), v)
