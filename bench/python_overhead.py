"""What a call from Python adds to posenc's C call: posenc.attention(q, k, v)
against posenc_attention alone on the same desc and tensors (planned once
by the package, then called through ctypes with nothing else around it).

    python3 bench/python_overhead.py [--threads 1,all] [--repeats 2000]

Rows: a one-query, four-key call (almost nothing but the argument
handling), and decode (one query, grouped heads B1 H32/8 kv512 d128, fp32
and bf16) with and without out=. The two are called in turn; each row
prints their medians, the difference (what the package costs a call) and
the share of the call it is.
"""
import argparse
import ctypes
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import posenc  # noqa: E402
from posenc import _attention  # noqa: E402
from posenc._lib import check, lib  # noqa: E402
from posenc.context import handle  # noqa: E402

from measure import cpu_name, print_table  # noqa: E402

# (name, q shape, k and v shape, dtype)
CASES = [
    ("tiny q1 kv4 d8", (1, 1, 1, 8), (1, 1, 4, 8), torch.float32),
    ("decode B1 H32/8 kv512 d128", (1, 32, 1, 128), (1, 8, 512, 128), torch.float32),
    ("decode B1 H32/8 kv512 d128", (1, 32, 1, 128), (1, 8, 512, 128), torch.bfloat16),
]


def c_call(q, k, v, out):
    """posenc_attention alone, on the desc the package makes for these."""
    desc, tensors, _, keep = _attention._plan(q, k, v, out=out)
    context = handle(None)

    def call():
        check(lib.posenc_attention(context, ctypes.byref(desc), ctypes.byref(tensors), None, 0))
    call.keep = keep
    return call


def interleaved_medians(first, second, repeats, warmup=20):
    """The median times of first() and second(), called in turn (so that a
    slow spell of the machine weighs on both alike)."""
    for _ in range(warmup):
        first(), second()
    times = ([], [])
    for _ in range(repeats):
        for fn, spent in zip((first, second), times):
            start = time.perf_counter()
            fn()
            spent.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def rows(threads, repeats):
    for name, q_shape, kv_shape, dtype in CASES:
        q = torch.randn(q_shape).to(dtype)
        k, v = torch.randn(kv_shape).to(dtype), torch.randn(kv_shape).to(dtype)
        out = torch.empty_like(q)
        for given_out in (False, True):
            python, c = interleaved_medians(
                (lambda: posenc.attention(q, k, v, out=out)) if given_out
                else (lambda: posenc.attention(q, k, v)), c_call(q, k, v, out), repeats)
            yield [name + (", out=" if given_out else ""), str(dtype).split(".")[1],
                   str(threads), f"{python * 1e6:.1f}", f"{c * 1e6:.1f}",
                   f"{(python - c) * 1e6:.1f}", f"{(python - c) / python:.0%}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,all")
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    print(f"# {cpu_name()}, torch {torch.__version__}, medians of {args.repeats} calls (us)")
    header = ["case", "dtype", "threads", "posenc.attention", "C call", "package", "share"]
    all_threads = len(os.sched_getaffinity(0))

    def lines():
        for threads in args.threads.split(","):
            count = all_threads if threads == "all" else int(threads)
            torch.set_num_threads(count)
            with torch.inference_mode():
                yield from rows(count, args.repeats)
    print_table(header, lines(), args.markdown)


if __name__ == "__main__":
    main()
