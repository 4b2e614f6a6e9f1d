#!/usr/bin/env python3
"""torch's GEMM rate at the fused attention's block shapes, and the least
time the target cases' GEMMs take at it.

posenc's GEMMs are Debian's oneDNN 2.6; torch bundles a newer oneDNN (its
bf16 matmuls run on AMX where the CPU has it). This prints the table
posenc_gemm_shapes prints for oneDNN 2.6, with torch's GEMMs: every thread
multiplies its own block, as posenc's tasks do (one torch.bmm over a batch
of one block a thread, each with its own operands, keys and values of 512
KB or less), q k^T (rows x keys x d, the keys transposed as stored) and
p v (rows x d x keys), for 32 to 256 rows and 512 to 2048 keys. A rate
counts the whole call, torch's dispatch and parallel region included, and
a bf16 product writes bf16 where posenc's q k^T writes fp32: torch's GEMMs
are at least this fast. Then, for each attention case of
bench/torch_attention.py (causal counting the products on and below the
diagonal), the time its q k^T and p v take at the best rate of the table
for its head_dim: the floor of any attention built on torch's GEMMs, which
posenc's `posenc bench` rows and issue 18's targets read against. Last,
one n^3 GEMM (torch.mm, n = 2048) on all the threads, beside the rate in
`posenc bench`'s header.

    python3 bench/torch_gemms.py [--threads 1,all] [--dtypes fp32,bf16] [--repeats 15]
        [--markdown]

"All" threads are the CPUs the process may run on (its affinity).
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from measure import cpu_name, median_seconds, print_table  # noqa: E402
from torch_attention import CASES, DTYPES  # noqa: E402

ROWS = (32, 64, 128, 256)
KEYS = (512, 1024, 2048)
HEAD_DIMS = (64, 128)


def block_rate(torch, dtype, threads, rows, keys, head_dim, scores, repeats):
    """GFLOP/s a thread of one block a thread: q k^T (scores) or p v."""
    generator = torch.Generator().manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=generator).to(dtype)

    if scores:
        a, b = randn(threads, rows, head_dim), randn(threads, keys, head_dim).transpose(1, 2)
        c = torch.empty(threads, rows, keys, dtype=dtype)
    else:
        a, b = randn(threads, rows, keys), randn(threads, keys, head_dim)
        c = torch.empty(threads, rows, head_dim, dtype=dtype)
    seconds = median_seconds(lambda: torch.bmm(a, b, out=c), repeats, warmup=3)
    return 2.0 * rows * keys * head_dim / seconds * 1e-9


def case_gemm_flops(case):
    """Each product's flops in the case: q k^T's, which p v's equal."""
    heads, size, head_dim = CASES[case]
    tokens = size if isinstance(size, int) else size[0] * size[1]
    pairs = tokens * (tokens + 1) // 2 if case == "causal" else tokens * tokens
    return 2.0 * heads * pairs * head_dim


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,all")
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    unknown = set(args.dtypes.split(",")) - set(DTYPES)
    if unknown:
        parser.error(f"unknown {', '.join(sorted(unknown))}: choose from {', '.join(DTYPES)}")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    import torch
    every = len(os.sched_getaffinity(0))
    threads = list(dict.fromkeys(every if t == "all" else int(t)
                                 for t in args.threads.split(",")))
    print(f"{cpu_name()}, {every} CPUs; torch {torch.__version__}")
    # (dtype, threads, head_dim, scores) -> (GFLOP/s a thread, rows, keys) at its best
    best = {}

    def table_lines():
        for count in threads:
            torch.set_num_threads(count)
            for dtype in args.dtypes.split(","):
                for head_dim in HEAD_DIMS:
                    for keys in KEYS:
                        for scores in (True, False):
                            rates = [block_rate(torch, getattr(torch, DTYPES[dtype]), count, rows,
                                                keys, head_dim, scores, args.repeats)
                                     for rows in ROWS]
                            key = (dtype, count, head_dim, scores)
                            for rows, rate in zip(ROWS, rates):
                                best[key] = max(best.get(key, (0.0, 0, 0)), (rate, rows, keys))
                            yield [str(count), dtype, str(head_dim), str(keys),
                                   "q k^T" if scores else "p v", *(f"{r:.0f}" for r in rates)]

    print("\ntorch's GEMMs at the attention's block shapes, each thread multiplying its own; "
          "GFLOP/s a thread\n")
    print_table(["threads", "type", "d", "keys", "product", *(f"{r} rows" for r in ROWS)],
                table_lines(), args.markdown)

    def floor_lines():
        for count in threads:
            for dtype in args.dtypes.split(","):
                for case in ("plain", "causal", "rel2d", "sam"):
                    head_dim = CASES[case][2]
                    flops = case_gemm_flops(case)
                    qk, qk_rows, qk_keys = best[(dtype, count, head_dim, True)]
                    pv, pv_rows, pv_keys = best[(dtype, count, head_dim, False)]
                    seconds = flops / (qk * count * 1e9) + flops / (pv * count * 1e9)
                    yield [case, dtype, str(count), f"{2 * flops * 1e-9:.1f}",
                           f"{qk:.0f} ({qk_rows} x {qk_keys})",
                           f"{pv:.0f} ({pv_rows} x {pv_keys})", f"{seconds * 1e3:.2f}"]

    print("\nThe cases' q k^T and p v at the best rates above: the least time of an attention "
          "built on torch's GEMMs\n")
    print_table(["case", "type", "threads", "GEMM GFLOP", "q k^T GFLOP/s a thread (rows x keys)",
                 "p v GFLOP/s a thread (rows x keys)", "floor ms"], floor_lines(), args.markdown)

    def square_lines():
        n = 2048
        for count in threads:
            torch.set_num_threads(count)
            for dtype in args.dtypes.split(","):
                a, b = (torch.randn(n, n).to(getattr(torch, DTYPES[dtype])) for _ in range(2))
                seconds = median_seconds(lambda: torch.mm(a, b), max(3, args.repeats // 3))
                yield [str(count), dtype, f"{2.0 * n ** 3 / seconds * 1e-9:.0f}"]

    print("\nOne 2048^3 GEMM (torch.mm) on the threads\n")
    print_table(["threads", "type", "GFLOP/s"], square_lines(), args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
