"""A privately tuned mean curve of 10^7 half-hourly demand-like curves on Spark (local mode).

    python examples/python/spark_mean.py [--n 10000000] [--partitions 8] [--master local[2]]

The curves (48 half-hours, a daily shape times a random level plus noise) are generated inside Spark
as DataFrame columns; ``fdp.spark.release_mean`` builds one exact summary state per partition in
Rust (``mapInArrow``), tree-reduces the states, and releases once on the driver through a Session.
Prints one record, and beside it the in-process rows/s of the same summary on a numpy array:

    spark n=10000000 k=48 partitions=8 wall_s=... rows_per_s=... state_bytes=... inprocess_rows_per_s=...

With ``--breakdown`` it first times, on the same generated frame, what is Spark's own: generating
the columns in the JVM (a sum over every column, no Python), then the same plus the Arrow hand-off
to Python workers (a ``mapInArrow`` that returns nothing); the release's wall time minus the second
is fdp's share (its summary, the states' reduction and the release):

    spark_breakdown n=... generate_s=... arrow_handoff_s=... fdp_s=... release_s=...
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

import fdp
import fdp.spark


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--breakdown", action="store_true", help="time Spark's own generation and Arrow hand-off first")
    args = parser.parse_args()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors run this Python (numpy, fdp)
    spark = (
        SparkSession.builder.master(args.master)
        .appName("fdp-spark-mean")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    k = 48
    grid = (np.arange(k) + 0.5) / k
    shape = [0.5 + 0.3 * math.sin(2 * math.pi * (t - 0.3)) * math.exp(-t) for t in grid]
    level = F.randn(seed=1) * 0.1 + 1.0
    columns = [f"h{j}" for j in range(k)]
    frame = spark.range(0, args.n, numPartitions=args.partitions).select(
        *[(F.lit(shape[j]) * level + F.randn(seed=100 + j) * 0.05).alias(columns[j]) for j in range(k)]
    )
    if args.breakdown:
        generate, handoff = breakdown(frame, columns)
    # Public choices, fixed before the data: kernel, the bound's ceiling, the centre; n is public.
    mean = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:2", centre=0.5)
    session = fdp.Session(epsilon=1.0)
    start = time.perf_counter()
    release = fdp.spark.release_mean(session, mean, frame, columns=columns, grid=grid, n=args.n, epsilon=1.0)
    wall = time.perf_counter() - start
    mechanism = mean.build_for(grid, args.n, 1.0)
    state_bytes = len(mechanism.empty_state().to_bytes())

    # The plain in-process path on the same shape (10^6 rows of numpy), for the rows/s beside it.
    rng = np.random.default_rng(0)
    local = np.outer(1.0 + 0.1 * rng.standard_normal(1_000_000), shape)
    local += 0.05 * rng.standard_normal(local.shape)
    curves = fdp.Curves(local, grid)
    local_mechanism = mean.build_for(grid, curves.n, 1.0)
    t0 = time.perf_counter()
    local_mechanism.summarize_part(curves)
    inprocess = curves.n / (time.perf_counter() - t0)
    print(
        f"spark n={args.n} k={k} partitions={args.partitions} master={args.master} wall_s={wall:.2f} "
        f"rows_per_s={args.n / wall:.3e} state_bytes={state_bytes} inprocess_rows_per_s={inprocess:.3e} "
        f"release_l2_norm={float(np.sqrt(np.mean(release.curve ** 2))):.4f} stages={len(session.ledger)}"
    )
    if args.breakdown:
        print(
            f"spark_breakdown n={args.n} generate_s={generate:.2f} arrow_handoff_s={handoff - generate:.2f} "
            f"fdp_s={wall - handoff:.2f} release_s={wall:.2f}"
        )
    spark.stop()


def breakdown(frame: object, columns: list[str]) -> tuple[float, float]:
    """Seconds to generate every column in the JVM (summed there, nothing sent to Python), and to
    generate them and hand them to Python workers as Arrow batches that are dropped: each the
    faster of two runs (the first also warms the JVM and starts the Python workers)."""
    from pyspark.sql import functions as F

    def drop(batches):  # type: ignore[no-untyped-def]
        for _ in batches:
            pass
        return iter(())

    def timed(job) -> float:  # type: ignore[no-untyped-def]
        best = math.inf
        for _ in range(2):
            start = time.perf_counter()
            job()
            best = min(best, time.perf_counter() - start)
        return best

    total = sum((F.col(c) for c in columns), F.lit(0.0))
    generate = timed(lambda: frame.select(total.alias("s")).agg(F.sum("s")).collect())  # type: ignore[attr-defined]
    handoff = timed(lambda: frame.mapInArrow(drop, "x double").count())  # type: ignore[attr-defined]
    return generate, handoff


if __name__ == "__main__":
    main()
