"""What a call from Python adds to posenc's C call: posenc.attention(q, k, v)
against posenc_attention alone on the same desc and tensors (planned once
by the package, then called through ctypes with nothing else around it).

    python3 bench/python_overhead.py [--threads 1,all] [--repeats 2000]

Rows: a one-query, four-key call (almost nothing but the argument
handling), and decode (one query, grouped heads B1 H32/8 kv512 d128, fp32
and bf16) with and without out=. Three calls are made in turn: the
package's with the shapes of the calls before it (the desc it kept for
them, posenc/_call_plans.py), the package's as for shapes it has not seen
(the full way) and the C call alone. Each row prints their medians and
what the package costs a call on top of the C call both ways, with its
share of the kept call.
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
from posenc import _attention, _call_plans  # noqa: E402
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


def new_shapes(call, *args, **options):
    """call(*args, **options) as for shapes not seen before (the full way),
    the descs kept for the other calls left as they are."""
    kept = _attention._PLANS
    _attention._PLANS = _call_plans.Plans()
    try:
        return call(*args, **options)
    finally:
        _attention._PLANS = kept


def interleaved_medians(calls, repeats, warmup=20):
    """The median times of the calls, made in turn (so that a slow spell of
    the machine weighs on all alike)."""
    for _ in range(warmup):
        for call in calls:
            call()
    times = [[] for _ in calls]
    for _ in range(repeats):
        for call, spent in zip(calls, times):
            start = time.perf_counter()
            call()
            spent.append(time.perf_counter() - start)
    return [statistics.median(spent) for spent in times]


def rows(threads, repeats):
    for name, q_shape, kv_shape, dtype in CASES:
        q = torch.randn(q_shape).to(dtype)
        k, v = torch.randn(kv_shape).to(dtype), torch.randn(kv_shape).to(dtype)
        out = torch.empty_like(q)
        for given_out in (False, True):
            options = {"out": out} if given_out else {}
            kept, full, c = interleaved_medians(
                (lambda: posenc.attention(q, k, v, **options),
                 lambda: new_shapes(posenc.attention, q, k, v, **options),
                 c_call(q, k, v, out)), repeats)
            yield [name + (", out=" if given_out else ""), str(dtype).split(".")[1],
                   str(threads), f"{kept * 1e6:.1f}", f"{full * 1e6:.1f}", f"{c * 1e6:.1f}",
                   f"{(kept - c) * 1e6:.1f}", f"{(full - c) * 1e6:.1f}",
                   f"{(kept - c) / kept:.0%}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", default="1,all")
    parser.add_argument("--repeats", type=int, default=2000)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    print(f"# {cpu_name()}, torch {torch.__version__}, medians of {args.repeats} calls (us)")
    header = ["case", "dtype", "threads", "posenc.attention", "the full way", "C call",
              "package", "full way's", "share"]
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
