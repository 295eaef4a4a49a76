"""Irregular and sparse curves: every record observed at its own times, and their private mean.

A record is one subject's observations ``(t_1, y_1), ..., (t_m, y_m)`` on a public domain (growth
measured at different ages per child, clinic visits, a wearable with gaps); the privacy unit is the
whole record. Nothing is interpolated: :class:`SparseMean` sums each record's deviations from a
public centre in bins of a public grid, with a private bound and the bins' observation counts
released too, then smooths by Stein's unbiased risk estimate (docs/DESIGN.md section 18).
:class:`SparseFpca` fits each record on its own onto a public basis (kernel ridge) and releases the
covariance of those fits and its principal components, with a private bound in the same ε.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _fdp
from .data import _codes, _grid_array, record_values, user_stacklevel
from .mechanisms import Mechanism, _build, _default

__all__ = ["SparseCurves", "SparseFpca", "SparseMean"]


class SparseCurves:
    """n records, each a list of ``(t, y)`` observations on the public ``domain = (lo, hi)``.

    Stored as a long table: ``codes[r]`` (the record, 0..n-1 in order of first appearance), ``t[r]``,
    ``y[r]``. An observation whose time or value is not a finite number, or whose time lies outside
    the domain, is **dropped** when released (never an error: an error that depended on a record's
    contents would itself leak it); :attr:`repairs` counts them — LOCAL INFORMATION about the private
    data, never part of a release. n (the number of records) is public.

    Parameters
    ----------
    records:
        A sequence of ``(times, values)`` pairs, one per record (use :meth:`from_long` for a long
        table).
    domain:
        The public domain of the times, fixed before reading the data.
    ids:
        The **privacy unit**. ``None``: one record per pair. One public id per pair: the pairs of
        each id are combined into one record (their observations together) and every release
        protects the whole subject; ``n`` is then the number of ids.
    id:
        The name of the id variable, recorded as the privacy unit (default: the ``name`` of ``ids``
        if it has one, else ``"id"``). Only with ``ids``: a unit is what the records are grouped
        by, never a label alone.

    Examples
    --------
    >>> import fdp
    >>> curves = fdp.SparseCurves([([1.0, 4.5], [80.0, 104.0]), ([2.0, 3.0, 9.0], [88.0, 95.0, 131.0])], domain=(1, 18))
    >>> curves
    SparseCurves(n=2, domain=[1, 18])
    >>> fdp.SparseCurves([([1.0], [80.0]), ([2.0], [88.0]), ([3.0], [82.0])], domain=(1, 18), ids=["a", "b", "a"], id="child")
    SparseCurves(n=2, domain=[1, 18], per person ('child'))
    """

    codes: NDArray[np.int64]
    t: NDArray[np.float64]
    y: NDArray[np.float64]
    domain: tuple[float, float]
    n: int
    repairs: dict[str, int]

    def __init__(self, records: Any, domain: tuple[float, float], ids: ArrayLike | None = None, id: str | None = None) -> None:
        if ids is None and id is not None:
            raise ValueError(
                "id names the variable the records are grouped by: give ids= (one per record), or use "
                "SparseCurves.from_long; a unit is never a label alone"
            )
        records = list(records)
        lengths = []
        for i, record in enumerate(records):
            if len(record) != 2:
                raise ValueError(f"record {i} must be a (times, values) pair")
            t_i, y_i = (record_values(v).reshape(-1) for v in record)
            if t_i.shape != y_i.shape:
                raise ValueError(f"record {i} has {t_i.size} times but {y_i.size} values")
            lengths.append(t_i.size)
        if ids is None:
            per_record, n, unit = np.arange(len(records), dtype=np.int64), len(records), None
        else:
            per_record, n = _codes(ids)
            if per_record.size != len(records):
                raise ValueError(f"ids has {per_record.size} entries but there are {len(records)} records")
            unit = str(id if id is not None else (getattr(ids, "name", None) or "id"))
        codes = np.repeat(per_record, lengths)
        t = np.concatenate([record_values(r[0]).reshape(-1) for r in records]) if records else np.empty(0)
        y = np.concatenate([record_values(r[1]).reshape(-1) for r in records]) if records else np.empty(0)
        self._set(codes, t, y, n, domain, unit)

    def _set(self, codes: NDArray[np.int64], t: NDArray[np.float64], y: NDArray[np.float64], n: int, domain: Any, id: str | None) -> None:
        lo, hi = (float(v) for v in domain)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"domain must be a finite (lo, hi) with lo < hi, got {domain!r}")
        if n < 1:
            raise ValueError("sparse curves need at least one record")
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        self.t = np.ascontiguousarray(t, dtype=np.float64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.domain, self.n, self._person_id = (lo, hi), int(n), id
        finite = np.isfinite(self.t) & np.isfinite(self.y)
        inside = finite & (self.t >= lo) & (self.t <= hi)
        kept = np.bincount(self.codes[inside], minlength=self.n)
        self.repairs = {
            "non_finite": int(np.count_nonzero(~finite)),
            "outside_domain": int(np.count_nonzero(finite & ~inside)),
            "empty_records": int(np.count_nonzero(kept == 0)),
        }
        if self.repairs["non_finite"] or self.repairs["outside_domain"]:
            warnings.warn(
                f"{self.repairs['non_finite']} observations with a missing time or value and {self.repairs['outside_domain']} "
                f"outside the domain [{lo:g}, {hi:g}] will be dropped ({self.repairs['empty_records']} records left empty "
                "count as the public default). LOCAL INFORMATION: these counts describe the private data; do not publish "
                "them (they are in SparseCurves.repairs, never in a release or a report).",
                stacklevel=user_stacklevel(),
            )

    @classmethod
    def from_long(cls, ids: ArrayLike, t: ArrayLike, y: ArrayLike, *, domain: tuple[float, float], id: str | None = "id") -> "SparseCurves":
        """From a long table, one observation ``(id, t, y)`` per row: each id is one record (the id
        variable is the privacy unit), in order of first appearance. With pandas:
        ``SparseCurves.from_long(df.child, df.age, df.height, domain=(1, 18), id="child")``."""
        ids_a = np.asarray(ids)
        t_a, y_a = (record_values(v) for v in (t, y))
        if not (ids_a.shape == t_a.shape == y_a.shape) or ids_a.ndim != 1:
            raise ValueError("ids, t and y must be 1-D and of the same length")
        codes, n = _codes(ids_a)
        curves = cls.__new__(cls)
        curves._set(codes, t_a, y_a, n, domain, id)
        return curves

    @classmethod
    def _from_table(cls, codes: Any, t: Any, y: Any, n: int, domain: tuple[float, float], id: str | None) -> "SparseCurves":
        """``n`` records from a long table whose record codes (0..n-1) are given (a record may have
        no observation); no local warning (for Spark executors: the driver's curator sees the
        in-memory counts, the executors' logs must not)."""
        curves = cls.__new__(cls)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            curves._set(np.asarray(codes, dtype=np.int64), record_values(t), record_values(y), n, domain, id)
        return curves

    @classmethod
    def from_fdatairregular(cls, data: Any, *, domain: tuple[float, float]) -> "SparseCurves":
        """From scikit-fda's ``FDataIrregular`` (1-D argument and values): its ``start_indices``,
        ``points`` and ``values``, on the public ``domain``. The domain must be given: scikit-fda's
        ``domain_range`` defaults to the smallest and largest observed time — private data, which
        would then set the grid and show in the release."""
        if data.dim_domain != 1 or data.dim_codomain != 1:
            raise ValueError("sparse curves have one argument and one value")
        starts = np.asarray(data.start_indices, dtype=np.int64)
        points = record_values(data.points).reshape(-1)
        values = record_values(data.values).reshape(-1)
        codes = np.repeat(np.arange(starts.size, dtype=np.int64), np.diff(np.append(starts, points.size)))
        curves = cls.__new__(cls)
        curves._set(codes, points, values, int(starts.size), domain, None)
        return curves

    @property
    def person_id(self) -> str | None:
        """``None`` (one record per curve) or the name of the id variable the records were grouped
        by (one record per person). Read-only: the unit follows from how the records were built."""
        return self._person_id

    @property
    def observations(self) -> int:
        """The number of observations (private: local use only; not shown by ``repr``)."""
        return int(self.t.size)

    def __repr__(self) -> str:
        unit = "" if self.person_id is None else f", per person ({self.person_id!r})"
        return f"SparseCurves(n={self.n}, domain=[{self.domain[0]:g}, {self.domain[1]:g}]{unit})"


def _checked_grid(grid: Any, curves: SparseCurves) -> NDArray[np.float64]:
    """The public grid as an array, checked against the sparse curves' domain (its ends)."""
    if not isinstance(curves, SparseCurves):
        raise TypeError(f"curves must be fdp.SparseCurves, got {type(curves).__name__}")
    points = _grid_array(np.asarray(grid, dtype=np.float64).reshape(-1), np.asarray(grid).size)
    if (float(points[0]), float(points[-1])) != curves.domain:
        raise ValueError(
            f"the grid spans [{points[0]:g}, {points[-1]:g}] but the curves' domain is "
            f"[{curves.domain[0]:g}, {curves.domain[1]:g}]: give a grid over the domain"
        )
    return points


@dataclass(frozen=True)
class SparseMean:
    """The private mean of sparse curves (pure ε-DP, privately tuned; docs/DESIGN.md section 18).

    Observations are snapped to the public ``grid`` (in the data's units; its ends are the domain),
    clamped to the public ``range`` and centred at ``centre`` (default: the middle of the range).
    Stage 1 spends a share of ε on a private bound for each record's mean absolute deviation (a
    noisy geometric mean); stage 2 releases, in bins of the grid, the sums of the records'
    deviations (each record's total clipped at the bound: sensitivity ``2τ/n``) and of their
    observation counts (each record's total 1: sensitivity ``2/n``) with Laplace noise; the bin
    means are their ratio, smoothed by SURE (post-processing). With a ``design`` (the public
    probability of an observation at each grid point, e.g. a visit schedule) the counts are known
    and not released.

    Examples
    --------
    >>> import numpy as np, fdp
    >>> rng = np.random.default_rng(0)
    >>> ages = [np.sort(rng.uniform(1, 18, 4)) for _ in range(300)]
    >>> curves = fdp.SparseCurves([(a, 75 + 6 * a + rng.normal(0, 5, a.size)) for a in ages], domain=(1, 18))
    >>> mean = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35)).build(curves, epsilon=1.0)
    >>> release = fdp.Session(1.0).release(mean, curves)
    >>> bool(np.all((release.curve >= 40) & (release.curve <= 210)))
    True
    """

    range: tuple[float, float]
    grid: Any
    kernel: str = _default("sparse_mean", "kernel")
    centre: float | None = None
    design: Any = None

    def build(self, curves: SparseCurves, epsilon: float) -> Mechanism:
        """The mechanism for ``curves``' n and privacy unit at a total ``epsilon`` (the observations
        are not read). The curves' domain must be the grid's."""
        return self.build_for(_checked_grid(self.grid, curves), curves.n, epsilon, curves.person_id)

    def build_for(self, grid: ArrayLike, n: int, epsilon: float, id: str | None = None) -> Mechanism:
        """The mechanism for ``n`` records (public) on ``grid`` at a total ``epsilon``."""
        points = np.ascontiguousarray(np.asarray(grid, dtype=np.float64).reshape(-1))
        if len(self.range) != 2:
            raise TypeError(f"range must be a (lo, hi) pair, got {self.range!r}")
        design = None if self.design is None else np.asarray(self.design, dtype=np.float64).reshape(-1)
        params = dict(
            epsilon=float(epsilon), range=(float(self.range[0]), float(self.range[1])), kernel=self.kernel,
            centre=self.centre, design=design,
        )
        return _build("sparse_mean", params, n, points, id, points.size)


@dataclass(frozen=True)
class SparseFpca:
    """The private covariance operator and principal components of sparse curves (docs/DESIGN.md
    sections 17-18; docs/DESIGN.md §18.6).

    Each record's observations are snapped to the public ``grid`` (in the data's units; its ends are
    the domain), clamped to ``range`` and centred at ``centre`` (default: the middle of the range),
    then fitted **on their own** onto the ``components`` (J) leading eigenfunctions of ``kernel``'s
    basis by kernel ridge with the public ``ridge`` (one point, every point at one time or none
    each give a finite fit). The fits are clipped in L2 at a private bound (first stage, a share of
    ε) and their mean and second moments released with Laplace noise (pure ε) or, with ``delta``,
    Gaussian noise: one record, whatever its number of observations, moves the summary by at most
    ``(√J + 1)² τ²/n`` in l1 or ``3τ²/(√2 n)`` in l2. The covariance and its eigenfunctions are
    post-processing; the release is a :class:`fdp.CovarianceRelease` (``.fpca(k)``, ``.mean``).

    Examples
    --------
    >>> import numpy as np, fdp
    >>> rng = np.random.default_rng(0)
    >>> ids = np.repeat(np.arange(400), 5)
    >>> t = rng.uniform(0, 1, ids.size)
    >>> y = 0.5 + rng.normal(0, 0.15, 400)[ids] * np.sin(np.pi * t) + rng.normal(0, 0.02, ids.size)
    >>> curves = fdp.SparseCurves.from_long(ids, t, y, domain=(0, 1))
    >>> fpca = fdp.SparseFpca(range=(0, 1), grid=np.linspace(0, 1, 40), components=4)
    >>> release = fdp.Session(1.0).release(fpca.build(curves, epsilon=1.0), curves)
    >>> release.fpca(2).functions.shape
    (2, 40)
    """

    range: tuple[float, float]
    grid: Any
    components: int = _default("sparse_fpca", "components")
    truncation: Literal["risk", "fixed"] = _default("sparse_fpca", "truncation")
    kernel: str = _default("sparse_fpca", "kernel")
    centre: float | None = None
    ridge: float = _default("sparse_fpca", "ridge")
    delta: float | None = None

    def build(self, curves: SparseCurves, epsilon: float) -> Mechanism:
        """The mechanism for ``curves``' n and privacy unit at a total ``epsilon`` (the observations
        are not read). The curves' domain must be the grid's."""
        return self.build_for(_checked_grid(self.grid, curves), curves.n, epsilon, curves.person_id)

    def build_for(self, grid: ArrayLike, n: int, epsilon: float, id: str | None = None) -> Mechanism:
        """The mechanism for ``n`` records (public) on ``grid`` at a total ``epsilon``."""
        points = np.ascontiguousarray(np.asarray(grid, dtype=np.float64).reshape(-1))
        if len(self.range) != 2:
            raise TypeError(f"range must be a (lo, hi) pair, got {self.range!r}")
        params = dict(
            epsilon=float(epsilon), range=(float(self.range[0]), float(self.range[1])), components=self.components,
            truncation=self.truncation, kernel=self.kernel, centre=self.centre, ridge=self.ridge, delta=self.delta,
        )
        return _build("sparse_fpca", params, n, points, id, points.size)
