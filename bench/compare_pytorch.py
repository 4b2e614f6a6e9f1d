#!/usr/bin/env python3
"""posenc against seed-style PyTorch on the same shapes and thread count.

The PyTorch side is written here from the math, the way the seed articles
write it: the PositionalEncoding module (table built at construction), the
pad / flatten / pad / reshape / slice skew, the 1D and 2D relative logits
through einsum plus the skew, the bottleneck attention forward (materialized
scores + position logits, softmax, second einsum), and the rotate-half RoPE.
posenc is called through its C ABI with ctypes. For each case the script
prints the largest difference of the outputs, the median times, the speedup
and the peak extra memory of each side (measured in a child process).

Needs Debian's python3-torch and libopenblas0-openmp (without OpenBLAS,
torch's GEMMs fall back to reference BLAS and the comparison is meaningless),
and a built libposenc.so. Run with Debian's interpreter:

    /usr/bin/python3 bench/compare_pytorch.py [--lib build/src/libposenc.so]
        [--threads N] [--repeats N] [--only CASE,...] [--markdown]
"""
import argparse
import ctypes
import importlib.util
import math
import os
import subprocess
import sys

import numpy as np
import torch

from measure import median_seconds, print_table

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIB = os.path.join(HERE, "..", "build", "src", "libposenc.so")

F32, BF16 = 0, 1
c_f32p = ctypes.POINTER(ctypes.c_float)


# --- the C ABI -------------------------------------------------------------

def _load_abi():
    """The Python package's mirrors of the C structs (python/posenc/_abi.py,
    checked against the headers by its tests), without loading the package."""
    path = os.path.join(HERE, "..", "python", "posenc", "_abi.py")
    spec = importlib.util.spec_from_file_location("posenc_abi", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_abi = _load_abi()
AttentionDesc, AttentionTensors, RopeConfig = _abi.AttentionDesc, _abi.AttentionTensors, _abi.RopeConfig
AbsoluteResizeDesc = _abi.AbsoluteResizeDesc


def load_posenc(path):
    lib = ctypes.CDLL(path)
    for name in ("posenc_last_error", "posenc_version", "posenc_isa_name"):
        getattr(lib, name).restype = ctypes.c_char_p
    return lib


def check(lib, status):
    if status != 0:
        raise RuntimeError("posenc: " + lib.posenc_last_error().decode())


def ptr(tensor):
    assert tensor.is_contiguous()
    return ctypes.c_void_p(tensor.data_ptr())


def attention_desc(lib, B, H, T, d):
    """posenc_attention_desc_init's desc of B x H x T queries and keys of d."""
    desc = AttentionDesc()
    lib.posenc_attention_desc_init(ctypes.byref(desc), *(ctypes.c_int64(n) for n in
                                                          (B, H, T, T, d)))
    return desc


def run_attention(lib, ctx, desc, t, q=None, **tensors):
    """posenc_attention of t's q (or the given one), k and v into t's out,
    with the other tensors given (name -> tensor); returns out."""
    fields = {name: x.data_ptr() for name, x in tensors.items()}
    tensors = AttentionTensors(q=(t["q"] if q is None else q).data_ptr(), k=t["k"].data_ptr(),
                               v=t["v"].data_ptr(), out=t["out"].data_ptr(), **fields)
    check(lib, lib.posenc_attention(ctx, ctypes.byref(desc), ctypes.byref(tensors), None,
                                    ctypes.c_size_t(0)))
    return t["out"]


# --- seed-style PyTorch ----------------------------------------------------

def positional_encoding_table(max_length, d_model):
    pe = torch.zeros(max_length, d_model)
    k = torch.arange(0, max_length).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(k * div_term)
    pe[:, 1::2] = torch.cos(k * div_term)
    return pe.unsqueeze(0)


def relative_to_absolute(x):
    b, h, l, _ = x.shape
    x = torch.cat((x, torch.zeros((b, h, l, 1))), dim=3)
    flat = x.reshape(b, h, l * 2 * l)
    flat = torch.cat((flat, torch.zeros((b, h, l - 1))), dim=2)
    return flat.reshape(b, h, l + 1, 2 * l - 1)[:, :, :l, (l - 1):]


def relative_logits_1d(q, table):
    return relative_to_absolute(torch.einsum("bhtd,rd->bhtr", q, table))


def relative_logits_2d(q, rel_h, rel_w, height, width):
    """Seed 000's decomposition, with the height/width mix-up fixed."""
    b, h, n, d = q.shape
    grid = q.reshape(b, h, height, width, d)
    # along columns: for each row x1, a width-long 1D problem
    r_w = relative_logits_1d(grid.reshape(b, h * height, width, d), rel_w)
    r_w = r_w.reshape(b, h, height, width, width)          # [b,h,x1,y1,y2]
    r_h = relative_logits_1d(grid.transpose(2, 3).reshape(b, h * width, height, d), rel_h)
    r_h = r_h.reshape(b, h, width, height, height)         # [b,h,y1,x1,x2]
    r_w = r_w.unsqueeze(4).expand(b, h, height, width, height, width)
    r_h = r_h.permute(0, 1, 3, 2, 4).unsqueeze(5).expand(b, h, height, width, height, width)
    return (r_h + r_w).reshape(b, h, n, n)


def bottleneck_attention(q, k, v, rel_h, rel_w, height, width, scale):
    q = q * scale
    sim = torch.einsum("bhid,bhjd->bhij", q, k)
    sim = sim + relative_logits_2d(q, rel_h, rel_w, height, width)
    attn = sim.softmax(dim=-1)
    return torch.einsum("bhij,bhjd->bhid", attn, v)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rope_tables(seq_len, dim, base=10000.0):
    inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
    freqs = torch.outer(torch.arange(seq_len).float(), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[None, None], emb.sin()[None, None]


# --- cases: inputs, the torch way, the posenc way ---------------------------

class Case:
    def __init__(self, name, shape, make, torch_fn, posenc_fn, tolerance):
        self.name, self.shape = name, shape
        self.make, self.torch_fn, self.posenc_fn = make, torch_fn, posenc_fn
        self.tolerance = tolerance


def randn(*shape, scale=1.0):
    return torch.randn(*shape) * scale


def case_positional_encoding():
    B, T, D = 8, 2048, 512

    def make():
        return {"x": randn(B, T, D), "pe": positional_encoding_table(5000, D),
                "out": torch.zeros(B, T, D)}

    def posenc(lib, ctx, t):
        check(lib, lib.posenc_add_sinusoid(ctx, ctypes.c_int64(B), ctypes.c_int64(T),
                                           ctypes.c_int64(D), ctypes.c_int64(0),
                                           ctypes.c_double(10000.0), 0, ptr(t["x"]),
                                           ptr(t["out"])))
        return t["out"]

    # The difference is the fp32 tutorial table's own error (k * div_term
    # rounded in fp32); posenc reduces angles in double.
    return Case("PositionalEncoding forward", f"B{B} T{T} D{D}", make,
                lambda t: t["x"] + t["pe"][:, :T], posenc, 5e-4)


def case_rel_to_abs():
    B, H, L = 2, 8, 512

    def make():
        return {"r": randn(B, H, L, 2 * L - 1), "out": torch.zeros(B, H, L, L)}

    def posenc(lib, ctx, t):
        check(lib, lib.posenc_rel_to_abs(ctx, ctypes.c_int64(B), ctypes.c_int64(H),
                                         ctypes.c_int64(L), ptr(t["r"]), ptr(t["out"])))
        return t["out"]

    return Case("rel_to_abs skew", f"B{B} H{H} L{L}", make,
                lambda t: relative_to_absolute(t["r"]), posenc, 0.0)


def case_relative_1d():
    B, H, T, d = 1, 8, 2048, 64

    def make():
        return {"q": randn(B, H, T, d), "R": randn(2 * T - 1, d, scale=d ** -0.5),
                "out": torch.zeros(B, H, T, T)}

    def posenc(lib, ctx, t):
        check(lib, lib.posenc_relative_logits_1d(
            ctx, ctypes.c_int64(B), ctypes.c_int64(H), ctypes.c_int64(T), ctypes.c_int64(T),
            ctypes.c_int64(d), ptr(t["q"]), ptr(t["R"]), ctypes.c_int64(1), None,
            ptr(t["out"])))
        return t["out"]

    return Case("1D relative logits", f"B{B} H{H} T{T} d{d}", make,
                lambda t: relative_logits_1d(t["q"], t["R"]), posenc, 1e-4)


def case_relative_2d():
    B, H, X, Y, d = 8, 4, 14, 14, 128

    def make():
        return {"q": randn(B, H, X * Y, d), "Rh": randn(2 * X - 1, d, scale=d ** -0.5),
                "Rw": randn(2 * Y - 1, d, scale=d ** -0.5),
                "out": torch.zeros(B, H, X * Y, X * Y)}

    def posenc(lib, ctx, t):
        check(lib, lib.posenc_relative_logits_2d(
            ctx, ctypes.c_int64(B), ctypes.c_int64(H), ctypes.c_int64(X), ctypes.c_int64(Y),
            ctypes.c_int64(d), ptr(t["q"]), ptr(t["Rh"]), ptr(t["Rw"]), ctypes.c_int64(1),
            ptr(t["out"])))
        return t["out"]

    return Case("2D relative logits (full bias)", f"B{B} H{H} {X}x{Y} d{d}", make,
                lambda t: relative_logits_2d(t["q"], t["Rh"], t["Rw"], X, Y), posenc, 1e-4)


def case_bottleneck(B, H, X, Y, d):
    scale = d ** -0.5

    def make():
        return {"q": randn(B, H, X * Y, d), "k": randn(B, H, X * Y, d),
                "v": randn(B, H, X * Y, d), "Rh": randn(2 * X - 1, d, scale=scale),
                "Rw": randn(2 * Y - 1, d, scale=scale), "out": torch.zeros(B, H, X * Y, d)}

    def posenc(lib, ctx, t):
        desc = attention_desc(lib, B, H, X * Y, d)
        desc.bias = 3  # RELATIVE_2D
        desc.map_height, desc.map_width = X, Y
        return run_attention(lib, ctx, desc, t, table_h=t["Rh"], table_w=t["Rw"])

    return Case("bottleneck attention forward", f"B{B} H{H} {X}x{Y} d{d}", make,
                lambda t: bottleneck_attention(t["q"], t["k"], t["v"], t["Rh"], t["Rw"], X, Y,
                                               scale), posenc, 1e-4)


def conformer_attention(q, k, v, p, pos_bias_u, pos_bias_v):
    """NeMo's RelPositionMultiHeadAttention after its projections (q, k, v
    [B, H, T, d], p [1, H, 2T-1, d], the biases [H, d]): (q + v) p^T shifted
    by the pad / view / slice, then, as NeMo's use_pytorch_sdpa path, torch's
    scaled_dot_product_attention of q + u with that as its mask (scaled by
    1/sqrt(d)); on a torch without it (1.13), (q + u) k^T added, softmax, v."""
    b, h, t, d = q.shape
    bd = torch.matmul(q + pos_bias_v[:, None], p.transpose(-2, -1))
    bd = torch.nn.functional.pad(bd, pad=(1, 0)).view(b, h, -1, t)[:, :, 1:]
    bd = bd.reshape(b, h, t, 2 * t - 1)[:, :, :, :t] / math.sqrt(d)
    q_u = q + pos_bias_u[:, None]
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:
        return sdpa(q_u, k, v, attn_mask=bd)
    ac = torch.matmul(q_u, k.transpose(-2, -1)) / math.sqrt(d)
    return torch.matmul(torch.softmax(ac + bd, dim=-1), v)


def case_conformer(B, H, T, d):
    def make():
        return {"q": randn(B, H, T, d), "k": randn(B, H, T, d), "v": randn(B, H, T, d),
                "p": randn(1, H, 2 * T - 1, d), "u": randn(H, d), "v_bias": randn(H, d),
                "out": torch.zeros(B, H, T, d)}

    def posenc(lib, ctx, t):
        # q + pos_bias_u as q and pos_bias_v - pos_bias_u, as a caller passes them.
        q = t["q"] + t["u"][:, None]
        query_bias = t["v_bias"] - t["u"]
        desc = attention_desc(lib, B, H, T, d)
        desc.bias = 2  # RELATIVE_1D
        desc.tables_per_head = 1
        desc.relative_query_bias = 1
        return run_attention(lib, ctx, desc, t, q=q, table=t["p"],
                             relative_query_bias=query_bias)

    return Case("Conformer relative attention", f"B{B} H{H} T{T} d{d}", make,
                lambda t: conformer_attention(t["q"], t["k"], t["v"], t["p"], t["u"],
                                              t["v_bias"]), posenc, 1e-4)


def deberta_bias_parts(q, k, pos_key, pos_query, c2p_index, p2c_index, scale):
    """DebertaV2's c2p and p2c terms as transformers computes them, over
    [B*H, T, d] with bmm: q pos_key^T gathered at c2p_index, k pos_query^T
    gathered at p2c_index and transposed, each divided by the scale."""
    bh, t, _ = q.shape
    repeat = bh // pos_key.shape[0]
    c2p = torch.bmm(q, pos_key.repeat(repeat, 1, 1).transpose(-1, -2))
    c2p = torch.gather(c2p, -1, c2p_index.expand(bh, t, t))
    p2c = torch.bmm(k, pos_query.repeat(repeat, 1, 1).transpose(-1, -2))
    p2c = torch.gather(p2c, -1, p2c_index.expand(bh, t, t)).transpose(-1, -2)
    return c2p / scale, p2c / scale


def deberta_attention(t, sdpa):
    """DebertaV2's DisentangledSelfAttention after its projections (q, k, v
    [B, H, T, d], pos_key and pos_query [H, 2S, d], no padding): its eager
    way (bmm, gather, softmax, bmm, in fp32), or, the best PyTorch path,
    torch's scaled_dot_product_attention with c2p + p2c materialized as its
    float mask (on a torch without it, 1.13, the eager softmax)."""
    b, h, n, d = t["q"].shape
    scale = math.sqrt(d * 3)
    q, k, v = (t[name].reshape(b * h, n, d) for name in ("q", "k", "v"))
    c2p, p2c = deberta_bias_parts(q, k, t["pos_key"], t["pos_query"], t["c2p_index"],
                                  t["p2c_index"], scale)
    function = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa and function is not None:
        return function(t["q"], t["k"], t["v"], attn_mask=(c2p + p2c).view(b, h, n, n),
                        scale=1 / scale)
    scores = torch.bmm(q, k.transpose(-1, -2) / scale)
    scores += c2p
    scores += p2c
    return torch.bmm(torch.softmax(scores, -1), v).view(b, h, n, d)


def deberta_relative_index(tokens, buckets, max_relative):
    """DebertaV2's build_relative_position (query minus key, log buckets in
    float32 as make_log_bucket_position) and the c2p and p2c gather indices
    clamped to the 2S rows: built once per forward, outside the timing."""
    ids = torch.arange(tokens)
    rel = ids[:, None] - ids[None, :]
    sign, mid = torch.sign(rel), buckets // 2
    abs_pos = torch.where((rel < mid) & (rel > -mid), torch.tensor(mid - 1), rel.abs())
    log_range = torch.log(torch.tensor((max_relative - 1) / mid))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / log_range * (mid - 1)) + mid
    rel = torch.where(abs_pos <= mid, rel.float(), log_pos * sign).long()
    return (torch.clamp(rel + buckets, 0, 2 * buckets - 1)[None],
            torch.clamp(-rel + buckets, 0, 2 * buckets - 1)[None])


def case_deberta(B, H, T, d, buckets, max_relative, sdpa):
    def make():
        c2p_index, p2c_index = deberta_relative_index(T, buckets, max_relative)
        return {"q": randn(B, H, T, d), "k": randn(B, H, T, d), "v": randn(B, H, T, d),
                "pos_key": randn(H, 2 * buckets, d), "pos_query": randn(H, 2 * buckets, d),
                "c2p_index": c2p_index, "p2c_index": p2c_index,
                "out": torch.zeros(B, H, T, d)}

    def posenc(lib, ctx, t):
        desc = attention_desc(lib, B, H, T, d)
        desc.scale = 1 / math.sqrt(3 * d)
        desc.bias = 8  # DISENTANGLED
        desc.tables_per_head = 1
        desc.num_buckets, desc.max_distance = buckets, max_relative
        return run_attention(lib, ctx, desc, t, table=t["pos_key"], key_table=t["pos_query"])

    torch_way = "SDPA, c2p + p2c as its mask" if sdpa else "transformers eager"
    return Case(f"DeBERTa-v3 disentangled attention ({torch_way})", f"B{B} H{H} T{T} d{d}",
                make, lambda t: deberta_attention(t, sdpa), posenc, 1e-4)


def wavlm_position_bias(table, tokens, buckets, max_distance):
    """WavLM's compute_bias (the first layer's, which every layer gates):
    T5's bidirectional buckets of key minus query in float32, its table
    [buckets, H] looked up, as [H, T, T]."""
    rel = torch.arange(tokens)[None, :] - torch.arange(tokens)[:, None]
    half = buckets // 2
    bucket = (rel > 0).long() * half
    n = rel.abs()
    exact = half // 2
    large = torch.log(n.float() / exact) / math.log(max_distance / exact) * (half - exact)
    large = torch.clamp((exact + large).long(), max=half - 1)
    bucket += torch.where(n < exact, n, large)
    return table[bucket].permute(2, 0, 1)


def wavlm_attention(t):
    """A WavLM layer's attention after its projections, as transformers runs
    it: the first layer's position bias [H, T, T] (made once per forward,
    outside the timing) times the layer's gate [B, H, T] per query row,
    materialized, as the float mask of torch's scaled_dot_product_attention
    (what F.multi_head_attention_forward calls without weights; on a torch
    without it, 1.13, q k^T / sqrt(d) + the bias, softmax, v)."""
    gated = t["gate"][..., None] * t["position_bias"]
    function = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if function is not None:
        return function(t["q"], t["k"], t["v"], attn_mask=gated)
    scores = torch.matmul(t["q"], t["k"].transpose(-1, -2)) / math.sqrt(t["q"].shape[-1])
    return torch.matmul(torch.softmax(scores + gated, -1), t["v"])


def case_wavlm(B, H, T, d, buckets=320, max_distance=800):
    def make():
        table = randn(buckets, H)
        return {"q": randn(B, H, T, d), "k": randn(B, H, T, d), "v": randn(B, H, T, d),
                "table": table, "gate": 1 + 2 * torch.rand(B, H, T),
                "position_bias": wavlm_position_bias(table, T, buckets, max_distance),
                "out": torch.zeros(B, H, T, d)}

    def posenc(lib, ctx, t):
        desc = attention_desc(lib, B, H, T, d)
        desc.bias = 6  # T5
        desc.num_buckets, desc.max_distance, desc.bidirectional = buckets, max_distance, 1
        desc.bias_gate = 1
        return run_attention(lib, ctx, desc, t, table=t["table"], bias_gate=t["gate"])

    return Case("WavLM gated relative attention (SDPA, gated bias as its mask)",
                f"B{B} H{H} T{T} d{d}", make, wavlm_attention, posenc, 1e-4)


def case_rope():
    B, H, T, d = 1, 32, 2048, 128

    def make():
        cos, sin = rope_tables(T, d)
        return {"q": randn(B, H, T, d), "k": randn(B, H, T, d), "cos": cos, "sin": sin,
                "q_out": torch.zeros(B, H, T, d), "k_out": torch.zeros(B, H, T, d)}

    def torch_way(t):
        return (t["q"] * t["cos"] + rotate_half(t["q"]) * t["sin"],
                t["k"] * t["cos"] + rotate_half(t["k"]) * t["sin"])

    def posenc(lib, ctx, t):
        config = RopeConfig()
        check(lib, lib.posenc_rope_config_init(ctypes.byref(config), ctypes.c_int64(d)))
        check(lib, lib.posenc_rope_qk(ctx, ctypes.byref(config), None, None, 1, F32,
                                      ctypes.c_int64(B), ctypes.c_int64(T), ctypes.c_int64(H),
                                      ctypes.c_int64(H), ctypes.c_int64(d), ptr(t["q"]),
                                      ptr(t["q_out"]), ptr(t["k"]), ptr(t["k_out"])))
        return t["q_out"], t["k_out"]

    # As above: torch's fp32 angles t * inv_freq lose about 1e-4 by t = 2048.
    return Case("rotate-half RoPE (q and k)", f"B{B} H{H} T{T} d{d}", make, torch_way, posenc,
                1e-3)


def resample_abs_pos_embed(pos_embed, old_size, new_size, antialias):
    """timm's resample_abs_pos_embed with one prefix token, bicubic: the grid
    permuted to [1, D, H, W], interpolated, permuted back, the prefix
    concatenated."""
    d = pos_embed.shape[-1]
    grid = pos_embed[:, 1:].reshape(1, old_size, old_size, d).permute(0, 3, 1, 2)
    grid = torch.nn.functional.interpolate(grid, size=(new_size, new_size), mode="bicubic",
                                           antialias=antialias)
    return torch.cat([pos_embed[:, :1], grid.permute(0, 2, 3, 1).reshape(1, -1, d)], dim=1)


def case_resample(old_size, new_size, D, antialias):
    def make():
        return {"pe": randn(1, 1 + old_size ** 2, D), "out": torch.zeros(1, 1 + new_size ** 2, D)}

    def posenc(lib, ctx, t):
        desc = AbsoluteResizeDesc()
        lib.posenc_absolute_resize_desc_init(ctypes.byref(desc), *(
            ctypes.c_int64(n) for n in (D, old_size, old_size, new_size, new_size)))
        desc.antialias = int(antialias)
        check(lib, lib.posenc_resize_absolute_table_2d(ctx, ctypes.byref(desc), ptr(t["pe"]),
                                                       ptr(t["out"])))
        return t["out"]

    return Case("timm resample_abs_pos_embed" + (" (antialias)" if antialias else ""),
                f"{old_size}x{old_size} to {new_size}x{new_size} D{D}", make,
                lambda t: resample_abs_pos_embed(t["pe"], old_size, new_size, antialias),
                posenc, 1e-5)


CASES = {
    "pe": case_positional_encoding,
    "skew": case_rel_to_abs,
    "rel1d": case_relative_1d,
    "rel2d": case_relative_2d,
    "botnet14": lambda: case_bottleneck(8, 4, 14, 14, 128),
    "botnet64": lambda: case_bottleneck(1, 4, 64, 64, 64),
    "rope": case_rope,
    "resample_vit": lambda: case_resample(14, 32, 768, True),
    "resample_dinov2": lambda: case_resample(37, 74, 1024, False),
    "conformer": lambda: case_conformer(1, 8, 750, 64),
    # DeBERTa-v3-base: 12 heads of 64, position_buckets 256, max_relative_positions 512.
    "deberta": lambda: case_deberta(1, 12, 512, 64, 256, 512, sdpa=False),
    "deberta_sdpa": lambda: case_deberta(1, 12, 512, 64, 256, 512, sdpa=True),
    # WavLM-base+: 12 heads of 64, 10 s of audio (500 frames), 4 utterances.
    "wavlm": lambda: case_wavlm(4, 12, 500, 64),
}


# --- measuring ---------------------------------------------------------------

def max_difference(got, want):
    """Largest |got - want| over a tensor or a tuple of tensors."""
    if isinstance(got, tuple):
        return max(max_difference(g, w) for g, w in zip(got, want))
    return float((got - want).abs().max())


def blas_paths():
    """The BLAS libraries torch's GEMMs load (Debian picks one by alternatives:
    OpenBLAS's libblas.so.3 lies in an openblas folder)."""
    torch.randn(64, 64) @ torch.randn(64, 64)
    with open("/proc/self/maps") as maps:
        return sorted({line.split()[-1] for line in maps if "blas" in line.lower()})


def blas_name():
    return ", ".join(path.rsplit("/", 1)[-1] for path in blas_paths()) or "none found"


def peak_rss_mib():
    # VmHWM belongs to this process's address space; ru_maxrss would carry the
    # parent's peak across fork and exec.
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    raise RuntimeError("no VmHWM in /proc/self/status")


def measure_peak(args):
    """Child process: peak memory of one side of one case beyond its inputs
    and posenc's (zero-filled, so resident) output buffers, in MiB. torch's
    figure includes the output tensor it allocates."""
    torch.manual_seed(0)
    case = CASES[args.peak_case]()
    tensors = case.make()
    lib = load_posenc(args.lib) if args.peak_side == "posenc" else None
    before = peak_rss_mib()
    if lib is None:
        case.torch_fn(tensors)
    else:
        case.posenc_fn(lib, None, tensors)
    print(f"{peak_rss_mib() - before:.1f}")


def child_peak(args, name, side):
    out = subprocess.run([sys.executable, __file__, "--lib", args.lib, "--threads",
                          str(args.threads), "--peak-case", name, "--peak-side", side],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=os.path.normpath(DEFAULT_LIB))
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(CASES))
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--peak-case", help=argparse.SUPPRESS)
    parser.add_argument("--peak-side", help=argparse.SUPPRESS)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if args.peak_case:
        measure_peak(args)
        return 0

    lib = load_posenc(args.lib)
    paths = blas_paths()
    if paths and not any("openblas" in path.lower() for path in paths):
        print(f"warning: torch's BLAS is {blas_name()}, not OpenBLAS: Debian's torch then runs "
              "its GEMMs on the reference BLAS, and the timings say nothing "
              "(libopenblas0-openmp)", file=sys.stderr)
    names = [n for n in args.only.split(",") if n] or list(CASES)
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"--only: unknown {', '.join(unknown)}: choose from {', '.join(CASES)}")
    print(f"torch {torch.__version__} ({torch.get_num_threads()} threads, BLAS: {blas_name()}), "
          f"posenc {lib.posenc_version().decode()} on "
          f"{lib.posenc_isa_name(lib.posenc_best_isa()).decode()}, "
          f"{args.threads} threads")
    header = ["case", "shape", "max abs diff", "torch ms", "posenc ms", "speedup",
              "torch MiB", "posenc MiB"]
    rows = []
    failed = False
    for name in names:
        torch.manual_seed(0)
        case = CASES[name]()
        tensors = case.make()
        with torch.no_grad():
            want = case.torch_fn(tensors)
            got = case.posenc_fn(lib, None, tensors)
            diff = max_difference(got, want)
            t_torch = median_seconds(lambda: case.torch_fn(tensors), args.repeats)
            t_posenc = median_seconds(lambda: case.posenc_fn(lib, None, tensors), args.repeats)
        failed |= not diff <= case.tolerance
        rows.append((case.name, case.shape, f"{diff:.2g}", f"{t_torch * 1e3:.2f}",
                     f"{t_posenc * 1e3:.2f}", f"{t_torch / t_posenc:.1f}x",
                     f"{child_peak(args, name, 'torch'):.0f}",
                     f"{child_peak(args, name, 'posenc'):.0f}"))
        del tensors, want, got
    print_table(header, rows, args.markdown)
    if failed:
        print("OUTPUTS DIFFER BEYOND TOLERANCE", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
