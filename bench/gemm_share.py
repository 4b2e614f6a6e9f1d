#!/usr/bin/env python3
"""How much of a posenc_attention call is oneDNN's GEMMs, and which kernels.

For machines without a sampling profiler: one call of each case runs with
oneDNN 2.x's verbose mode on (dnnl_set_verbose, after warm-up calls), and
its exec lines are summed per primitive and implementation (matmul
brg:avx512_core_amx_bf16, reorder jit:uni, ...). The share printed is the
matmuls' summed time over threads x the median wall time of the same call
without verbose mode: what is left is posenc's own work (softmax, packing,
biases, conversions), oneDNN's reorders (listed) and the threads' waits.
Verbose mode adds its own time to each GEMM, so the share is an upper
bound.

    python3 bench/gemm_share.py [--cases plain,causal,rel2d,sam] [--dtypes fp32,bf16]
        [--threads all] [--repeats 5]

The cases are bench/torch_attention.py's; the library is found as the
package says (POSENC_LIBRARY, else the build tree).
"""
import argparse
import collections
import ctypes
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from measure import median_seconds  # noqa: E402
from torch_attention import CASES, DTYPES, make_inputs, posenc_way  # noqa: E402


def onednn():
    """The oneDNN that libposenc loaded (the dynamic linker's own copy)."""
    for name in ("libdnnl.so.2", "libdnnl.so"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            pass
    raise SystemExit("libdnnl not found beside libposenc")


def verbose_lines(call, dnnl):
    """oneDNN's exec lines printed while call() runs (stdout redirected)."""
    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile("w+") as log:
        sys.stdout.flush()
        libc.fflush(None)
        saved = os.dup(1)
        os.dup2(log.fileno(), 1)
        try:
            dnnl.dnnl_set_verbose(1)
            call()
        finally:
            dnnl.dnnl_set_verbose(0)
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        log.seek(0)
        return [line for line in log if line.startswith("onednn_verbose,exec")]


def share(case, dtype, threads, repeats, dnnl):
    import torch
    torch.set_num_threads(threads)
    call = posenc_way(case, *make_inputs(case, getattr(torch, DTYPES[dtype])))
    wall = median_seconds(call, repeats, warmup=2)
    per_impl = collections.defaultdict(lambda: [0, 0.0])
    for line in verbose_lines(call, dnnl):
        fields = line.rstrip().split(",")
        entry = per_impl[f"{fields[3]} {fields[4]}"]
        entry[0] += 1
        entry[1] += float(fields[-1]) * 1e-3
    gemm = sum(seconds for name, (_, seconds) in per_impl.items() if name.startswith("matmul "))
    impls = "; ".join(f"{name}: {count} calls, {seconds * 1e3:.1f} ms"
                      for name, (count, seconds) in sorted(per_impl.items()))
    print(f"{case} {dtype} {threads} threads: {wall * 1e3:.2f} ms; oneDNN's matmuls "
          f"{gemm / (threads * wall):.0%} of {threads} x wall ({impls})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", default="plain,causal,rel2d,sam")
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--threads", default="all")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for names, known in ((args.cases, CASES), (args.dtypes, DTYPES)):
        unknown = set(names.split(",")) - set(known)
        if unknown:
            parser.error(f"unknown {', '.join(sorted(unknown))}: choose from {', '.join(known)}")
    import torch  # first: libposenc then takes torch's OpenMP runtime, as one process should
    import posenc  # noqa: F401 (loads libposenc, and with it oneDNN)
    dnnl = onednn()
    every = len(os.sched_getaffinity(0))
    with torch.no_grad():
        for case in args.cases.split(","):
            for dtype in args.dtypes.split(","):
                for t in args.threads.split(","):
                    share(case, dtype, every if t == "all" else int(t), args.repeats, dnnl)
    return 0


if __name__ == "__main__":
    sys.exit(main())
