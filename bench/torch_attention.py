#!/usr/bin/env python3
"""posenc_attention against torch's scaled_dot_product_attention, same inputs.

The peer of each case is what timm runs: SDPA, with the 2D relative bias
built by timm's get_decomposed_rel_pos_bias and passed as attn_mask (SAM ViT's
fused path, heads folded into the batch: 3D tensors, which torch's CPU flash
kernel does not take, so it runs its math path); for the 2D cases also the
same bias passed with the heads apart (4D, which its flash kernel takes with
a mask from torch 2.3), and the speedup is against the faster of the two.
For each case, dtype and thread count both sides get the same
q, k, v and tables; the outputs are compared first (within measure.py's
RELATIVE_TOLERANCE of the largest output, else the script ends with status
1 after its table), then the script prints the median wall time of
--repeats calls after --warmup, the speedup, and the largest difference.
posenc follows torch.set_num_threads (posenc.context). Needs torch 2.0 or
later (SDPA), timm, and a built libposenc (found as the package says:
POSENC_LIBRARY, else the build tree).

    python3 bench/torch_attention.py [--cases plain,causal,rel2d,sam,decode]
        [--dtypes fp32,bf16] [--threads 1,all] [--repeats 10] [--decode-repeats 200]
        [--warmup 2] [--markdown]

Cases (issue 18's target shapes): plain and causal B1 H32 T2048 d128; rel2d,
posenc's 2D relative logits (tables indexed by key minus query, from the
scaled q) on B1 H4 64x64 d64; sam, SAM ViT-B's global attention (its tables
as stored, from the unscaled q) on B1 H12 64x64 d64; decode, one query
token against 512 cached ones, 32 query heads sharing 8 kv heads (Llama 3
8B's attention) on d128: there a call's fixed cost (Python and C) is a
visible part of its time; torch runs SDPA on k and v with their heads
repeated once, outside the timed call, and from torch 2.5 also its
grouped-query SDPA (enable_gqa: on CPU 4-8x slower than the repeated heads
on torch 2.6), the other column, the speedup against the faster. Decode
rows take --decode-repeats calls (a call is some tenths of a millisecond).
"All" threads are the CPUs the process may run on (its affinity), as nproc
counts them.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from measure import agrees, cpu_name, median_seconds, print_table  # noqa: E402

# case -> (heads, tokens or (height, width), head_dim)
CASES = {
    "plain": (32, 2048, 128),
    "causal": (32, 2048, 128),
    "rel2d": (4, (64, 64), 64),
    "sam": (12, (64, 64), 64),
    "decode": (32, 512, 128),
}
DECODE_KV_HEADS = 8
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


def make_inputs(case, dtype):
    """q, k, v [1, H, N, d] and the 2D tables [2 side - 1, d] (None for 1D);
    for decode q [1, H, 1, d] and k, v [1, DECODE_KV_HEADS, N, d]."""
    import torch
    heads, size, head_dim = CASES[case]
    tokens = size if isinstance(size, int) else size[0] * size[1]
    generator = torch.Generator().manual_seed(0)

    def randn(*shape, std=1.0):
        return (torch.randn(*shape, generator=generator) * std).to(dtype)

    if case == "decode":
        return (randn(1, heads, 1, head_dim), randn(1, DECODE_KV_HEADS, tokens, head_dim),
                randn(1, DECODE_KV_HEADS, tokens, head_dim), None, None)
    q, k, v = (randn(1, heads, tokens, head_dim) for _ in range(3))
    if isinstance(size, int):
        return q, k, v, None, None
    return q, k, v, randn(2 * size[0] - 1, head_dim, std=0.2), \
        randn(2 * size[1] - 1, head_dim, std=0.2)


def torch_way(case, q, k, v, table_h, table_w, other=False):
    """torch's call of the case; `other`: its other way (the 2D cases' bias
    with the heads apart, decode's grouped-query SDPA), None where there is
    none."""
    import torch
    import torch.nn.functional as F
    from timm.models.vision_transformer_sam import get_decomposed_rel_pos_bias

    heads, size, head_dim = CASES[case]
    if case in ("plain", "causal"):
        if other:
            return None
        return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=case == "causal")
    if case == "decode":
        if other:
            try:
                F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            except TypeError:  # before torch 2.5
                return None
            return lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
        group = heads // DECODE_KV_HEADS
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        return lambda: F.scaled_dot_product_attention(q, k, v)
    # timm's layout: heads folded into the batch. posenc's tables are timm's
    # with the rows reversed (key minus query against query minus key), and
    # its rel2d logits come from the scaled q.
    q3, k3, v3 = (x.reshape(-1, x.shape[-2], head_dim) for x in (q, k, v))
    if case == "rel2d":
        table_h, table_w = table_h.flip(0), table_w.flip(0)

    def run():
        bias_q = q3 * head_dim ** -0.5 if case == "rel2d" else q3
        bias = get_decomposed_rel_pos_bias(bias_q, table_h, table_w, size, size)
        if other:
            mask = bias.view(*q.shape[:2], *bias.shape[1:])  # [B, H, N, N]
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return F.scaled_dot_product_attention(q3, k3, v3, attn_mask=bias).view_as(q)
    return run


def posenc_way(case, q, k, v, table_h, table_w):
    import torch

    import posenc
    heads, size, head_dim = CASES[case]
    out = torch.empty_like(q)
    if case in ("plain", "causal", "decode"):
        return lambda: posenc.attention(q, k, v, causal=case == "causal", out=out)
    options = dict(table_h=table_h, table_w=table_w, map_size=size, out=out)
    if case == "sam":
        options.update(relative_order="query_minus_key", bias_uses_scaled_q=False)
    return lambda: posenc.attention(q, k, v, **options)


def measure(case, dtype, threads, args):
    """The case's table row, and whether the outputs agree."""
    import torch
    torch.set_num_threads(threads)
    inputs = make_inputs(case, getattr(torch, DTYPES[dtype]))
    ours, theirs = posenc_way(case, *inputs), torch_way(case, *inputs)
    repeats = args.decode_repeats if case == "decode" else args.repeats
    with torch.no_grad():
        want, got = theirs().float(), ours().float()
        diff, scale = (got - want).abs().max().item(), want.abs().max().item()
        torch_s = median_seconds(theirs, repeats, args.warmup)
        other_s = None
        theirs_other = torch_way(case, *inputs, other=True)
        if theirs_other is not None:
            diff = max(diff, (got - theirs_other().float()).abs().max().item())
            other_s = median_seconds(theirs_other, repeats, args.warmup)
        posenc_s = median_seconds(ours, repeats, args.warmup)
    heads, size, head_dim = CASES[case]
    shape = f"B1 H{heads} {'T%d' % size if isinstance(size, int) else '%dx%d' % size} d{head_dim}"
    if case == "decode":
        shape = f"B1 H{heads}/{DECODE_KV_HEADS} q1 kv{size} d{head_dim}"
    ok = agrees(diff, scale, dtype)
    other = "-" if other_s is None else f"{other_s * 1e3:.2f}"
    fastest_torch_s = min(torch_s, other_s or torch_s)
    return [case, shape, dtype, str(threads), f"{torch_s * 1e3:.2f}", other,
            f"{posenc_s * 1e3:.2f}", f"{fastest_torch_s / posenc_s:.2f}x",
            f"{diff:.2g} (of {scale:.2g}){'' if ok else ' DIFFERS'}"], ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--threads", default="1,all")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--decode-repeats", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    for name, known in ((args.cases, CASES), (args.dtypes, DTYPES)):
        unknown = set(name.split(",")) - set(known)
        if unknown:
            parser.error(f"unknown {', '.join(sorted(unknown))}: choose from {', '.join(known)}")

    import timm
    import torch

    import posenc
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        raise SystemExit(f"torch {torch.__version__} has no scaled_dot_product_attention "
                         "(torch 2.0 or later has)")
    every = len(os.sched_getaffinity(0))
    threads = [every if t == "all" else int(t) for t in args.threads.split(",")]
    print(f"{cpu_name()}, {every} CPUs; torch {torch.__version__}, timm {timm.__version__}, "
          f"posenc {posenc.version()} ({posenc.best_isa()}, {posenc.library_path})")
    agreed = []

    def lines():
        for case in args.cases.split(","):
            for dtype in args.dtypes.split(","):
                for count in dict.fromkeys(threads):
                    line, ok = measure(case, dtype, count, args)
                    agreed.append(ok)
                    yield line

    header = ["case", "shape", "dtype", "threads", "torch SDPA ms",
              "torch other SDPA ms (2D: 4D bias; decode: enable_gqa)",
              "posenc ms", "speedup (of the faster torch)", "max abs diff (of either)"]
    print_table(header, lines(), args.markdown)
    if not all(agreed):
        print("OUTPUTS DIFFER BEYOND TOLERANCE", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
