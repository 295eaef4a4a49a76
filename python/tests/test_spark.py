"""fdp.spark in local mode: partial states on executors equal the one-pass state bit for bit."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Iterator

import numpy as np
import pytest

import fdp

if os.environ.get("FDP_REQUIRE_SPARK") != "1":
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")

import fdp.spark  # noqa: E402


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    # The executors' Python must be this one (with numpy and fdp), whatever is first on PATH.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("fdp-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def data(n: int = 2000, k: int = 24) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(0.0, 1.0, k)
    rng = np.random.default_rng(3)
    values = 0.5 + 0.2 * np.sin(6 * grid) + rng.normal(0.0, 0.15, (n, k))
    values[5, :] = 1e300  # clipped like any record
    values[7, 3] = np.nan  # repaired
    values[9, :] = np.nan  # the public default
    return values, grid


def frame(spark: Any, values: np.ndarray, partitions: int) -> tuple[Any, list[str]]:
    columns = [f"y{j}" for j in range(values.shape[1])]
    rows = [tuple(None if np.isnan(v) else float(v) for v in row) for row in values]
    return spark.createDataFrame(rows, schema=", ".join(f"{c} double" for c in columns)).repartition(partitions), columns


@pytest.mark.parametrize("partitions", [1, 4, 64])
def test_mean_states_and_release_equal_the_in_process_ones(spark: Any, partitions: int) -> None:
    values, grid = data()
    curves = fdp.Curves(values, grid)
    mean = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:2", centre=0.5)
    mechanism = mean.build(curves, 1.0)
    df, columns = frame(spark, values, partitions)
    state = fdp.spark.summary_state(mechanism, df, columns, grid)
    assert state.records == curves.n
    assert state == mechanism.summarize_part(curves)  # bit for bit
    release = fdp.spark.release_mean(fdp.Session(1.0, seed=5), mean, df, columns=columns, grid=grid, n=curves.n, epsilon=1.0)
    np.testing.assert_array_equal(release.curve, fdp.Session(1.0, seed=5).release(mechanism, curves).curve)


def test_long_frames_pivot_on_the_public_grid(spark: Any) -> None:
    values, grid = data(300, 10)
    ids = np.repeat(np.arange(300), 10)
    ts = np.tile(grid, 300)
    ys = values.reshape(-1)
    keep = ~np.isnan(ys) & (np.arange(ys.size) % 13 != 0)  # some pairs absent
    rows = [(int(i), float(t), float(y)) for i, t, y in zip(ids[keep], ts[keep], ys[keep])]
    long = spark.createDataFrame(rows, schema="id long, t double, y double").repartition(4)
    wide, columns = fdp.spark.wide_from_long(long, grid)
    local = fdp.Curves.from_long(ids[keep], ts[keep], ys[keep], grid=grid)
    mechanism = fdp.MeanCurve(bound="l1:2", centre=0.5).build_for(grid, local.n, 1.0, "id")
    state = fdp.spark.summary_state(mechanism, wide, columns, grid)
    # Rows arrive in another order after the pivot; the sums do not care.
    assert state == mechanism.summarize_part(local)
    # Observations off the grid are interpolated onto it, as in memory.
    moved = spark.createDataFrame([(0, 0.05, 1.0), (0, 0.5, 2.0), (1, 0.3, 4.0)], schema="id long, t double, y double")
    wide, columns = fdp.spark.wide_from_long(moved, grid)
    rows = sorted(wide.collect(), key=lambda r: r["id"])
    local = fdp.Curves.from_long([0, 0, 1], [0.05, 0.5, 0.3], [1.0, 2.0, 4.0], grid=grid)
    np.testing.assert_array_equal(np.array([[r[c] for c in columns] for r in rows]), local.values)


def test_density_and_sketch_on_spark(spark: Any) -> None:
    rng = np.random.default_rng(4)
    points = np.column_stack([rng.beta(2, 5, 3000), rng.uniform(size=3000)])
    df = spark.createDataFrame([tuple(map(float, p)) for p in points], schema="x1 double, x2 double").repartition(7)
    density = fdp.Density(domain=(0.0, 1.0))
    mech = density.build(3000, 1.0)
    assert fdp.spark.summary_state(mech, df, ["x1"]) == mech.summarize_part(points[:, 0])
    r = fdp.spark.release_density(fdp.Session(1.0, seed=1), density, df, column="x1", n=3000, epsilon=1.0)
    np.testing.assert_array_equal(r.curve, fdp.Session(1.0, seed=1).release(mech, points[:, 0]).curve)
    dataset = fdp.SyntheticDataset(centre=[0.5, 0.5], scale=0.5, rho=0.3, synthetic_points=40)
    w = fdp.spark.release_synthetic(fdp.Session(1.0, 1e-6, seed=4), dataset, df, columns=["x1", "x2"], n=3000, epsilon=1.0, delta=1e-6)
    local_w = fdp.Session(1.0, 1e-6, seed=4).release(dataset.build(3000, 1.0, 1e-6), points)
    np.testing.assert_array_equal(w.weights, local_w.weights)
    sketch = fdp.Sketch(dim=2)
    s = fdp.spark.release_sketch(fdp.Session(1.0, seed=2, neighbours="add_remove_one"), sketch, df, columns=["x1", "x2"], epsilon=1.0)
    local = fdp.Session(1.0, seed=2, neighbours="add_remove_one").release(sketch.build(1.0), points)
    np.testing.assert_array_equal(s.sketch, local.sketch)


@pytest.mark.parametrize("partitions", [1, 5])
def test_a_per_person_release_groups_the_rows_by_the_id(spark: Any, partitions: int) -> None:
    """release_mean(..., id=...) protects persons: each person's rows (spread over partitions) are
    combined into one record on the executors, the same bits as fdp.Curves(..., ids=...) in memory;
    the rows summed ungrouped under a per-person mechanism would protect a person only at m ε."""
    values, grid = data(600, 12)
    persons = np.arange(600) % 173  # 173 persons with 3-4 rows each, interleaved
    local = fdp.Curves(values, grid, ids=persons, id="ID")
    columns = [f"y{j}" for j in range(grid.size)]
    rows = [(int(p),) + tuple(None if np.isnan(v) else float(v) for v in row) for p, row in zip(persons, values)]
    df = spark.createDataFrame(rows, schema="ID long, " + ", ".join(f"{c} double" for c in columns)).repartition(partitions)
    mean = fdp.MeanCurve(bound="l1:2", centre=0.5)
    remote = fdp.spark.release_mean(fdp.Session(1.0, seed=6), mean, df, columns=columns, grid=grid, n=173, epsilon=1.0, id="ID")
    in_memory = fdp.Session(1.0, seed=6).release(mean.build(local, 1.0), local)
    np.testing.assert_array_equal(remote.curve, in_memory.curve)
    assert remote.metadata["privacy_unit"] == {"person": {"id_column": "ID"}}
    # Without the id column the per-person mechanism has nothing to group by: refused, nothing charged.
    session = fdp.Session(1.0)
    with pytest.raises(ValueError, match="needs that column"):
        fdp.spark.release_mean(session, mean, df.drop("ID"), columns=columns, grid=grid, n=173, epsilon=1.0, id="ID")
    assert session.ledger == []
    # A state summed row by row (a record-level mechanism's) does not release under the per-person one.
    by_row = mean.build_for(grid, 600, 1.0)
    rows_state = fdp.spark.summary_state(by_row, df, columns, grid)
    with pytest.raises(ValueError, match="another mechanism or for another frame"):
        session.release_state(mean.build_for(grid, 600, 1.0, "ID"), rows_state)
    assert session.ledger == []


def test_a_wrong_public_n_is_refused_before_any_charge(spark: Any) -> None:
    values, grid = data(500, 12)
    df, columns = frame(spark, values, 3)
    session = fdp.Session(1.0)
    with pytest.raises(ValueError, match="records in the summary state"):
        fdp.spark.release_mean(session, fdp.MeanCurve(bound="l1:2"), df, columns=columns, grid=grid, n=499, epsilon=1.0)
    assert session.ledger == []


def test_the_readme_spark_snippet_runs(spark: Any) -> None:
    """The README's Spark block, run as written (its SparkSession is this module's, reused)."""
    from docblocks import ROOT, code_blocks, run_python

    namespace: dict[str, Any] = {}
    run_python(code_blocks(ROOT / "README.md", "python")[1], namespace, ROOT / "README.md")
    release = namespace["release"]
    assert release.curve.shape == (48,) and release.metadata["n"] == 1000


def test_sparse_long_frames_release_the_in_memory_bits(spark: Any) -> None:
    rng = np.random.default_rng(4)
    rows = []
    for i in range(300):
        for age in np.sort(rng.uniform(1, 18, 2 + i % 4)):
            rows.append((f"c{i}", float(age), float(75 + 6 * age + rng.normal(0, 5))))
    rows += [("c3", None, 90.0), ("c4", 40.0, 120.0), ("c5", 7.0, 1e300)]
    ids, t, y = (list(v) for v in zip(*rows))
    t = [np.nan if v is None else v for v in t]
    with pytest.warns(UserWarning, match="LOCAL INFORMATION"):
        curves = fdp.SparseCurves.from_long(ids, t, y, domain=(1, 18), id="child")
    mean = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35))
    local = fdp.Session(1.0, seed=8).release(mean.build(curves, 1.0), curves)
    frame = spark.createDataFrame(rows, schema="child string, age double, height double").repartition(5)
    remote = fdp.spark.release_sparse_mean(fdp.Session(1.0, seed=8), mean, frame, n=300, epsilon=1.0, id="child", t="age", y="height")
    assert np.array_equal(local.curve, remote.curve)
    with pytest.raises(ValueError):
        fdp.spark.release_sparse_mean(fdp.Session(1.0), mean, frame, n=299, epsilon=1.0, id="child", t="age", y="height")


def test_sparse_fpca_long_frames_release_the_in_memory_bits(spark: Any) -> None:
    """fdp.spark.release_sparse_fpca and fdp.spark.release (columns = id, t, y): the same bytes as in
    memory at a seed, whatever the partitioning."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(300):
        score = rng.normal(0, 10)
        for age in np.sort(rng.uniform(1, 18, 1 + i % 6)):
            rows.append((f"c{i}", float(age), float(75 + 6 * age + score * np.sin(age / 6) + rng.normal(0, 2))))
    rows += [("c3", None, 90.0), ("c4", 40.0, 120.0), ("c5", 7.0, 1e300)]
    ids, t, y = (list(v) for v in zip(*rows))
    t = [np.nan if v is None else v for v in t]
    with pytest.warns(UserWarning, match="LOCAL INFORMATION"):
        curves = fdp.SparseCurves.from_long(ids, t, y, domain=(1, 18), id="child")
    fpca = fdp.SparseFpca(range=(40, 210), grid=np.linspace(1, 18, 35), components=4)
    local = fdp.Session(1.0, seed=8).release(fpca.build(curves, 1.0), curves)
    frame = spark.createDataFrame(rows, schema="child string, age double, height double").repartition(5)
    remote = fdp.spark.release_sparse_fpca(fdp.Session(1.0, seed=8), fpca, frame, n=300, epsilon=1.0, id="child", t="age", y="height")
    assert json.loads(remote.to_json())["output"] == json.loads(local.to_json())["output"]
    generic = fdp.spark.release(fdp.Session(1.0, seed=8), fpca.build(curves, 1.0), frame, columns=["child", "age", "height"])
    assert json.loads(generic.to_json())["output"] == json.loads(local.to_json())["output"]


def test_fpca_on_spark_equals_the_in_process_release(spark: Any) -> None:
    values, grid = data(800, 16)
    curves = fdp.Curves(values, grid)
    fpca = fdp.Fpca(range=(-1.0, 2.0), components=4)
    local = fdp.Session(1.0, seed=12).release(fpca.build(curves, 1.0), curves)
    df, columns = frame(spark, values, 6)
    remote = fdp.spark.release_fpca(fdp.Session(1.0, seed=12), fpca, df, columns=columns, grid=grid, n=800, epsilon=1.0)
    assert np.array_equal(local.fpca(2).functions, remote.fpca(2).functions)


def test_every_mergeable_registered_mechanism_releases_the_in_memory_bits_from_spark(spark: Any) -> None:
    """fdp.spark.release: any registered mechanism with a mergeable state, by its spec, from a
    partitioned DataFrame — the same bytes as in memory at a seed."""
    values, grid = data(300, 12)
    values = np.clip(np.nan_to_num(values, nan=0.5, posinf=1.0), 0.0, 1.0)
    points = np.random.default_rng(4).uniform(0, 1, (300, 2))
    covered = []
    for entry in fdp.registered():
        example = dict(entry["example"])
        if entry["input"] in ("sparse_curves", "labelled"):
            continue  # sparse long frames: the tests above (columns id, t, y); a regression is a solve, not a sum
        if entry["input"] == "curves":
            mechanism = fdp.Mechanism.from_spec(entry["mechanism"], 300, grid=grid, **example)
            data_in, (df, columns) = fdp.Curves(values, grid), frame(spark, values, 5)
        else:
            dim = int(example.get("dim") or len(example.get("centre") or ()) or 1)
            mechanism = fdp.Mechanism.from_spec(entry["mechanism"], 300, **example)
            data_in, (df, columns) = points[:, :dim], frame(spark, points[:, :dim], 5)
        if not mechanism._inner.mergeable():
            with pytest.raises(ValueError, match="mergeable"):
                fdp.spark.release(fdp.Session(10.0, delta=1e-3), mechanism, df, columns=columns)
            continue
        neighbours = "add_remove_one" if entry["mechanism"] == "sketch" else "replace_one"
        a = fdp.spark.release(fdp.Session(10.0, delta=1e-3, seed=2, neighbours=neighbours), mechanism, df, columns=columns,
                              grid=grid if entry["input"] == "curves" else None)
        b = fdp.Session(10.0, delta=1e-3, seed=2, neighbours=neighbours).release(mechanism, data_in)
        assert json.loads(a.to_json())["output"] == json.loads(b.to_json())["output"], entry["mechanism"]
        covered.append(entry["mechanism"])
    assert {"mean", "fpca", "kde", "kme", "sketch"} <= set(covered)
