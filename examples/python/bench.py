"""Python against Rust for the privately tuned mean at n = 10^6 curves x K = 100 points.

    python examples/python/bench.py [--n N] [--rust-bin PATH]

Times ``Session.release`` of ``MeanCurve(...).build`` (basis build included) on a numpy array, the
peak resident memory over the data's size, and, in the same run, the Rust example ``bench_mean``'s
time for the same pipeline on the same shape (``cargo run --release --example bench_mean``, or
``--rust-bin`` for a built binary; its fastest wall time of five, as the Python side takes its best
of ``--repeats``). Prints one record:

    python_bench n=1000000 k=100 rust_s=... python_s=... ratio=... peak_rss_over_data=...
"""

from __future__ import annotations

import argparse
import re
import resource
import subprocess
import time
from pathlib import Path

import numpy as np

import fdp

ROOT = Path(__file__).resolve().parents[2]


def rust_seconds(n: int, binary: str | None) -> float:
    flags = ["--n", str(n), "--no-growth"]
    command = [binary, *flags] if binary else ["cargo", "run", "--quiet", "--release", "--example", "bench_mean", "--", *flags]
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    match = re.search(r"mean=tuned_iclp_rkhs .*?wall_s_min=([0-9.]+)", out)
    if match is None:
        raise RuntimeError(f"no tuned record in the Rust benchmark's output:\n{out}")
    return float(match.group(1))


def main_job_data(n: int, k: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """The main job's data (the Rust benchmark's shape; it draws S-1 curves instead): ``n`` smooth
    curves with a random level on ``k`` midpoints of [0, 1], built in place (no n x K temporaries).
    Returns ``(values, t)``."""
    t = (np.arange(k) + 0.5) / k
    rng = np.random.default_rng(1)
    values = rng.standard_normal((n, k))
    values *= 0.1
    values += 10 * t * np.exp(-t)
    values += rng.normal(0.0, 1.0, (n, 1))
    return values, t


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--rust-bin", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.n
    values, t = main_job_data(n)
    k = t.size
    data_bytes = values.nbytes
    curves = fdp.Curves(values, t)
    # As the Rust benchmark: reset the resident-memory high-water mark (Linux) so the peak below is
    # the data plus what the releases add, not the data's generation.
    reset = _reset_peak()
    best = np.inf
    for _ in range(args.repeats):
        start = time.perf_counter()
        mechanism = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:20").build(curves, epsilon=1.0)
        fdp.Session(1.0).release(mechanism, curves)
        best = min(best, time.perf_counter() - start)
    peak = _peak_bytes()
    rust = min(rust_seconds(n, args.rust_bin) for _ in range(args.repeats))
    print(
        f"python_bench n={n} k={k} rust_s={rust:.3f} python_s={best:.3f} ratio={best / rust:.2f} "
        f"peak_rss_over_data={peak / data_bytes:.2f} hwm_reset={reset}"
    )


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _peak_bytes() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) * 1024
    except OSError:
        pass
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


if __name__ == "__main__":
    main()
