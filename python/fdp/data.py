"""Curves and points as fdp reads them: numpy first, pandas and scikit-fda when installed."""

from __future__ import annotations

import os
import re
import sys
import warnings
from typing import Any, Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _fdp

__all__ = ["Curves", "as_points"]

_ID_LIKE = re.compile(r"^(id|.*[_. ]id|(subject|patient|person|participant)(_.*)?)$", re.IGNORECASE)


def _codes(ids: ArrayLike) -> tuple[NDArray[np.int64], int]:
    """Each id's record number in order of first appearance, and the number of distinct ids."""
    ids_a = np.asarray(ids)
    if ids_a.ndim != 1:
        raise ValueError("ids must be 1-D (one per row)")
    _, first, inverse = np.unique(ids_a, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return np.ascontiguousarray(rank[inverse.reshape(-1)], dtype=np.int64), int(order.size)


def user_stacklevel() -> int:
    """The ``stacklevel`` that attributes a warning raised inside this package to the first caller
    outside it (the user's line), whatever the path through the package's own functions: for the
    function that calls :func:`warnings.warn`, 1 is itself, 2 its caller, and so on."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(package):
        frame, level = frame.f_back, level + 1
    return level


def _warn_repairs(repairs: dict[str, int], what: str) -> None:
    if repairs["interpolated"] or repairs["defaulted"]:
        warnings.warn(
            f"{repairs['interpolated']} {what} with missing values interpolated, {repairs['defaulted']} replaced by the "
            "public default (zero) curve. LOCAL INFORMATION: these counts describe the private data; do not publish "
            "them (they are in Curves.repairs, never in a release or a report).",
            stacklevel=user_stacklevel(),
        )


def _grid_array(grid: ArrayLike, k: int) -> NDArray[np.float64]:
    points = np.array(grid, dtype=np.float64, copy=True).reshape(-1)  # ours: small, and frozen below
    if points.shape[0] != k:
        raise ValueError(f"grid has {points.shape[0]} points but the curves have {k} values each")
    if not np.all(np.isfinite(points)):
        raise ValueError("grid points must be finite numbers")
    if k > 1 and not np.all(np.diff(points) > 0):
        raise ValueError("grid points must be strictly increasing")
    points.setflags(write=False)
    return points


class Curves:
    """n curves observed on a common grid (the data a mean curve is released from).

    The values are kept as one C-contiguous ``float64`` array of shape ``(n, K)`` and handed to
    Rust as a read-only view, so a large dataset is not copied (``layout="columns"`` and non-float64
    input are converted once). Missing values (NaN, ±inf) are **not an error**: Rust repairs each
    record on its own (linear interpolation along the grid; a record with no finite value becomes
    the public default, zero), because an error that depended on a record's contents would itself
    leak it. ``n`` is public (replace-one neighbours).

    Parameters
    ----------
    values:
        A 2-D array of curves.
    grid:
        The K observation points, strictly increasing (default: ``K`` equally spaced points of
        ``[0, 1]``, where kernel length-scales such as ``matern32:0.1`` are meant). The quadrature
        weights are the trapezoid rule's, as for a CSV file's numeric column names.
    layout:
        ``"rows"`` (one curve per row, as scikit-fda's ``FDataGrid``) or ``"columns"`` (one curve
        per column, as R's fda and fds).
    ids:
        The **privacy unit**. ``None``: one curve is one record, and a person with ``m`` curves
        is protected only at ``m ε``. One public id per curve: the curves of each id are combined
        into one record (the mean of the person's repaired curves) and every release protects the
        whole person; ``n`` is then the number of persons. ``id`` names the id variable in the
        releases' metadata (default: the ``name`` of ``ids`` if it has one, else ``"id"``).

    Attributes
    ----------
    repairs:
        ``{"complete": ..., "interpolated": ..., "defaulted": ...}`` over the input curves (rows):
        **local information for the curator** — it describes the private data and must not be
        published; nothing fdp publishes contains it. A warning is issued when any curve needed
        repair.
    person_id:
        ``None`` (one record per curve) or the name of the id variable (one record per person).
    rows:
        For person-level curves, how many input curves each person had (local, like ``repairs``).
    """

    values: NDArray[np.float64]
    grid: NDArray[np.float64]
    repairs: dict[str, int]
    rows: NDArray[np.int64] | None

    def __init__(
        self,
        values: ArrayLike,
        grid: ArrayLike | None = None,
        layout: Literal["rows", "columns"] = "rows",
        ids: ArrayLike | None = None,
        id: str | None = None,
    ) -> None:
        if layout not in ("rows", "columns"):
            raise ValueError(f"layout must be 'rows' or 'columns', got {layout!r}")
        if ids is None and id is not None:
            raise ValueError("id names the variable the curves are grouped by: give ids= (one per curve); a unit is never a label alone")
        array = record_values(values)
        if array.ndim != 2:
            raise ValueError(f"values must be a 2-D array (curves x grid points), got {array.ndim} dimension(s)")
        if layout == "columns":
            array = array.T
        if array.shape[0] == 0 or array.shape[1] == 0:
            raise ValueError(f"values must hold at least one curve and one grid point, got shape {array.shape}")
        array = np.ascontiguousarray(array)
        k = array.shape[1]
        if grid is None and layout == "rows" and array.shape[0] < k:
            warnings.warn(
                f"{array.shape[0]} curves of {k} points each, and no grid: if the curves are the columns "
                "(R's fda layout), pass layout='columns'; give grid= to state the observation points",
                stacklevel=user_stacklevel(),
            )
        self.grid = _grid_array(np.linspace(0.0, 1.0, k) if grid is None else grid, k)
        self._person_id: str | None = None
        self.rows = None
        if ids is not None:
            codes, persons = _codes(ids)
            if codes.size != array.shape[0]:
                raise ValueError(f"ids has {codes.size} entries but there are {array.shape[0]} curves")
            means, rows, counts = _fdp.per_person(array, self.grid, codes)
            array = np.asarray(means).reshape(persons, k)
            self._person_id = str(id if id is not None else (getattr(ids, "name", None) or "id"))
            self.rows = np.asarray(rows, dtype=np.int64)
        elif np.all(np.isfinite(array)):
            counts = (array.shape[0], 0, 0)
        else:
            counts = _fdp.repair_counts(array, self.grid)
        self.repairs = dict(zip(("complete", "interpolated", "defaulted"), (int(c) for c in counts)))
        _warn_repairs(self.repairs, "curves")
        self.values = array

    @classmethod
    def _quiet(cls, values: ArrayLike, grid: ArrayLike, ids: ArrayLike | None = None, id: str | None = None) -> "Curves":
        """The same curves without the local repair warning: for Spark executors, whose logs must not
        carry counts that describe the private data (the driver's curator sees the in-memory ones)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return cls(values, grid, ids=ids, id=id)

    @property
    def person_id(self) -> str | None:
        """``None`` (one record per curve) or the name of the id variable the curves were grouped by
        (one record per person). Read-only: the unit follows from how the records were built, so a
        per-person mechanism never meets ungrouped rows under a person's label."""
        return self._person_id

    @property
    def n(self) -> int:
        """The number of records (public): curves, or persons when ``ids`` were given."""
        return int(self.values.shape[0])

    @property
    def k(self) -> int:
        """The number of grid points."""
        return int(self.values.shape[1])

    def __repr__(self) -> str:
        unit = "" if self.person_id is None else f", per person ({self.person_id!r})"
        return f"Curves(n={self.n}, k={self.k}, grid=[{self.grid[0]:g}, {self.grid[-1]:g}]{unit})"

    @classmethod
    def from_pandas(
        cls,
        frame: Any,
        columns: Sequence[str] | None = None,
        prefix: str | None = None,
        grid: ArrayLike | None = None,
        id: str | None = None,
    ) -> "Curves":
        """Curves from a wide pandas DataFrame, one curve per row.

        The value columns are ``columns``, or those whose names start with ``prefix``, or all. If no
        ``grid`` is given and every selected name ends in a number after the prefix (``age_1.5``),
        those numbers are the grid (columns sorted by them, as the command line does). ``id``: the
        column naming the persons — each person's rows become one record and releases protect the
        whole person (see ``ids`` in :class:`Curves`). Without it, a column named like an id
        (``id``, ``ID``, ``*_id``, ``subject``, ...) with repeated values draws a warning.
        """
        if id is None:
            for c in frame.columns:
                if _ID_LIKE.match(str(c)) and not (prefix is not None and str(c).startswith(prefix)) and frame[c].duplicated().any():
                    warnings.warn(
                        f"column {c!r} has repeated values: if it names persons, a release protects one row, and a "
                        f"person with m rows only at m ε. Pass id={c!r} to protect whole persons.",
                        stacklevel=user_stacklevel(),
                    )
        elif id not in frame.columns:
            raise ValueError(f"the frame has no column {id!r}")
        names = list(columns) if columns is not None else [c for c in frame.columns if prefix is None or str(c).startswith(prefix)]
        if id is not None:
            names = [c for c in names if c != id]
        if not names:
            raise ValueError(f"no column of the frame starts with {prefix!r}")
        if grid is None:
            suffix = len(prefix) if prefix is not None else 0
            try:
                numbers = [float(str(c)[suffix:]) for c in names]
            except ValueError:
                numbers = None
            if numbers is not None and len(set(numbers)) == len(numbers):
                order = np.argsort(numbers)
                names = [names[i] for i in order]
                grid = np.asarray(numbers)[order]
            else:
                warnings.warn(
                    f"the column names ({names[0]!r}, ...) carry no grid: the {len(names)} columns are taken as "
                    "equally spaced points of [0, 1]; pass grid= with the observation points if they are not",
                    stacklevel=user_stacklevel(),
                )
                # Said once: the layout question below does not arise for a frame's columns.
                grid = np.linspace(0.0, 1.0, len(names))
        numeric = frame[names].apply(_to_numeric_or_nan)
        text = [c for c in names if numeric[c].isna().all() and frame[c].notna().any()]
        if text:
            raise ValueError(
                f"column(s) {text!r} hold text and no numbers: they are not curve values; select the value columns "
                "with prefix= or columns= (and name the persons with id=)"
            )
        values = numeric.to_numpy(dtype=np.float64)
        if id is None:
            return cls(values, grid)
        return cls(values, grid, ids=frame[id].to_numpy(), id=id)

    @classmethod
    def from_long(cls, ids: ArrayLike, t: ArrayLike, y: ArrayLike, *, grid: ArrayLike, id: str | None = None) -> "Curves":
        """Curves from a long table, one observation ``(id, t, y)`` per row, on a **public** ``grid``.

        ``grid`` (strictly increasing) is chosen before the data are read: the observed times are
        private and never become the grid. Each id is one record (the id variable is the privacy
        unit: releases protect every observation of an id), in order of first appearance; its
        observations are interpolated onto the grid — linear between them, the first (last)
        observation's value before (after) them; a ``t`` or ``y`` that is not a finite number is a
        missing observation, observations at the same ``t`` are averaged — and an id with no usable
        observation becomes the public default curve. No value raises an error. The same rule as the
        command line's ``--long ... --grid`` and :func:`fdp.spark.wide_from_long`. With a pandas
        frame: ``Curves.from_long(df.id, df.t, df.y, grid=np.linspace(0, 1, 50))``.
        """
        ids_a = np.asarray(ids)
        t_a = np.ascontiguousarray(record_values(t))
        y_a = np.ascontiguousarray(record_values(y))
        if not (ids_a.shape == t_a.shape == y_a.shape) or ids_a.ndim != 1:
            raise ValueError("ids, t and y must be 1-D and of the same length")
        points = np.ascontiguousarray(np.asarray(grid, dtype=np.float64).reshape(-1))
        points = _grid_array(points, points.size)
        codes, records = _codes(ids_a)
        values = np.asarray(_fdp.long_onto_grid(codes, t_a, y_a, points, records)).reshape(records, points.size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the count below is per id, reported once
            curves = cls(values, points)
        curves._person_id = str(id if id is not None else (getattr(ids, "name", None) or "id"))
        curves.rows = np.bincount(codes, minlength=records).astype(np.int64)
        _warn_repairs(curves.repairs, "ids")
        return curves

    @classmethod
    def from_fdatagrid(cls, fd: Any) -> "Curves":
        """Curves from a scikit-fda ``FDataGrid`` (one-dimensional domain and values)."""
        data = np.asarray(fd.data_matrix, dtype=np.float64)
        if data.ndim == 3:
            if data.shape[2] != 1:
                raise ValueError("only FDataGrid objects with one-dimensional values are supported")
            data = data[:, :, 0]
        if len(fd.grid_points) != 1:
            raise ValueError("only FDataGrid objects on a one-dimensional domain are supported")
        return cls(data, np.asarray(fd.grid_points[0], dtype=np.float64))


# numpy >= 1.25 has it in np.exceptions; older ones (the package takes numpy >= 1.22) at the top level.
_COMPLEX_WARNING: type[Warning] = getattr(getattr(np, "exceptions", np), "ComplexWarning")


def record_values(values: Any) -> NDArray[np.float64]:
    """Record values as a float64 array, each value that is not a number (a text, ``None``, a
    complex number, an integer beyond the float range) as NaN, which the mechanisms treat as the
    public default. A conversion never fails on a record's content, and no message quotes one:
    whether an error is raised must not depend on the private data (only shapes, which are public,
    are checked)."""
    try:
        with warnings.catch_warnings():
            # A complex array would be cast silently to its real part, with a warning: an error here.
            warnings.simplefilter("error", _COMPLEX_WARNING)
            return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError, OverflowError, _COMPLEX_WARNING):
        pass

    def one(value: Any) -> float:
        if isinstance(value, (complex, np.complexfloating)):
            return float(value.real) if value.imag == 0 else np.nan
        try:
            return float(value)
        except (TypeError, ValueError, OverflowError):
            return np.nan

    objects = np.asarray(values, dtype=object)
    return np.vectorize(one, otypes=[np.float64])(objects) if objects.size else objects.astype(np.float64)


def _to_numeric_or_nan(column: Any) -> Any:
    import pandas as pd  # only reached with a pandas frame

    return pd.to_numeric(column, errors="coerce")


def as_points(points: ArrayLike, dim: int | None = None) -> NDArray[np.float64]:
    """Points as a C-contiguous ``(n, D)`` float64 array (a 1-D array is n points in one dimension).

    Coordinates that are not finite numbers (NaN, ±inf, a text, ``None``) are not an error: the record
    becomes the public default point. No rows is not an error either (a sketch's n is private; where
    n is public the mechanism checks it).
    """
    array = record_values(points)
    if array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim != 2 or array.shape[1] == 0:
        raise ValueError(f"points must be an (n, D) array with D >= 1, got shape {np.shape(points)}")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"points have {array.shape[1]} coordinates, the mechanism expects {dim}")
    return np.ascontiguousarray(array)
