"""What the PyTorch comparisons share: the CPU's name, a median time, a table."""
import platform
import statistics
import time


def cpu_name():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


# How far posenc's output may be from torch's, as a fraction of the largest
# |output| (torch's own bf16 rounding is part of the difference).
RELATIVE_TOLERANCE = {"fp32": 1e-4, "bf16": 5e-2}


def agrees(max_abs_diff, max_abs_out, dtype):
    """Whether a difference is within RELATIVE_TOLERANCE[dtype] (NaN is not)."""
    return max_abs_diff <= RELATIVE_TOLERANCE[dtype] * max_abs_out


def median_seconds(fn, repeats, warmup=1):
    """The median wall time of `repeats` calls of fn() after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def print_table(header, lines, markdown):
    """Rows of cells (strings) as a markdown table, each row printed as
    `lines` yields it (a run cut short keeps its rows), or as aligned
    columns once all are in."""
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header), flush=True)
        for line in lines:
            print("| " + " | ".join(line) + " |", flush=True)
        return
    lines = list(lines)
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    for line in [header] + lines:
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths)))
