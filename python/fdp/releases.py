"""What a release hands back: the private output, its metadata and its JSON record."""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _fdp

__all__ = ["Accuracy", "OwnError", "CurveRelease", "WeightedSampleRelease", "SketchRelease", "M2mEstimates"]


def _whole(name: str, value: object, low: int, high: int = 2**64 - 1) -> int:
    """``value`` as an int if it is a whole number in ``[low, high]`` (numpy integers, and floats with
    no fraction such as ``3.0``, as the registry reads counts), else ``ValueError``: 1.5 is not
    silently 1, and a negative count is not an ``OverflowError``."""
    whole = isinstance(value, numbers.Integral) or (isinstance(value, numbers.Real) and float(value).is_integer())
    if isinstance(value, bool) or not whole or not low <= int(value) <= high:  # type: ignore[call-overload]
        upper = {2**53: "2^53", 2**64 - 1: "2^64 - 1"}.get(high, str(high))
        raise ValueError(f"{name} must be an integer in [{low}, {upper}], got {value!r}")
    return int(value)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Accuracy:
    """The accuracy preview: the noise's expected squared error, from public quantities only.

    ``expected_sq_error`` is ``E||noise||²`` (L2 on the grid for curves); ``sq_error_sd`` its
    standard deviation where the components are independent. ``bound(alpha)`` is a level-(1 - α)
    upper bound on ``||noise||²`` (Cantelli with the sd, else Markov). ``upper_bound``: the
    expected error is only an **upper bound** (the privately tuned mechanisms preview the noise at
    the public ceiling, before the private bound and the smoothing; their releases report their own
    estimate in the ``accuracy`` stage): use it to rule a mechanism out, not to rank mechanisms.
    """

    expected_sq_error: float
    sq_error_sd: float | None
    upper_bound: bool = False

    def bound(self, alpha: float = 0.05) -> float:
        """A level-(1 - alpha) upper bound on the noise's squared norm."""
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        if self.sq_error_sd is None:
            return self.expected_sq_error / alpha
        return self.expected_sq_error + self.sq_error_sd * ((1.0 - alpha) / alpha) ** 0.5


@dataclass(frozen=True)
class OwnError:
    """A privately tuned curve's own reading of its error: its metadata's ``own_error`` (in
    ``release.json`` too), the ``accuracy`` stage as numbers (post-processing of the release: free to
    publish), against the non-private mean:

    ``estimate``: the release's own estimate of its squared L2 error (an average-case number,
    floored at 0: where the noise swamps the signal it is often 0 though the release is not
    exact); ``centre``: the public centre's estimated squared error; ``upper``: the upper-side
    figure (the estimate plus 2 sd of its noise, the clipping term at an unlucky bound, at most the
    range's squared diameter) — read this one when ``noise_dominated``; it is a reading, not a
    bound (docs/DESIGN.md §16.22: it covered the realised error in 93 % of releases on average over
    the study's tuning cells, 88 % over its validation cells); ``band``: the L2 half-width (not
    squared) of the ±2 sd noise band; ``noise_dominated``: the release does no better than the
    centre by these estimates (then do not read shape into the curve). The pilot-tuned kinds
    (ICLP-l1, IID Laplace, Bernstein, privately tuned) report their estimate only: the other
    fields are ``None`` there (and the estimate ``nan`` if it was not finite).
    """

    estimate: float
    centre: float | None
    upper: float | None
    band: float | None
    noise_dominated: bool | None


def _own_error(metadata: dict[str, Any]) -> OwnError | None:
    """The release metadata's ``own_error`` (the ``accuracy`` stage's numbers) as an
    :class:`OwnError`; ``None`` without one. A number JSON cannot carry (not finite) is absent
    there: ``nan`` for the estimate, ``None`` for the others."""
    own = metadata.get("own_error")
    if own is None:
        return None
    estimate = own.get("estimate")
    return OwnError(
        estimate=float("nan") if estimate is None else float(estimate),
        centre=own.get("centre"),
        upper=own.get("upper"),
        band=own.get("band"),
        noise_dominated=own.get("noise_dominated"),
    )


class _Release:
    _inner: Any

    def to_json(self) -> str:
        """The release as JSON: ``{"metadata": ..., "output": ...}`` (what a curator publishes)."""
        return str(self._inner.to_json())

    @property
    def metadata(self) -> dict[str, Any]:
        """How the release was made and what it guarantees: mechanism, (ε, δ), sensitivity,
        clipping bound, regularisation, each charged stage, and the noise's provenance."""
        return dict(json.loads(self._inner.to_json())["metadata"])

    def save(self, path: str) -> None:
        """Writes :meth:`to_json` to ``path``."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json())


class CurveRelease(_Release):
    """A released curve (a mean curve or a density) on its grid.

    A mean curve is released on its grid mapped onto ``[0, 1]`` (the rule every front door shares,
    so a kernel's length-scale is a fraction of the domain); :attr:`grid`, :meth:`evaluate`, the
    figures and :meth:`to_pandas` speak the data's own units, ``release.json`` holds the mapped grid
    (as the command line's does).
    """

    def __init__(self, inner: Any, grid: ArrayLike | None = None) -> None:
        self._inner = inner
        # The grid in the data's units when the release lives on a mapped one (mean curves).
        self._grid = None if grid is None else np.asarray(grid, dtype=np.float64).reshape(-1)

    @property
    def curve(self) -> NDArray[np.float64]:
        """The private curve on the grid."""
        return np.asarray(self._inner.curve())

    @property
    def grid(self) -> NDArray[np.float64]:
        """The grid points, in the data's units."""
        return self._grid if self._grid is not None else np.asarray(self._inner.grid())

    def _to_release_grid(self, points: NDArray[np.float64]) -> NDArray[np.float64]:
        """Points in the data's units on the release's (mapped) grid: ``(t - t_0) / (t_K - t_0)``."""
        if self._grid is None or self._grid.size < 2:
            return points
        lo, hi = float(self._grid[0]), float(self._grid[-1])
        return np.ascontiguousarray((points - lo) * (1.0 / (hi - lo)))

    @property
    def own_error(self) -> OwnError | None:
        """The release's own reading of its error (``metadata["own_error"]``: the privately tuned
        mean curves), or ``None`` for a mechanism that reports none (the plug-in ones, densities)."""
        return _own_error(self.metadata)

    @property
    def coefficients(self) -> NDArray[np.float64]:
        """The released curve's numbers: its coefficients on the basis (components a mechanism did
        not release, e.g. beyond the small-n·ε truncation of the tuned default, are 0; see
        ``metadata["components"]`` for how many were released) or Bernstein lattice values."""
        return np.asarray(self._inner.coefficients())

    @property
    def noise_sd(self) -> NDArray[np.float64] | None:
        """The pointwise standard deviation of the release's noise on the grid (public: a function
        of the noise scales and of choices made from the release), or ``None`` if the mechanism does
        not state it. It describes the noise only, not clipping or smoothing bias."""
        sd = self._inner.noise_sd()
        return None if sd is None else np.asarray(sd)

    def band(self, z: float = 2.0) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
        """``(curve - z sd, curve + z sd)`` on the grid (a pointwise noise band, clamped to the
        release's public range if it has one), or ``None``."""
        band = self._inner.band(float(z))
        return None if band is None else (np.asarray(band[0]), np.asarray(band[1]))

    def evaluate(self, points: ArrayLike) -> NDArray[np.float64]:
        """The private curve at any points of the domain ``[grid[0], grid[-1]]`` (post-processing: no
        budget). Points outside it are refused: the release says nothing there, and an extrapolated
        value would look like one it had released."""
        array = np.ascontiguousarray(np.asarray(points, dtype=np.float64).reshape(-1))
        grid = self.grid
        lo, hi = float(grid[0]), float(grid[-1])
        slack = 1e-12 * max(1.0, hi - lo)
        outside = ~((array >= lo - slack) & (array <= hi + slack))
        if np.any(outside):
            raise ValueError(
                f"{int(outside.sum())} point(s) outside the release's domain [{lo:g}, {hi:g}] "
                f"(e.g. {float(array[outside][0])!r}): the curve is released on the domain only"
            )
        array = np.clip(self._to_release_grid(array), *(np.asarray(self._inner.grid())[[0, -1]]))
        return np.asarray(self._inner.evaluate(array))

    def plot(self, ax: Any = None, x_label: str = "t", y_label: str = "value", **kwargs: Any) -> Any:
        """Draws the curve with matplotlib (installed separately: ``pip install fdp[plot]``), titled
        with the mechanism, ε and n, the axes labelled ``x_label`` and ``y_label`` (give the units),
        the legend outside the data."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("CurveRelease.plot needs matplotlib: pip install matplotlib") from e
        if ax is None:
            _, ax = plt.subplots()
        m = self.metadata
        name = _fdp.display_name(m["mechanism"])
        band = self.band(2.0)
        kwargs.setdefault("label", "private release" if band is None else "private release (±2 sd noise band)")
        (line,) = ax.plot(self.grid, self.curve, **kwargs)
        if band is not None:
            ax.fill_between(self.grid, band[0], band[1], color=line.get_color(), alpha=0.2, linewidth=0)
        title = f"{name}: ε = {m['guarantee']['epsilon']:g}"
        if m.get("n") is not None:
            title += f", n = {m['n']}"
        ax.set_title(title)
        ax.set_xlabel(x_label)
        ax.set_ylabel(y_label)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
        return ax

    def write_report(
        self,
        out: str,
        session: Any,
        title: str | None = None,
        notes: list[str] | None = None,
        x_label: str = "t",
        y_label: str = "value",
    ) -> str:
        """Writes ``release.json``, ``curves.svg`` (the release only; no record is drawn; titled
        with the mechanism, ε and n, axes labelled ``x_label`` and ``y_label`` — give the units) and
        ``report.md`` (stages, metadata with the privacy unit, the session's ledger, ``notes``)
        into ``out``: the files a curator publishes. They hold the release and public choices only;
        do not pass notes that describe the data (such as ``Curves.repairs``)."""
        title = title or f"Private release ({self.metadata['mechanism']})"
        return str(self._inner.write_report(out, title, session._inner, list(notes or []), str(x_label), str(y_label), self._grid))

    def __repr__(self) -> str:
        m = self.metadata
        return f"CurveRelease(mechanism={m['mechanism']!r}, k={self.grid.size}, epsilon={m['guarantee']['epsilon']}, unit={m.get('privacy_unit')!r})"

    def to_pandas(self) -> Any:
        """A pandas DataFrame with columns ``t`` and ``value`` (and ``lower``, ``upper``: the ±2 sd
        noise band, when the release states one); pandas is imported here (``pip install fdp[pandas]``)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("CurveRelease.to_pandas needs pandas: pip install pandas") from e
        columns: dict[str, Any] = {"t": self.grid, "value": self.curve}
        band = self.band(2.0)
        if band is not None:
            columns["lower"], columns["upper"] = band
        return pd.DataFrame(columns)

    def to_fdatagrid(self) -> Any:
        """The release as a scikit-fda ``FDataGrid`` (one sample on the release's grid); scikit-fda is
        imported here (``pip install fdp[fda]``)."""
        try:
            from skfda import FDataGrid
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("CurveRelease.to_fdatagrid needs scikit-fda: pip install scikit-fda") from e
        return FDataGrid(data_matrix=self.curve[np.newaxis, :], grid_points=self.grid)


class WeightedSampleRelease(_Release):
    """A released synthetic weighted dataset: public points, private (possibly negative) weights."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def points(self) -> NDArray[np.float64]:
        """The synthetic points, shape ``(M, D)``."""
        return np.asarray(self._inner.points()).reshape(-1, self._inner.dim())

    @property
    def weights(self) -> NDArray[np.float64]:
        """The released weights."""
        return np.asarray(self._inner.weights())

    def to_csv(self) -> str:
        """CSV with a header ``x1,...,xD,weight``."""
        return str(self._inner.to_csv())

    def plot(self, ax: Any = None, **kwargs: Any) -> Any:
        """Scatter of the first two coordinates (or of x against the weight in 1-D), sized by |weight|
        and coloured by the weight on a diverging scale with a colour bar, titled with ε and δ."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:  # pragma: no cover
            raise ImportError("WeightedSampleRelease.plot needs matplotlib: pip install matplotlib") from e
        if ax is None:
            _, ax = plt.subplots()
        p, w = self.points, self.weights
        y = p[:, 1] if p.shape[1] > 1 else w
        top = max(float(np.abs(w).max()), 1e-300)
        kwargs.setdefault("cmap", "coolwarm")
        points = ax.scatter(p[:, 0], y, s=8 + 40 * np.abs(w) / top, c=w, vmin=-top, vmax=top, **kwargs)
        ax.figure.colorbar(points, ax=ax, label="released weight (may be negative)")
        g = self.metadata["guarantee"]
        n = self.metadata.get("n")
        of = "" if n is None else f" of n = {n} records"
        ax.set_title(f"Private synthetic dataset ({len(w)} points{of}): ε = {g['epsilon']:g}, δ = {g['delta']:g}")
        ax.set_xlabel("x1")
        ax.set_ylabel("x2" if p.shape[1] > 1 else "weight")
        return ax

    def __repr__(self) -> str:
        g = self.metadata["guarantee"]
        return f"WeightedSampleRelease(points={self.weights.size}, dim={self.points.shape[1]}, epsilon={g['epsilon']}, delta={g['delta']})"


@dataclass(frozen=True)
class M2mEstimates:
    """M2M estimates read off a released sketch (post-processing)."""

    means: NDArray[np.float64]
    covariance: NDArray[np.float64]
    _inner: Any

    def cdf(self, coordinate: int, t: float) -> float:
        """The estimated marginal CDF of ``coordinate`` at ``t``."""
        return float(self._inner.cdf(coordinate, t))


class SketchRelease(_Release):
    """A released private sketch (add/remove-one DP: n stays private)."""

    def __init__(self, inner: Any, mechanism: Any) -> None:
        self._inner = inner
        self._mechanism = mechanism

    @property
    def sketch(self) -> NDArray[np.float64]:
        """The normalised sketch ``(Σ Φ(x_i) + ξ) / (n + ζ)``."""
        return np.asarray(self._inner.sketch())

    @property
    def noisy_count(self) -> float:
        """``n + ζ`` (at least 1)."""
        return float(self._inner.noisy_count())

    def plot(self, ax: Any = None, **kwargs: Any) -> Any:
        """The normalised sketch as bars, one per feature (for a histogram map: the private bin
        frequencies), titled with the map, ε and the noisy count."""
        try:
            import matplotlib.pyplot as plt
        except ImportError as e:  # pragma: no cover
            raise ImportError("SketchRelease.plot needs matplotlib: pip install matplotlib") from e
        if ax is None:
            _, ax = plt.subplots()
        values = self.sketch
        ax.bar(np.arange(values.size), values, **kwargs)
        m = self.metadata
        ax.set_title(f"Private sketch ({m['mechanism']}): ε = {m['guarantee']['epsilon']:g}, noisy n = {self.noisy_count:.0f}")
        ax.set_xlabel("feature")
        ax.set_ylabel("normalised sketch value")
        return ax

    def __repr__(self) -> str:
        m = self.metadata
        return f"SketchRelease(mechanism={m['mechanism']!r}, features={self.sketch.size}, epsilon={m['guarantee']['epsilon']}, noisy_count={self.noisy_count:.1f})"

    def m2m(self, prior_points: int = _fdp.M2M_PRIOR_POINTS, prior_seed: int = _fdp.M2M_PRIOR_SEED) -> M2mEstimates:
        """Means and covariance by M2M with implicit weights on public uniform prior points (the
        defaults are the command line's: the same sketch gives the same estimates at every door)."""
        points, seed = _whole("prior_points", prior_points, 1), _whole("prior_seed", prior_seed, 0)
        est = self._inner.m2m(self._mechanism, points, seed)
        d = int(np.sqrt(np.asarray(est.covariance()).size))
        return M2mEstimates(np.asarray(est.means()), np.asarray(est.covariance()).reshape(d, d), est)


@dataclass(frozen=True)
class FpcaResult:
    """The leading principal components of a private covariance (post-processing of the release):
    ``values`` (eigenvalues, the PSD projection's), ``functions`` (k x K, each on the grid, orthonormal
    in L² of the grid mapped onto [0, 1]), ``explained_variance`` (each one's share of the released
    covariance's trace — not of the data's variance: at a small n·ε the release keeps fewer
    directions and the leading share reads high; a component with eigenvalue 0 carries no released
    variance and its function is arbitrary),
    ``grid`` (the data's units), ``components`` (how many of the J released components the
    decomposition used: J, or fewer when the mechanism's ``truncation="risk"`` dropped trailing
    components whose signal did not pay for their noise)."""

    values: NDArray[np.float64]
    functions: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    grid: NDArray[np.float64]
    components: int

    def to_fdatagrid(self) -> Any:
        """The components as a scikit-fda ``FDataGrid`` (one sample per component on the grid in the
        data's units), the form of scikit-fda's ``FPCA().components_``; scikit-fda is imported here
        (``pip install "fdp[fda]"``)."""
        try:
            from skfda import FDataGrid
        except ImportError as e:
            raise ImportError("FpcaResult.to_fdatagrid needs scikit-fda: pip install scikit-fda") from e
        return FDataGrid(data_matrix=self.functions, grid_points=self.grid)


class CovarianceRelease(_Release):
    """A released covariance operator (J x J in a kernel's basis, with the mean it is centred at); its
    FPCA is post-processing: :meth:`fpca`."""

    def __init__(self, inner: Any, grid: ArrayLike) -> None:
        self._inner = inner
        self._grid = np.asarray(grid, dtype=np.float64).reshape(-1)

    @property
    def grid(self) -> NDArray[np.float64]:
        """The grid points, in the data's units."""
        return self._grid

    @property
    def mean(self) -> NDArray[np.float64]:
        """The private mean curve the covariance is centred at (released with it)."""
        return np.asarray(self._inner.mean_curve())

    def fpca(self, k: int = 3) -> FpcaResult:
        """The top ``k`` principal components (1 <= k <= J, the number of released basis
        components): costs no privacy."""
        k = _whole("k", k, 1)
        if k > self._inner.components():
            raise ValueError(f"k = {k}: the covariance was released in J = {self._inner.components()} basis components, so at most {self._inner.components()} principal components")
        values, functions, explained, components = self._inner.fpca(k)
        return FpcaResult(np.asarray(values), np.asarray(functions), np.asarray(explained), self._grid, int(components))

    def write_report(self, out: str, session: Any, k: int = 3, title: str | None = None, x_label: str = "t", notes: Sequence[str] = ()) -> str:
        """Writes ``release.json``, ``fpca.svg`` (the leading ``k`` components in the data's units) and
        ``report.md`` into ``out``; returns the report's path."""
        e, d = self.metadata["guarantee"]["epsilon"], self.metadata["guarantee"]["delta"]
        heading = title or f"Private principal components, ε = {e:g}" + (f", δ = {d:g}" if d else "")
        return str(self._inner.write_report(str(out), heading, _whole("k", k, 1), session._inner, list(notes), x_label, "principal component", self._grid))

    def __repr__(self) -> str:
        e = self.metadata["guarantee"]["epsilon"]
        return f"CovarianceRelease(components={self._inner.components()}, epsilon={e:g}, grid=[{self._grid[0]:g}, {self._grid[-1]:g}])"


class CoefficientsRelease(_Release):
    """A released coefficient vector: Algorithm 2's private mean random-feature vector."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def values(self) -> NDArray[np.float64]:
        """The released coefficients."""
        return np.asarray(self._inner.values())

    def __repr__(self) -> str:
        e, d = self.metadata["guarantee"]["epsilon"], self.metadata["guarantee"]["delta"]
        return f"CoefficientsRelease(size={self.values.size}, epsilon={e:g}, delta={d:g})"


def _wrap(inner: Any, mechanism: Any) -> _Release:
    """The Python release of a Rust one, shown on the mechanism's grid in the data's units."""
    if isinstance(inner, _fdp.CurveRelease):
        return CurveRelease(inner, mechanism._grid)
    if isinstance(inner, _fdp.CovarianceRelease):
        return CovarianceRelease(inner, mechanism._grid)
    if isinstance(inner, _fdp.WeightedRelease):
        return WeightedSampleRelease(inner)
    if isinstance(inner, _fdp.CoefficientsRelease):
        return CoefficientsRelease(inner)
    return SketchRelease(inner, mechanism._inner)
