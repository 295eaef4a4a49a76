"""The main job against the peers, in one run: a private mean curve of n = 10^6 curves x K = 100
points at ε = 1, by fdp and by what a user of another library would write for the same release.

    pip install ".[bench]"          # numpy, diffprivlib, opendp (+ polars, pyarrow for its Context)
    python examples/python/peers_mean.py [--n N] [--repeats R] [--polars-repeats P] [--rust-bin PATH | --no-rust]

Each tool is timed ``R`` times after one warm-up (CPU seconds of this process and wall seconds;
median with min-max), on the same data (``bench.main_job_data``), in the same process:

- ``fdp_tuned``: ``fdp.MeanCurve(kernel="matern32:0.1", bound="l1:20")`` built and released through a
  ``Session`` (the privately tuned default: basis, private bound, release, selection); ``fdp_rust``:
  the Rust example ``bench_mean``'s tuned release of the same shape (wall seconds, in a child process);
- ``numpy``: ``np.clip`` to the public range, the column means, ``rng.laplace`` with scale
  ``K (hi - lo)/(n ε)`` (NOT private in practice: floating-point Laplace, Mironov 2012; the floor a
  hand-written release costs);
- ``diffprivlib``: ``diffprivlib.tools.mean(values, epsilon, bounds, axis=0)`` (it splits ε over the K
  columns);
- ``opendp``: ``clamp >> mean >> laplace`` on each column at ε/K (OpenDP's documented transformations;
  replace-one neighbours are symmetric distance 2 on sized data, the scale by ``binary_search_param``
  so that ``map(2) <= ε/K``);
- ``opendp_polars``: OpenDP's Polars ``Context`` with one ``dp.mean`` per column in one query
  (``P`` repeats, default 1: it is orders of magnitude slower).

Prints one ``peer`` record per tool and a ``peers`` summary of each tool's CPU and wall time over
fdp's (``over_fdp`` > 1: slower than fdp). The public range is (-5, 10) for every tool.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import fdp
from bench import main_job_data, rust_seconds

EPSILON = 1.0
RANGE = (-5.0, 10.0)


def timed(run: Callable[[], Any], repeats: int) -> tuple[list[float], list[float]]:
    """CPU and wall seconds of ``repeats`` runs after one warm-up."""
    run()
    cpu, wall = [], []
    for _ in range(repeats):
        c, w = time.process_time(), time.perf_counter()
        run()
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--polars-repeats", type=int, default=1)
    parser.add_argument("--rust-bin", default=None)
    parser.add_argument("--no-rust", action="store_true", help="skip the Rust example (a smoke run)")
    args = parser.parse_args()
    values, t = main_job_data(args.n)
    n, k = values.shape
    lo, hi = RANGE
    curves = fdp.Curves(values, t)
    numpy_rng = np.random.default_rng(3)

    def fdp_tuned() -> Any:
        mechanism = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:20").build(curves, epsilon=EPSILON)
        return fdp.Session(EPSILON).release(mechanism, curves)

    def numpy_laplace() -> np.ndarray:
        means = np.clip(values, lo, hi).mean(axis=0)
        return means + numpy_rng.laplace(0.0, k * (hi - lo) / (n * EPSILON), k)

    tools: dict[str, tuple[Callable[[], Any], int]] = {"fdp_tuned": (fdp_tuned, args.repeats), "numpy": (numpy_laplace, args.repeats)}
    try:
        import diffprivlib

        tools["diffprivlib"] = (lambda: diffprivlib.tools.mean(values, epsilon=EPSILON, bounds=RANGE, axis=0), args.repeats)
    except ImportError as e:
        print(f"peer tool=diffprivlib skipped=\"{e}\"")
    try:
        import opendp.prelude as dp

        dp.enable_features("contrib")
        space = dp.vector_domain(dp.atom_domain(T=float, nan=False), size=n), dp.symmetric_distance()
        per_column = EPSILON / k
        # The scale as an OpenDP user finds it: the smallest with ε/K for replace-one neighbours
        # (OpenDP adds its own float-rounding slack, 6e-9 of (hi - lo)/(n ε/K) at n = 10^6).
        scale = dp.binary_search_param(
            lambda s: space >> dp.t.then_clamp(RANGE) >> dp.t.then_mean() >> dp.m.then_laplace(scale=s), d_in=2, d_out=per_column
        )
        column_mean = space >> dp.t.then_clamp(RANGE) >> dp.t.then_mean() >> dp.m.then_laplace(scale=scale)
        assert column_mean.map(2) <= per_column, "replace-one neighbours within each column's share"
        columns = [np.ascontiguousarray(values[:, j]) for j in range(k)]
        tools["opendp"] = (lambda: [column_mean(c) for c in columns], args.repeats)
        try:
            import polars as pl

            frame = pl.LazyFrame({f"c{j}": c for j, c in enumerate(columns)})

            def opendp_polars() -> Any:
                context = dp.Context.compositor(
                    data=frame,
                    privacy_unit=dp.unit_of(contributions=1),
                    privacy_loss=dp.loss_of(epsilon=EPSILON),
                    split_evenly_over=1,
                    margins=[dp.polars.Margin(by=[], max_length=n, invariant="lengths")],
                )
                query = context.query().select([pl.col(f"c{j}").fill_nan(0.0).dp.mean(bounds=RANGE) for j in range(k)])
                return query.release().collect()

            if args.polars_repeats > 0:
                tools["opendp_polars"] = (opendp_polars, args.polars_repeats)
        except ImportError as e:
            print(f"peer tool=opendp_polars skipped=\"{e}\"")
    except ImportError as e:
        print(f"peer tool=opendp skipped=\"{e}\"")

    results = {}
    for name, (run, repeats) in tools.items():
        cpu, wall = timed(run, repeats)
        results[name] = (statistics.median(cpu), statistics.median(wall))
        print(
            f"peer tool={name} n={n} k={k} repeats={repeats} cpu_s={statistics.median(cpu):.3f} "
            f"cpu_min={min(cpu):.3f} cpu_max={max(cpu):.3f} wall_s={statistics.median(wall):.3f} "
            f"wall_min={min(wall):.3f} wall_max={max(wall):.3f}",
            flush=True,
        )
    rust = float("nan")
    if not args.no_rust:
        runs = sorted(rust_seconds(n, args.rust_bin) for _ in range(args.repeats))
        rust = statistics.median(runs)
        print(f"peer tool=fdp_rust n={n} k={k} repeats={len(runs)} wall_s={rust:.3f} wall_min={runs[0]:.3f} wall_max={runs[-1]:.3f}")
    fdp_cpu, fdp_wall = results["fdp_tuned"]
    summary = " ".join(f"{name}_cpu_over_fdp={c / fdp_cpu:.2f} {name}_wall_over_fdp={w / fdp_wall:.2f}" for name, (c, w) in results.items() if name != "fdp_tuned")
    print(f"peers n={n} k={k} fdp_cpu_s={fdp_cpu:.3f} fdp_wall_s={fdp_wall:.3f} fdp_rust_wall_s={rust:.3f} {summary}")


if __name__ == "__main__":
    main()
