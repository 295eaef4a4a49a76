"""A privately tuned mean curve of 10^7 half-hourly demand-like curves on Spark (local mode).

    python examples/python/spark_mean.py [--n 10000000] [--partitions 8] [--master local[2]]

The curves (48 half-hours, a daily shape times a random level plus noise) are generated inside Spark
as DataFrame columns; ``fdp.spark.release_mean`` builds one exact summary state per partition in
Rust (``mapInArrow``), tree-reduces the states, and releases once on the driver through a Session.
Prints one record, and beside it the in-process rows/s of the same summary on a numpy array:

    spark n=10000000 k=48 partitions=8 wall_s=... rows_per_s=... state_bytes=... inprocess_rows_per_s=...
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
    spark.stop()


if __name__ == "__main__":
    main()
