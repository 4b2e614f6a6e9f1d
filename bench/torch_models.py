#!/usr/bin/env python3
"""Whole timm models, patched with posenc.torch.patch and unpatched.

For each model, dtype (fp32, bf16: the model and input cast with .to) and
thread count, one child process builds the model on random weights (nothing
is downloaded), runs timm's forward, then the patched one, and reports for
each: the median time of --repeats forwards after --warmup, the time spent
inside the attention modules (forward hooks) and outside them, the peak
resident memory the forwards added, and the largest difference between the
two outputs, which must be within measure.py's RELATIVE_TOLERANCE of the
largest output (else the script ends with status 1 after its table).
--clock cpu times with the process's CPU time instead of the wall clock: on
a machine shared with other jobs, one-thread runs then count their own work
only. Needs torch (Debian's python3-torch or a later one), timm and a built
libposenc (found as the package says: POSENC_LIBRARY, else the build tree).

    /usr/bin/python3 bench/torch_models.py [--models sam,botnet,swin,swinv2,beit,maxvit,
        coatnet,vit_relpos,mvitv2] [--sam-size 1024]
        [--dtypes fp32,bf16] [--threads 1,all] [--repeats 3] [--warmup 1] [--clock wall|cpu]
        [--markdown]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

from measure import RELATIVE_TOLERANCE, agrees, cpu_name, print_table  # noqa: E402

# --models name -> (timm model, the option giving its image size, or its fixed size)
MODELS = {
    "sam": ("samvit_base_patch16", "sam_size"),
    "botnet": ("botnet26t_256", 256),
    "swin": ("swin_tiny_patch4_window7_224", 224),
    "swinv2": ("swinv2_tiny_window8_256", 256),
    "beit": ("beit_base_patch16_224", 224),
    "maxvit": ("maxvit_tiny_tf_224", 224),
    "coatnet": ("coatnet_0_rw_224", 224),
    "vit_relpos": ("vit_relpos_base_patch16_224", 224),
    "mvitv2": ("mvitv2_tiny", 224),
}


def resident_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


class AttentionClock:
    """Time spent inside the attention modules, by forward hooks."""

    def __init__(self, modules, now):
        self.now, self.seconds, self._start = now, 0.0, None
        for module in modules:
            module.register_forward_pre_hook(self._enter)
            module.register_forward_hook(self._leave)

    def _enter(self, *_):
        self._start = self.now()

    def _leave(self, *_):
        self.seconds += self.now() - self._start


def measure(model, x, clock, repeats, warmup):
    """(output, median seconds, median attention seconds, peak extra MiB)."""
    import torch
    base = resident_kib("VmRSS")
    try:  # reset the peak to the current resident set (Linux)
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        pass
    totals, attention = [], []
    with torch.no_grad():
        for i in range(warmup + repeats):
            clock.seconds = 0.0
            start = clock.now()
            out = model(x)
            if i >= warmup:
                totals.append(clock.now() - start)
                attention.append(clock.seconds)
    peak = (resident_kib("VmHWM") - base) / 1024
    return out, statistics.median(totals), statistics.median(attention), peak


def child(args):
    import timm
    import torch

    import posenc
    import posenc.torch as posenc_torch

    torch.set_num_threads(args.threads)
    name, size = MODELS[args.model]
    kwargs = {"img_size": getattr(args, size)} if isinstance(size, str) else {}
    size = kwargs.get("img_size", size)
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, **kwargs).eval()
    # Weights timm starts at zero would hide differences: SAM's position
    # tables, the bias tables (BEiT's, Swin's, MaxViT's and CoAtNet's rel_pos
    # tables and MLPs), BEiT's q and v biases, the last BatchNorm of
    # BoTNet's residual branches and Swin V2's post-norms (its
    # _init_respostnorm zeroes their weights: the attention would add 0),
    # and LayerScale's gammas.
    for parameter_name, parameter in model.named_parameters():
        if "rel_pos" in parameter_name or \
                parameter_name.endswith(("relative_position_bias_table", "q_bias", "v_bias")):
            torch.nn.init.normal_(parameter, std=0.02)
        if parameter_name.endswith(".gamma"):  # LayerScale: vit_relpos starts it at 1e-6
            torch.nn.init.uniform_(parameter, 0.5, 1.5)
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            torch.nn.init.uniform_(module.weight, 0.5, 1.5)
        if name.startswith("swinv2") and isinstance(module, torch.nn.LayerNorm):
            torch.nn.init.uniform_(module.weight, 0.5, 1.5)
    x = torch.randn(1, 3, size, size)
    if args.dtype == "bf16":
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
    clock = AttentionClock([m for _, m, _ in posenc_torch.known_modules(model)],
                           CLOCKS[args.clock])
    row = {"model": name, "size": size, "dtype": args.dtype, "threads": args.threads}
    reference, row["timm_s"], row["timm_attn_s"], row["timm_mib"] = measure(
        model, x, clock, args.repeats, args.warmup)
    try:
        row["patched_modules"] = len(posenc_torch.patch(model))
    except posenc_torch.PatchError as error:
        row["error"] = f"patch: {error}"
    if row.get("patched_modules") == 0:  # the posenc columns would time timm itself
        row["error"] = "patch: no module patched"
    if "error" not in row:
        try:
            out, row["posenc_s"], row["posenc_attn_s"], row["posenc_mib"] = measure(
                model, x, clock, args.repeats, args.warmup)
            row["max_abs_diff"] = (out.float() - reference.float()).abs().max().item()
            row["max_abs_out"] = reference.float().abs().max().item()
        except posenc.Error as error:
            row["error"] = f"posenc: {error.status_name}"
    print(json.dumps(row))


def run_child(args, model, dtype, threads):
    command = [sys.executable, os.path.abspath(__file__), "--child", model, "--dtype", dtype,
               "--child-threads", str(threads), "--repeats", str(args.repeats),
               "--warmup", str(args.warmup), "--sam-size", str(args.sam_size),
               "--clock", args.clock]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:  # a row saying so; the other children still run
        print(f"{model} {dtype} {threads} threads failed:\n{result.stderr}", file=sys.stderr,
              flush=True)
        last = (result.stderr.strip().splitlines() or [""])[-1]
        return {"model": MODELS[model][0], "size": "", "dtype": dtype, "threads": threads,
                "error": f"failed ({result.returncode}): {last[:80]}"}
    return json.loads(result.stdout.strip().splitlines()[-1])


def table(rows, markdown):
    """Prints the rows as `rows` yields them (with --markdown each at once)."""
    header = ["model", "dtype", "threads", "patched", "timm s", "posenc s", "speedup",
              "timm attn s", "posenc attn s", "attn speedup", "timm other s", "posenc other s",
              "timm MiB", "posenc MiB", "max abs diff"]

    def lines():
        for r in rows:
            name = f"{r['model']} {r['size']}"
            lead = [name, r["dtype"], str(r["threads"]), str(r.get("patched_modules", "-"))]
            if "error" in r:
                timm_s = f"{r['timm_s']:.3f}" if "timm_s" in r else "-"
                yield lead + [timm_s, r["error"]] + [""] * (len(header) - len(lead) - 2)
                continue
            yield lead + [
                f"{r['timm_s']:.3f}", f"{r['posenc_s']:.3f}",
                f"{r['timm_s'] / r['posenc_s']:.2f}x", f"{r['timm_attn_s']:.3f}",
                f"{r['posenc_attn_s']:.3f}", f"{r['timm_attn_s'] / r['posenc_attn_s']:.1f}x",
                f"{r['timm_s'] - r['timm_attn_s']:.3f}",
                f"{r['posenc_s'] - r['posenc_attn_s']:.3f}",
                f"{r['timm_mib']:.0f}", f"{r['posenc_mib']:.0f}",
                f"{r['max_abs_diff']:.2g} (of {r['max_abs_out']:.2g})"
                f"{'' if agrees(r['max_abs_diff'], r['max_abs_out'], r['dtype']) else ' DIFFERS'}"]

    print_table(header, lines(), markdown)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--sam-size", type=int, default=1024)
    parser.add_argument("--dtypes", default="fp32,bf16")
    parser.add_argument("--threads", default="1,all")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--child", choices=sorted(MODELS), help=argparse.SUPPRESS)
    parser.add_argument("--dtype", help=argparse.SUPPRESS)
    parser.add_argument("--child-threads", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.model, args.threads = args.child, args.child_threads
        return child(args)
    for option, names, known in (("--models", args.models, MODELS),
                                 ("--dtypes", args.dtypes, RELATIVE_TOLERANCE)):
        unknown = set(names.split(",")) - set(known)
        if unknown:
            parser.error(f"{option}: unknown {', '.join(sorted(unknown))}: choose from "
                         f"{', '.join(known)}")

    import timm
    import torch

    import posenc
    every = len(os.sched_getaffinity(0))
    threads = [every if t == "all" else int(t) for t in args.threads.split(",")]
    print(f"{cpu_name()}, {every} CPUs; torch {torch.__version__}, timm {timm.__version__}, "
          f"posenc {posenc.version()} ({posenc.best_isa()}, {posenc.library_path}); "
          f"{args.clock} clock")
    rows = []

    def measured():  # each child's row as it finishes, kept for the verdict below
        for model in args.models.split(","):
            for dtype in args.dtypes.split(","):
                for count in dict.fromkeys(threads):
                    rows.append(run_child(args, model, dtype, count))
                    yield rows[-1]

    table(measured(), args.markdown)
    if not all("error" not in r and agrees(r["max_abs_diff"], r["max_abs_out"], r["dtype"])
               for r in rows):
        print("OUTPUTS DIFFER BEYOND TOLERANCE (or a model failed)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
