"""Releases from Spark DataFrames: partial states on the executors, one noisy release on the driver.

Every fdp mechanism's summary is a sum of clipped per-record contributions. Here each partition
turns its Arrow batches into numpy arrays and into an exact :class:`fdp.SummaryState` in Rust
(``mapInArrow``); the states (bytes: ~16 bytes per summed number, independent of the partition's
size) are tree-reduced by exact integer addition; the driver releases the merged state through
the :class:`fdp.Session`, which adds the noise once. The merged state — and therefore the release
at a fixed seed — is bit-identical whatever the partitioning and the order.

n is public for replace-one mechanisms (mean curves, densities): pass it; a state whose record
count differs is refused (it is never taken from the data silently). Sketches protect add/remove
neighbours and release a noisy count instead.

PySpark (and pyarrow) are optional dependencies, imported when these functions are called. The
executors need numpy and fdp: point Spark at a Python that has them (``PYSPARK_PYTHON``, e.g.
``os.environ["PYSPARK_PYTHON"] = sys.executable`` before the session is created in local mode), or
install the wheel in the cluster's environment.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .data import Curves, record_values
from .mechanisms import Density, Fpca, MeanCurve, Mechanism, Sketch, SummaryState, SyntheticDataset
from .releases import CovarianceRelease, CurveRelease, SketchRelease, WeightedSampleRelease
from .session import Session
from .sparse import SparseCurves, SparseFpca, SparseMean

__all__ = [
    "summary_state",
    "release",
    "release_mean",
    "release_sparse_mean",
    "release_sparse_fpca",
    "release_fpca",
    "release_density",
    "release_synthetic",
    "release_sketch",
    "wide_from_long",
]


def _states(mechanism: Mechanism, part_of: Callable[[Any], Any]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The function each partition runs: Arrow batches in, each read by ``part_of`` into the data
    ``mechanism.summarize_part`` takes, one state (bytes) out (an empty partition's: the empty state)."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        state: SummaryState | None = None
        for batch in batches:
            if batch.num_rows == 0:
                continue
            piece = mechanism.summarize_part(part_of(batch))
            state = piece if state is None else state.merge(piece)
        if state is None:
            state = mechanism.empty_state()
        yield pa.RecordBatch.from_pylist([{"state": state.to_bytes()}])

    return run


def _partition_states(mechanism: Mechanism, columns: list[str], grid: np.ndarray | None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Rows of ``columns``: curves on ``grid`` (one record per row) or points."""

    def part_of(batch: Any) -> Any:
        # One (rows x columns) float64 array per batch; nulls become NaN (repaired per record).
        values = np.column_stack(
            [record_values(batch.column(i).to_numpy(zero_copy_only=False)) for i in range(len(columns))]
        )
        return Curves._quiet(values, grid) if grid is not None else values

    return _states(mechanism, part_of)


def _person_states(mechanism: Mechanism, k: int, grid: np.ndarray, person: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The frame grouped by the person id: one row per person with the list of their curves (column
    1), combined into the person's record exactly as ``fdp.Curves(values, grid, ids=...)`` does in
    memory."""

    def part_of(batch: Any) -> Curves:
        lists = batch.column(1)
        rows = np.asarray(lists.value_lengths().to_numpy(zero_copy_only=False), dtype=np.int64)
        # Every curve of a person, row-major; a null value is NaN (repaired per curve).
        values = record_values(lists.flatten().flatten().to_numpy(zero_copy_only=False)).reshape(-1, k)
        return Curves._quiet(values, grid, ids=np.repeat(np.arange(batch.num_rows), rows), id=person)

    return _states(mechanism, part_of)


def summary_state(mechanism: Mechanism, frame: Any, columns: Sequence[str], grid: ArrayLike | None = None) -> SummaryState:
    """The exact summary state of ``frame[columns]`` for ``mechanism``, built on the executors.

    For a mean curve the columns are the curve's values on ``grid`` (in order); for a density one
    column of points; for a sketch the D coordinates. States are tree-reduced on the cluster.

    A curve mechanism that protects persons (``mechanism.person_id``, e.g. built by
    ``release_mean(..., id=...)``) needs that id column in ``frame``: the rows are grouped by it and
    each person's curves combined into one record (their mean, as ``fdp.Curves(..., ids=...)`` in
    memory), so every person counts once whatever their number of rows.
    """
    cols = list(columns)
    g = None if grid is None else np.ascontiguousarray(np.asarray(grid, dtype=np.float64))
    person = mechanism.person_id if mechanism._inner.input() == "curves" else None
    if person is not None:
        from pyspark.sql import functions as F

        if g is None:
            raise ValueError("a curve mechanism's state needs the public grid")
        if person not in frame.columns:
            raise ValueError(
                f"the mechanism protects persons named by {person!r}: the frame needs that column, to combine each "
                "person's rows into one record"
            )
        curve = F.array(*[F.col(c).cast("double") for c in cols])
        grouped = frame.groupBy(person).agg(F.collect_list(curve).alias("_curves"))
        states = grouped.mapInArrow(_person_states(mechanism, len(cols), g, person), "state binary")
    else:
        states = frame.select(*cols).mapInArrow(_partition_states(mechanism, cols, g), "state binary")
    merged = states.rdd.map(lambda row: SummaryState(bytes(row.state))).treeReduce(lambda a, b: a.merge(b))
    return merged


def release(
    session: Session, mechanism: Mechanism, frame: Any, *, columns: Sequence[str], grid: ArrayLike | None = None
) -> Any:
    """**Any mergeable registered mechanism** (see :func:`fdp.registered`; built for the public n,
    e.g. with :meth:`fdp.Mechanism.from_spec`) released from ``frame[columns]``: the exact summary
    state built on the executors (:func:`summary_state`), the noise added once on the driver, charged
    to ``session``. For curve mechanisms the columns are the values on ``grid`` (the grid the
    mechanism was built for); for point mechanisms the coordinates. The same bytes as
    ``session.release(mechanism, data)`` in memory at a fixed seed, whatever the partitioning."""
    if not mechanism._inner.mergeable():
        raise ValueError(f"{mechanism.name} has no mergeable summary state: it cannot be released from partitions")
    if mechanism._inner.input() == "sparse_curves":
        if len(columns) != 3:
            raise ValueError(f"sparse curves come as a long frame: columns=(id, t, y), got {list(columns)!r}")
        id, t, y = columns
        points = mechanism._grid if grid is None else grid
        return _release_sparse(session, mechanism, frame, np.asarray(points, dtype=np.float64), id, t, y)
    if grid is None and mechanism._inner.input() == "curves":
        grid = mechanism._grid
    return session.release_state(mechanism, summary_state(mechanism, frame, columns, grid))


def _observations(batch: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(codes, t, y)`` of a batch of the grouped long frame (column 1: each id's list of
    ``{t, y}``): the record (row) of each observation, its time and value (a null is NaN)."""
    codes: list[int] = []
    ts: list[float] = []
    ys: list[float] = []
    for record, observations in enumerate(batch.column(1).to_pylist()):
        for o in observations or []:
            codes.append(record)
            ts.append(o["t"])
            ys.append(o["y"])
    return np.asarray(codes, dtype=np.int64), record_values(ts), record_values(ys)


def _onto_grid_batches(points: np.ndarray, names: list[str]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """What each partition of the grouped long frame runs: one row per id, its observations put on
    the public grid by the same Rust rule as ``fdp.Curves.from_long`` and the command line."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from . import _fdp

        for batch in batches:
            if batch.num_rows == 0:
                continue
            codes, ts, ys = _observations(batch)
            values = np.asarray(_fdp.long_onto_grid(codes, ts, ys, points, batch.num_rows)).reshape(batch.num_rows, points.size)
            arrays = [batch.column(0)] + [pa.array(values[:, j]) for j in range(points.size)]
            yield pa.RecordBatch.from_arrays(arrays, names=names)

    return run


def wide_from_long(frame: Any, grid: ArrayLike, id: str = "id", t: str = "t", y: str = "y") -> tuple[Any, list[str]]:
    """A long DataFrame ``(id, t, y)`` as one row per id on the **public** ``grid`` (chosen before
    the data are read; the observed times are private and never become the grid): each id's
    observations are interpolated onto the grid — linear between them, constant beyond the first
    and last; a null or non-finite ``t`` or ``y`` is a missing observation, observations at the
    same ``t`` are averaged — exactly as ``fdp.Curves.from_long`` and the command line's ``--long``
    do, so the rows are those of the in-memory curves. Each id is one record: release with
    ``release_mean(..., id=id)`` so the unit is recorded. Returns the wide frame and its value
    columns."""
    from pyspark.sql import functions as F

    points = np.ascontiguousarray(np.asarray(grid, dtype=np.float64).reshape(-1))
    columns = [f"v{j}" for j in range(points.size)]
    observation = F.struct(F.col(t).cast("double").alias("t"), F.col(y).cast("double").alias("y"))
    grouped = frame.groupBy(id).agg(F.collect_list(observation).alias("_observations"))
    id_type = frame.schema[id].dataType.simpleString()
    schema = f"`{id}` {id_type}, " + ", ".join(f"{c} double" for c in columns)
    return grouped.mapInArrow(_onto_grid_batches(points, [id] + columns), schema), columns


def release_mean(
    session: Session,
    mean: MeanCurve,
    frame: Any,
    *,
    columns: Sequence[str],
    grid: ArrayLike,
    n: int,
    epsilon: float,
    id: str | None = None,
) -> CurveRelease:
    """A private mean curve of the curves in ``frame`` (one row per curve; ``columns`` are the values
    on ``grid``), for ``n`` curves (public), charged to ``session`` at a total ``epsilon``.

    With ``id`` (a column of ``frame``) the release protects persons: the rows of each id are
    combined into one record, their mean curve, as ``fdp.Curves(..., ids=...)`` does in memory, and
    ``n`` is the number of ids. For a long frame, first ``frame, columns = wide_from_long(frame, grid,
    id=...)`` — one row per id — and pass the same ``id``. Without ``id`` each row is one record.
    """
    released: CurveRelease = release(session, mean.build_for(grid, n, epsilon, id), frame, columns=columns, grid=grid)
    return released


def release_fpca(
    session: Session,
    fpca: Fpca,
    frame: Any,
    *,
    columns: Sequence[str],
    grid: ArrayLike,
    n: int,
    epsilon: float,
    id: str | None = None,
) -> CovarianceRelease:
    """The private covariance operator (and so the FPCA) of the curves in ``frame`` (one row per
    curve; ``columns`` are the values on ``grid``), for ``n`` curves (public), charged to ``session``
    at a total ``epsilon`` (the private bound and the covariance: two ledger entries): the same
    release as :class:`fdp.Fpca` in memory, bit for bit at a fixed seed. ``id`` protects persons, as
    in :func:`release_mean`."""
    released: CovarianceRelease = release(session, fpca.build_for(grid, n, epsilon, id), frame, columns=columns, grid=grid)
    return released


def _sparse_states(mechanism: Mechanism, domain: tuple[float, float], id: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The grouped long frame: one row per id with its observations. A record is never split:
    grouping by id puts all of its rows in one row."""
    return _states(mechanism, lambda batch: SparseCurves._from_table(*_observations(batch), batch.num_rows, domain, id))


def release_sparse_mean(
    session: Session,
    mean: SparseMean,
    frame: Any,
    *,
    n: int,
    epsilon: float,
    id: str = "id",
    t: str = "t",
    y: str = "y",
) -> CurveRelease:
    """A private mean of the sparse curves in a long ``frame`` (one observation ``(id, t, y)`` per row;
    each id is one record, the privacy unit), for ``n`` ids (public), charged to ``session`` at a
    total ``epsilon``: the same release as :class:`fdp.SparseMean` on the same data in memory, bit
    for bit at a fixed seed, whatever the partitioning. The domain is the ends of ``mean.grid``."""
    points = np.ascontiguousarray(np.asarray(mean.grid, dtype=np.float64).reshape(-1))
    released: CurveRelease = _release_sparse(session, mean.build_for(points, n, epsilon, id), frame, points, id, t, y)
    return released


def release_sparse_fpca(
    session: Session,
    fpca: SparseFpca,
    frame: Any,
    *,
    n: int,
    epsilon: float,
    id: str = "id",
    t: str = "t",
    y: str = "y",
) -> CovarianceRelease:
    """The private covariance and principal components of the sparse curves in a long ``frame`` (one
    observation ``(id, t, y)`` per row; each id is one record), for ``n`` ids (public), charged to
    ``session`` at a total ``epsilon``: the same release as :class:`fdp.SparseFpca` in memory, bit for
    bit at a fixed seed, whatever the partitioning. The domain is the ends of ``fpca.grid``."""
    points = np.ascontiguousarray(np.asarray(fpca.grid, dtype=np.float64).reshape(-1))
    mechanism = fpca.build_for(points, n, epsilon, id)
    released: CovarianceRelease = _release_sparse(session, mechanism, frame, points, id, t, y)
    return released


def _release_sparse(session: Session, mechanism: Mechanism, frame: Any, points: np.ndarray, id: str, t: str, y: str) -> Any:
    """A sparse-curve mechanism released from a long frame: grouped by ``id`` (a record is never
    split between partitions), partial states on the executors, the noise once on the driver."""
    from pyspark.sql import functions as F

    points = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1))
    observation = F.struct(F.col(t).cast("double").alias("t"), F.col(y).cast("double").alias("y"))
    grouped = frame.groupBy(id).agg(F.collect_list(observation).alias("_observations"))
    domain = (float(points[0]), float(points[-1]))
    states = grouped.mapInArrow(_sparse_states(mechanism, domain, id), "state binary")
    merged = states.rdd.map(lambda row: SummaryState(bytes(row.state))).treeReduce(lambda a, b: a.merge(b))
    return session.release_state(mechanism, merged)


def release_density(session: Session, density: Density, frame: Any, *, column: str, n: int, epsilon: float) -> CurveRelease:
    """A private density of the points in ``frame[column]`` (``n`` public)."""
    released: CurveRelease = release(session, density.build(n, epsilon), frame, columns=[column])
    return released


def release_synthetic(
    session: Session,
    dataset: SyntheticDataset,
    frame: Any,
    *,
    columns: Sequence[str],
    n: int,
    epsilon: float,
    delta: float,
) -> WeightedSampleRelease:
    """A private synthetic weighted dataset (Balog et al.'s Algorithm 1) of the points
    ``frame[columns]`` (``n`` public): the kernel sums at the synthetic points are summed on the
    executors, the weights released once on the driver."""
    released: WeightedSampleRelease = release(session, dataset.build(n, epsilon, delta), frame, columns=columns)
    return released


def release_sketch(session: Session, sketch: Sketch, frame: Any, *, columns: Sequence[str], epsilon: float) -> SketchRelease:
    """A private sketch of the points ``frame[columns]`` in ``[0, 1]^D`` (add/remove neighbours)."""
    released: SketchRelease = release(session, sketch.build(epsilon), frame, columns=columns)
    return released
