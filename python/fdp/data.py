"""Curves and points as fdp reads them: numpy first, pandas and scikit-fda when installed."""

from __future__ import annotations

from typing import Any, Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Curves", "as_points"]


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
    """

    values: NDArray[np.float64]
    grid: NDArray[np.float64]

    def __init__(
        self,
        values: ArrayLike,
        grid: ArrayLike | None = None,
        layout: Literal["rows", "columns"] = "rows",
    ) -> None:
        if layout not in ("rows", "columns"):
            raise ValueError(f"layout must be 'rows' or 'columns', got {layout!r}")
        array = np.asarray(values, dtype=np.float64)
        if array.ndim != 2:
            raise ValueError(f"values must be a 2-D array (curves x grid points), got {array.ndim} dimension(s)")
        if layout == "columns":
            array = array.T
        if array.shape[0] == 0 or array.shape[1] == 0:
            raise ValueError(f"values must hold at least one curve and one grid point, got shape {array.shape}")
        array = np.ascontiguousarray(array)
        k = array.shape[1]
        self.grid = _grid_array(np.linspace(0.0, 1.0, k) if grid is None else grid, k)
        self.values = array

    @property
    def n(self) -> int:
        """The number of curves (public)."""
        return int(self.values.shape[0])

    @property
    def k(self) -> int:
        """The number of grid points."""
        return int(self.values.shape[1])

    def __repr__(self) -> str:
        return f"Curves(n={self.n}, k={self.k}, grid=[{self.grid[0]:g}, {self.grid[-1]:g}])"

    @classmethod
    def from_pandas(cls, frame: Any, columns: Sequence[str] | None = None, prefix: str | None = None, grid: ArrayLike | None = None) -> "Curves":
        """Curves from a wide pandas DataFrame, one curve per row.

        The value columns are ``columns``, or those whose names start with ``prefix``, or all. If no
        ``grid`` is given and every selected name ends in a number after the prefix (``age_1.5``),
        those numbers are the grid (columns sorted by them, as the command line does).
        """
        names = list(columns) if columns is not None else [c for c in frame.columns if prefix is None or str(c).startswith(prefix)]
        if not names:
            raise ValueError(f"no column of the frame starts with {prefix!r}")
        if grid is None and prefix is not None:
            try:
                numbers = [float(str(c)[len(prefix):]) for c in names]
            except ValueError:
                numbers = None
            if numbers is not None and len(set(numbers)) == len(numbers):
                order = np.argsort(numbers)
                names = [names[i] for i in order]
                grid = np.asarray(numbers)[order]
        values = frame[names].apply(_to_numeric_or_nan).to_numpy(dtype=np.float64)
        return cls(values, grid)

    @classmethod
    def from_long(cls, ids: ArrayLike, t: ArrayLike, y: ArrayLike) -> "Curves":
        """Curves from a long table, one observation ``(id, t, y)`` per row.

        The grid is the sorted distinct values of ``t``; the records are the distinct ids in order of
        first appearance; an ``(id, t)`` pair that is absent is a missing value (repaired per record).
        A repeated pair is an error. With a pandas frame: ``Curves.from_long(df.id, df.t, df.y)``.
        """
        ids_a = np.asarray(ids)
        t_a = np.asarray(t, dtype=np.float64)
        y_a = np.asarray(y, dtype=np.float64)
        if not (ids_a.shape == t_a.shape == y_a.shape) or ids_a.ndim != 1:
            raise ValueError("ids, t and y must be 1-D and of the same length")
        if not np.all(np.isfinite(t_a)):
            raise ValueError("t must hold finite numbers (the grid is public)")
        _, first, record = np.unique(ids_a, return_index=True, return_inverse=True)
        order = np.argsort(first)  # records in order of first appearance
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        record = rank[record.reshape(-1)]
        grid, column = np.unique(t_a, return_inverse=True)
        values = np.full((order.size, grid.size), np.nan)
        cells = record * grid.size + column.reshape(-1)
        if np.unique(cells).size != cells.size:
            raise ValueError("an (id, t) pair appears twice")
        values.reshape(-1)[cells] = y_a
        return cls(values, grid)

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


def _to_numeric_or_nan(column: Any) -> Any:
    import pandas as pd  # only reached with a pandas frame

    return pd.to_numeric(column, errors="coerce")


def as_points(points: ArrayLike, dim: int | None = None) -> NDArray[np.float64]:
    """Points as a C-contiguous ``(n, D)`` float64 array (a 1-D array is n points in one dimension).

    Non-finite coordinates are not an error: the record becomes the public default point.
    """
    array = np.asarray(points, dtype=np.float64)
    if array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"points must be a non-empty (n, D) array, got shape {np.shape(points)}")
    if dim is not None and array.shape[1] != dim:
        raise ValueError(f"points have {array.shape[1]} coordinates, the mechanism expects {dim}")
    return np.ascontiguousarray(array)
