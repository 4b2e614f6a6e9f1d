"""Naive float64 references written from the headers' definitions."""
import numpy as np


def sinusoid(positions, dim, base=10000.0, layout="interleaved"):
    half = (dim + 1) // 2
    w = base ** (-2.0 * np.arange(half) / dim)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * w[None, :]
    out = np.zeros((len(angles), dim))
    if layout == "interleaved":
        out[:, 0::2] = np.sin(angles)
        out[:, 1::2] = np.cos(angles)[:, : dim // 2]
    else:
        out[:, :half] = np.sin(angles)
        out[:, half:] = np.cos(angles)[:, : dim // 2]
    return out


def relative_rows_1d(q_len, kv_len, offset, clip):
    """row(i, j) of the 1D relative table (relative.h / attention.h)."""
    i = np.arange(q_len)[:, None]
    j = np.arange(kv_len)[None, :]
    if clip:
        return clip + np.clip(j - (offset + i), -clip, clip)
    return j - i + q_len - 1  # whatever the offset


def attention(q, k, v, scale, causal=False, offset=0, mask=None, value_rows=None,
              value_table=None, bias_uses_scaled_q=True, tables=None):
    """BHTD float64 attention; tables(q or scale*q) gives the bias [B,H,Tq,Tk]."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    s = scale * np.einsum("bhid,bhjd->bhij", q, k)
    if tables is not None:
        s = s + tables(q * scale if bias_uses_scaled_q else q)
    if mask is not None:
        s = s + mask
    q_len, kv_len = q.shape[2], k.shape[2]
    if causal:
        visible = np.arange(kv_len)[None, :] <= offset + np.arange(q_len)[:, None]
        s = np.where(visible, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    p = np.exp(s - m)
    denominator = p.sum(axis=-1, keepdims=True)
    a = np.divide(p, denominator, out=np.zeros_like(p), where=denominator > 0)
    out = np.einsum("bhij,bhjd->bhid", a, v)
    if value_table is not None:  # Shaw's relative values
        out = out + np.einsum("bhij,hijd->bhid", a, _gather(value_table, value_rows, q.shape[1]))
    return out


def _gather(table, rows, heads):
    """table[rows[i, j]] as [heads, Tq, Tk, d], shared or per-head table."""
    t = np.asarray(table, dtype=np.float64)
    t = t if t.ndim == 3 else t[None]
    return np.broadcast_to(t[:, rows], (heads,) + rows.shape + (t.shape[-1],))


def table_logits(q, table, rows):
    """q [B,H,Tq,d] . table[rows[i,j]]."""
    return np.einsum("bhid,hijd->bhij", q, _gather(table, rows, q.shape[1]))


def relative_2d(q, table_h, table_w, height, width):
    """Full 2D bias [B,H,N,N] of relative.h / attention.h (key minus query)."""
    x = np.repeat(np.arange(height), width)
    y = np.tile(np.arange(width), height)
    rows_h = x[None, :] - x[:, None] + height - 1
    rows_w = y[None, :] - y[:, None] + width - 1
    return table_logits(q, table_h, rows_h) + table_logits(q, table_w, rows_w)


def rope(x, inv_freq, positions, pairing="half_split", rotary_dim=None, factor=1.0):
    """x [B,T,H,D] rotated; positions [B,T]."""
    x = np.asarray(x, dtype=np.float64)
    rotary_dim = rotary_dim or x.shape[-1]
    half = rotary_dim // 2
    angles = np.asarray(positions, dtype=np.float64)[..., None] * inv_freq[None, None, :]
    cos, sin = np.cos(angles)[:, :, None, :], np.sin(angles)[:, :, None, :]
    out = x.copy()
    if pairing == "half_split":
        x0, x1 = x[..., :half], x[..., half:rotary_dim]
        out[..., :half] = factor * (x0 * cos - x1 * sin)
        out[..., half:rotary_dim] = factor * (x1 * cos + x0 * sin)
    else:
        x0, x1 = x[..., 0:rotary_dim:2], x[..., 1:rotary_dim:2]
        out[..., 0:rotary_dim:2] = factor * (x0 * cos - x1 * sin)
        out[..., 1:rotary_dim:2] = factor * (x1 * cos + x0 * sin)
    return out


def swin_index(window_height, window_width, class_token=False):
    """Swin's relative_position_index (and BEiT's with its class token), from
    the papers' definition: (dy + Wh - 1)(2Ww - 1) + dx + Ww - 1, (dy, dx)
    the query's coordinates minus the key's; BEiT's class token reads rows
    L (class to patch), L + 1 (patch to class), L + 2 (class to class)."""
    y = np.repeat(np.arange(window_height), window_width)
    x = np.tile(np.arange(window_width), window_height)
    index = (y[:, None] - y[None, :] + window_height - 1) * (2 * window_width - 1) + \
        x[:, None] - x[None, :] + window_width - 1
    if not class_token:
        return index
    entries = (2 * window_height - 1) * (2 * window_width - 1)
    full = np.empty((index.shape[0] + 1,) * 2, dtype=index.dtype)
    full[1:, 1:] = index
    full[0, 1:], full[1:, 0], full[0, 0] = entries, entries + 1, entries + 2
    return full


def distances(q_len, kv_len, offset=0):
    """Key minus query, d(i, j) = j - (offset + i)."""
    return np.arange(kv_len)[None, :] - (offset + np.arange(q_len)[:, None])


def t5_buckets(relative_position, bidirectional, num_buckets, max_distance):
    """transformers' T5Attention._relative_position_bucket, step for step in
    torch (its fp32 log decides the truncation)."""
    import math
    import torch
    position = torch.as_tensor(relative_position, dtype=torch.long)
    buckets = torch.zeros_like(position)
    if bidirectional:
        num_buckets //= 2
        buckets += (position > 0).to(torch.long) * num_buckets
        position = torch.abs(position)
    else:
        position = -torch.min(position, torch.zeros_like(position))
    max_exact = num_buckets // 2
    is_small = position < max_exact
    large = max_exact + (torch.log(position.float() / max_exact) /
                         math.log(max_distance / max_exact) *
                         (num_buckets - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, num_buckets - 1))
    buckets += torch.where(is_small, position, large)
    return buckets.numpy()


def alibi_slopes(heads):
    """Press et al.'s get_slopes."""
    import math

    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:heads - closest]


def rope_inverse_frequencies(dim, base, scaling="none", factor=1.0, original_max_positions=0,
                             sequence_length=0, beta_fast=32.0, beta_slow=1.0,
                             low_freq_factor=1.0, high_freq_factor=4.0,
                             fractional_correction_range=False):
    """(inv_freq, attention factor) as transformers' modeling_rope_utils
    computes them (its _compute_*_parameters), step for step in float64."""
    import math
    exponents = np.arange(0, dim, 2) / dim
    if scaling == "dynamic_ntk":  # max_position_embeddings = original_max_positions
        length = max(sequence_length, original_max_positions)
        base = base * ((factor * length / original_max_positions) - (factor - 1)) ** (
            dim / (dim - 2))
    inv_freq = 1.0 / base ** exponents
    if scaling == "linear":
        return inv_freq / factor, 1.0
    if scaling == "yarn":
        def correction_dim(rotations):
            return (dim * math.log(original_max_positions / (rotations * 2 * math.pi))) / (
                2 * math.log(base))
        low, high = correction_dim(beta_fast), correction_dim(beta_slow)
        if not fractional_correction_range:  # transformers' truncate
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, dim - 1)
        if low == high:
            high += 0.001
        ramp = np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)
        extrapolation = 1 - ramp
        inv_freq = inv_freq / factor * (1 - extrapolation) + inv_freq * extrapolation
        return inv_freq, (0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0)
    if scaling == "llama3":
        low_freq_wavelen = original_max_positions / low_freq_factor
        high_freq_wavelen = original_max_positions / high_freq_factor
        wavelen = 2 * math.pi / inv_freq
        scaled = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth = (original_max_positions / wavelen - low_freq_factor) / (
            high_freq_factor - low_freq_factor)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
        return np.where(medium, smoothed, scaled), 1.0
    return inv_freq, 1.0
