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
