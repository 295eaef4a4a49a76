"""Mechanisms, built from public choices before any data are read.

Every builder here asks for **public** parameters only (kernel, clipping bound, domain, centre):
fix them before looking at the data. ``build`` reads the data's public shape (n, the grid) and
returns a :class:`Mechanism`; ``Session.release`` spends its budget. Each mechanism is the Rust one
(``fdp::front``): the same calibration, the same exact lattice noise.
"""

from __future__ import annotations

import json
import warnings

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import _fdp
from .data import Curves, as_points, record_values, user_stacklevel
from .releases import Accuracy, _whole

__all__ = ["Mechanism", "MeanCurve", "Density", "SyntheticDataset", "Sketch", "SummaryState", "registered"]

MeanMethod = Literal["iclp_rkhs", "iclp_l1", "iid_laplace", "gaussian_process", "bernstein"]


def _default(mechanism: str, param: str) -> Any:
    """The Rust registry's default of ``param`` for ``mechanism`` (a JSON list as a tuple). The
    classes below show it in their signatures but do not own it: defaults live in the registry."""
    value = _DEFAULTS[mechanism][param]
    return tuple(value) if isinstance(value, list) else value


_DEFAULTS = {e["mechanism"]: {p["name"]: p["default"] for p in e["params"]} for e in json.loads(_fdp.registered())}


class Mechanism:
    """A built mechanism: what it guarantees, how it is charged, and how accurate it will be.

    Every mechanism is one of the Rust registry's (``fdp::registry``): built from a spec (a
    registered name and its parameters, see :func:`registered`) for the public frame (n, the grid,
    the privacy unit). The classes below (:class:`MeanCurve`, :class:`Density`, ...) write the spec
    for you; :meth:`from_spec` reaches any registered mechanism by name. Release it with
    :meth:`fdp.Session.release`.
    """

    def __init__(self, inner: Any, shape: tuple[int, int], grid: NDArray[np.float64] | None) -> None:
        self._inner = inner
        self._shape = shape  # (n, grid points or point dimension); n = -1 where n is private (sketches)
        self._grid = grid  # the public grid in the data's units (curve mechanisms)

    @classmethod
    def from_spec(
        cls, mechanism: str, n: int, *, grid: ArrayLike | None = None, id: str | None = None, **params: Any
    ) -> "Mechanism":
        """The registered ``mechanism`` for ``n`` records (public) with ``params`` (names and defaults:
        :func:`registered`; ``epsilon`` is required). Curve mechanisms need the public ``grid`` (in
        the data's units); ``id`` protects persons named by that variable.

        >>> import fdp
        >>> m = fdp.Mechanism.from_spec("kme_exponential", 100, epsilon=1.0, dim=2)
        >>> m.name, m.guarantee
        ('kme_exponential', (1.0, 0.0))
        """
        points = None if grid is None else np.ascontiguousarray(np.asarray(grid, dtype=np.float64).reshape(-1))
        centre = params.get("centre")
        kme = mechanism.strip().lower().replace("-", "_") == "kme"  # the registry reads names so
        dim = params.get("dim") or (np.atleast_1d(np.asarray(centre)).size if kme and centre is not None else 1)
        # The registry checks dim (a whole number) before the width is used.
        return _build(mechanism, params, n, points, id, points.size if points is not None else dim)

    def __reduce__(self) -> tuple[Any, ...]:
        # A mechanism is rebuilt from its public spec and frame (e.g. on a Spark executor): same bits.
        return (_rebuild, (self._inner.spec(), self._shape, self._grid, self.person_id))

    @property
    def spec(self) -> dict[str, Any]:
        """The spec it was built from: ``{"mechanism": NAME, "params": {...}}`` (JSON-ready)."""
        return dict(json.loads(self._inner.spec()))

    @property
    def _kind(self) -> str:
        return str(self._inner.registered_name())

    def empty_state(self) -> SummaryState:
        """The state of no records (what an empty partition contributes)."""
        kind = self._inner.input()
        if kind == "curves":
            assert self._grid is not None
            return SummaryState(self._inner.part_state_curves(np.empty((0, self._grid.size)), self._grid, self.person_id))
        if kind == "sparse_curves":
            empty = (np.empty(0, dtype=np.int64), np.empty(0), np.empty(0), 0, self.person_id)
            return SummaryState(self._inner.part_state_sparse(*empty))
        return SummaryState(self._inner.part_state_points(np.empty((0, self._shape[1]))))

    def summarize_part(self, data: Any) -> SummaryState:
        """The exact summary state of one part of the data (a partition, a file, a chunk).

        States of the parts merge (``a.merge(b)``) into the state of the whole, bit for bit whatever
        the partitioning; :meth:`fdp.Session.release_state` releases it. Records are clipped (or
        replaced by the public default) before they enter a state. Densities and sketches take
        points (as do synthetic datasets), mean curves take :class:`fdp.Curves` on the mechanism's
        grid (any number of curves) and of its privacy unit: a mechanism built per person takes
        curves grouped by that id (``Curves(..., ids=...)``; every row of a person in one part) and
        refuses ungrouped rows, which would each count as a person.
        """
        kind = self._inner.input()
        if kind == "curves":
            if not isinstance(data, Curves):
                raise TypeError(f"a mean-curve or covariance state is built from fdp.Curves, got {type(data).__name__}")
            if data.k != self._shape[1]:
                raise ValueError(f"the mechanism was built for curves on {self._shape[1]} points, got {data.k}")
            _check_grid(self, data)
            # Rust refuses curves of another privacy unit (e.g. ungrouped rows for a per-person mechanism).
            return SummaryState(self._inner.part_state_curves(data.values, data.grid, data.person_id))
        if kind == "sparse_curves":
            return SummaryState(self._inner.part_state_sparse(*_sparse_table(self, data, whole=False)))
        points = as_points(data.values if isinstance(data, Curves) else data, self._shape[1])
        return SummaryState(self._inner.part_state_points(points))

    @property
    def name(self) -> str:
        """The mechanism's name (``tuned_iclp_rkhs``, ``iclp_kde``, ``balog_alg1``, ...)."""
        return str(self._inner.name())

    @property
    def person_id(self) -> str | None:
        """The privacy unit: ``None`` (one record) or the id variable naming the persons."""
        unit = self._inner.person_id()
        return None if unit is None else str(unit)

    @property
    def guarantee(self) -> tuple[float, float]:
        """``(ε, δ)`` of one release (every stage included)."""
        e, d = self._inner.guarantee()
        return float(e), float(d)

    @property
    def stages(self) -> list[tuple[str, float, float]]:
        """``[(stage, ε, δ), ...]``: the parts charged one after another (one ledger entry each)."""
        return [(str(n), float(e), float(d)) for n, e, d in self._inner.stages()]

    def preview(self) -> Accuracy:
        """The accuracy preview, computed from public quantities only: no budget is spent.

        For a privately tuned mean it is the noise at the public ceiling of the bound; the private
        bound chosen below it only lowers it.
        """
        e, sd, upper_bound = self._inner.accuracy()
        return Accuracy(float(e), None if sd is None else float(sd), bool(upper_bound))

    def __repr__(self) -> str:
        e, d = self.guarantee
        return f"Mechanism({self.name!r}, epsilon={e}, delta={d})"


def registered() -> list[dict[str, Any]]:
    """Every mechanism of the Rust registry: its name, what it releases, the data it reads, its
    parameters with their defaults, and an example spec (reach one with :meth:`Mechanism.from_spec`).

    >>> import fdp
    >>> [m["mechanism"] for m in fdp.registered()][:3]
    ['mean', 'sparse_mean', 'fpca']
    """
    return list(json.loads(_fdp.registered()))


def _build(name: str, params: dict[str, Any], n: int, grid: NDArray[np.float64] | None, id: str | None, width: Any) -> Mechanism:
    """The registered mechanism ``name`` with ``params`` (``None`` values: the registry's default),
    passed as given: the registry reads and checks them (a count of 2.9 is refused, not truncated)."""
    # n is public and counts records: a whole number (1.5 is not silently 1), at most 2^53 (Rust's cap).
    _whole("n (the public number of records)", n, 1, 2**53)
    given = {k: _plain(v) for k, v in params.items() if v is not None}
    inner = _fdp.build(json.dumps({"mechanism": name, "params": given}), int(n), grid, id)
    for message in inner.warnings():
        warnings.warn(message, stacklevel=user_stacklevel())
    shown = grid if grid is not None else inner.display_grid()
    # Under add/remove-one neighbours n is private: any number of records (-1).
    return Mechanism(inner, (-1 if inner.add_remove() else int(n), int(width)), None if shown is None else np.asarray(shown))


def _plain(value: Any) -> Any:
    """A parameter as JSON takes it (numpy scalars and arrays, tuples; a non-finite number as the
    text ``"nan"``/``"inf"``/``"-inf"``, which the registry reads back and checks like any number)."""
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return value


@dataclass(frozen=True)
class MeanCurve:
    """A private mean curve: a mechanism, a kernel and a clipping bound in the mechanism's norm.

    ``tuning="private"`` (default) builds the privately tuned pipeline: ``bound`` is the public
    ceiling; a private bound below it (a noisy geometric mean of the records' norms) and the
    regularisation are chosen from the data **inside the same ε**, one ledger entry per stage. For
    ICLP-RKHS the release is ``X̄_k + (2τ̂/(n ε_r)) L_k`` on the clipped mean coefficients (exact
    discrete Laplace on a power-of-two lattice), then smoothed by ``λ_k^η/(λ_k^η + ψ)`` with ψ chosen
    by Stein's unbiased risk estimate on the release (post-processing). Replacing one record moves
    the clipped mean by at most ``2τ̂/n`` in l1, so the release is ε-DP by the Laplace mechanism and
    sequential composition (docs/DESIGN.md section 12). ``tuning="plug_in"`` uses the bound as given
    and the plug-in rule, or the ``psi`` (ICLP-RKHS, ICLP-l1, GP), ``components`` (IID Laplace) or
    ``degree`` (Bernstein) you give; each is refused (``ValueError``) under private tuning and for a
    method that does not use it, never silently ignored.

    Parameters
    ----------
    kernel:
        ``"SHAPE:RHO"``: ``exponential``, ``matern32``, ``matern52`` or ``gaussian``, with the
        length-scale as a fraction of the domain: the grid is mapped onto ``[0, 1]`` (its first
        point to 0, its last to 1) before the kernel meets it, as the command line does, so the same
        data and spec give the same release at every door.
    bound:
        ``"NORM:VALUE"``: ``l1`` (coefficient l1, ICLP-RKHS), ``l2`` (ICLP-l1, IID Laplace, GP) or
        ``sup`` (Bernstein). Under private tuning it is a ceiling. ``None`` (default): the ceiling
        follows from ``range``; give one of the two (every door refuses neither). A ``(lo, hi)`` pair is
        read as ``range``.
    mechanism:
        ``iclp_rkhs``, ``iclp_l1``, ``iid_laplace``, ``gaussian_process`` or ``bernstein``.
    centre:
        A public constant the curves are centred at before clipping (added back). With a ``range``
        and no centre: the middle of the range.
    range:
        **The public range** ``(lo, hi)`` of the values, from what is measured (FA in ``(0, 1)``,
        heights in ``(40, 210)`` cm), never from the data: every release is clamped to it
        (post-processing: the L2 projection onto a convex set holding the mean, so it cannot add
        error), the centre defaults to its middle and, without a ``bound``, the ceiling in the
        mechanism's norm follows from it (``R``, ``R·√|T|`` or ``R·min(Σ_k Σ_i |w_i φ_k(t_i)|,
        √(J·|T|))`` in the sup, L2 and coefficient-l1 norms, ``R`` the largest distance from the
        centre to an end, ``|T|`` the grid's total weight); the default ICLP-RKHS then searches
        its private bound below the same ceiling of the components it keeps (also below a given
        ``bound`` when that ceiling is lower: every in-range curve is within it).
        Private tuning only.
    delta:
        δ of the Gaussian process.

    Examples
    --------
    >>> import numpy as np, fdp
    >>> t = np.linspace(0, 1, 50)
    >>> curves = fdp.Curves(np.sin(6 * t) + np.random.default_rng(1).normal(0, 0.2, (300, 50)), t)
    >>> session = fdp.Session(epsilon=1.0)
    >>> mean = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:5").build(curves, epsilon=1.0)
    >>> release = session.release(mean, curves)
    >>> release.curve.shape
    (50,)
    """

    kernel: str = _default("mean", "kernel")
    bound: str | tuple[float, float] | None = None
    mechanism: MeanMethod = _default("mean", "method")
    tuning: Literal["private", "plug_in"] = _default("mean", "tuning")
    centre: float | None = None
    range: tuple[float, float] | None = None
    delta: float | None = None
    psi: float | None = None
    components: int | None = None
    degree: int | None = None

    def build(self, curves: Curves, epsilon: float) -> Mechanism:
        """The mechanism for ``curves``' grid, n and privacy unit at a total ``epsilon`` (the values
        are not read). For person-level curves (``ids=``) n is the number of persons and every
        release records the unit in its metadata (``privacy_unit``)."""
        if not isinstance(curves, Curves):
            raise TypeError(f"curves must be fdp.Curves, got {type(curves).__name__}")
        return self.build_for(curves.grid, curves.n, epsilon, curves.person_id)

    def build_for(self, grid: ArrayLike, n: int, epsilon: float, id: str | None = None) -> Mechanism:
        """The mechanism for ``n`` records (public) on ``grid`` at a total ``epsilon``: for data that
        are not in memory (e.g. a Spark DataFrame; see :mod:`fdp.spark`). ``id``: the records are
        persons named by this id variable (one row per person, e.g. each person's mean curve), and
        n is the number of persons; ``None``: one record per curve."""
        points = np.ascontiguousarray(np.asarray(grid, dtype=np.float64).reshape(-1))
        bound, value_range = _bound_and_range(self.bound, self.range)
        params = dict(
            epsilon=float(epsilon), method=self.mechanism, kernel=self.kernel, bound=bound, range=value_range,
            centre=self.centre, tuning=self.tuning, delta=self.delta, psi=self.psi, components=self.components,
            degree=self.degree,
        )
        return _build("mean", params, n, points, id, points.size)


@dataclass(frozen=True)
class Fpca:
    """The private covariance operator of curves and its principal components (FPCA).

    Records are centred at ``centre`` (default: the middle of ``range``), projected on the
    ``components`` (J) leading eigenfunctions of ``kernel``'s basis and clipped in L2; the mean and
    second moments are released with Laplace noise (pure ε) or, with ``delta``, Gaussian noise, after
    a private clipping bound (a noisy geometric mean of the records' norms) **inside the same ε**
    (two ledger entries). The covariance ``C = S − m mᵀ`` and its eigenfunctions are
    post-processing (docs/DESIGN.md sections 17 and 18). One record moves the summary by at most
    ``(√J + 1)² τ²/n`` in l1 (Laplace) or ``3τ²/(√2 n)`` in l2 (Gaussian).

    Examples
    --------
    >>> import numpy as np, fdp
    >>> t = np.linspace(0, 1, 40)
    >>> rng = np.random.default_rng(2)
    >>> scores = rng.normal(0, 1, (600, 2)) * [0.2, 0.08]
    >>> curves = fdp.Curves(0.5 + scores[:, :1] * np.sin(np.pi * t) + scores[:, 1:] * np.cos(np.pi * t), t)
    >>> release = fdp.Session(1.0).release(fdp.Fpca(range=(0, 1), components=4).build(curves, 1.0), curves)
    >>> result = release.fpca(2)
    >>> result.functions.shape, bool(result.explained_variance.sum() <= 1.0 + 1e-9)
    ((2, 40), True)
    """

    range: tuple[float, float]
    components: int = _default("fpca", "components")
    truncation: Literal["risk", "fixed"] = _default("fpca", "truncation")
    kernel: str = _default("fpca", "kernel")
    centre: float | None = None
    delta: float | None = None

    def build(self, curves: Curves, epsilon: float) -> Mechanism:
        """The mechanism for ``curves``' grid, n and privacy unit at a total ``epsilon``."""
        if not isinstance(curves, Curves):
            raise TypeError(f"curves must be fdp.Curves, got {type(curves).__name__}")
        return self.build_for(curves.grid, curves.n, epsilon, curves.person_id)

    def build_for(self, grid: ArrayLike, n: int, epsilon: float, id: str | None = None) -> Mechanism:
        """The mechanism for ``n`` records (public) on ``grid`` at a total ``epsilon``."""
        points = np.ascontiguousarray(np.asarray(grid, dtype=np.float64).reshape(-1))
        if self.range is None or isinstance(self.range, (str, bytes)) or not hasattr(self.range, "__len__") or len(self.range) != 2:
            raise TypeError(f"range must be a (lo, hi) pair, got {self.range!r}")
        params = dict(
            epsilon=float(epsilon), range=(float(self.range[0]), float(self.range[1])), components=self.components,
            truncation=self.truncation, kernel=self.kernel, centre=self.centre, delta=self.delta,
        )
        return _build("fpca", params, n, points, id, points.size)


@dataclass(frozen=True)
class Density:
    """A private density of points in a public interval ``domain = (lo, hi)``.

    ``iclp`` is Lin & Reimherr's Theorem 14: the KDE's coefficients ``λ_k^η (1/n) Σ_i φ_k(x_i)`` get
    ICLP noise calibrated to the exact largest move of one point between grid points, so the
    release is pure ε-DP; ``gaussian_process`` is Hall et al.'s (ε, δ) KDE; ``iid_laplace`` and
    ``bernstein`` are the baselines. Points are snapped to the grid (outside: the nearest end; not a
    number: the centre). ``bandwidth=None`` takes the public ``0.15 (hi - lo) n^{-1/5}``. ``eta``
    is used by ``iclp`` and ``gaussian_process`` only (``None``: the registry's 1.25), ``components``
    by ``iid_laplace`` only and ``degree`` by ``bernstein`` only: given to another method, each is
    refused (``ValueError``), never silently ignored. The domain defaults to ``(0, 1)``: state
    yours (points outside it are moved to its ends, and counted in a local warning).

    The release is the noisy estimate itself: it can dip below 0 where the density is low and need
    not integrate to exactly 1 on the domain. For a proper density, post-process it (free): e.g.
    ``f = np.maximum(release.curve, 0)`` divided by its integral over ``release.grid``.
    """

    domain: tuple[float, float] = _default("kde", "domain")
    mechanism: Literal["iclp", "gaussian_process", "iid_laplace", "bernstein"] = _default("kde", "method")
    kernel: Literal["gaussian", "exponential"] = _default("kde", "kernel")
    bandwidth: float | None = None
    grid_points: int = _default("kde", "grid_points")
    eta: float | None = None
    delta: float | None = None
    components: int | None = None
    degree: int | None = None

    def build(self, n: int, epsilon: float) -> Mechanism:
        """The mechanism for ``n`` points (public) at ``epsilon``."""
        lo, hi = (float(v) for v in self.domain)
        params = dict(
            epsilon=float(epsilon), method=self.mechanism, domain=(lo, hi), kernel=self.kernel, bandwidth=self.bandwidth,
            grid_points=self.grid_points, eta=self.eta, delta=self.delta, components=self.components,
            degree=self.degree,
        )
        return _build("kde", params, n, None, None, 1)


@dataclass(frozen=True)
class SyntheticDataset:
    """Balog et al.'s Algorithm 1: a private synthetic weighted dataset of points in ``R^D``.

    ``synthetic_points`` public points are drawn from ``N(centre, scale² I)`` with a public seed;
    the empirical kernel mean embedding (Gaussian kernel, length-scale ``rho``) is projected onto
    their span and its coordinates released by the Gaussian mechanism ((ε, δ)-DP; one record moves
    the embedding by at most ``√2/n`` in the RKHS: ``‖k(x,·) − k(x',·)‖² = 2 − 2k(x, x') ≤ 2`` for a
    Gaussian kernel, whose values lie in [0, 1]).
    """

    centre: Sequence[float]
    scale: float
    rho: float = _default("kme", "rho")
    synthetic_points: int = _default("kme", "synthetic_points")
    points_seed: int = _default("kme", "points_seed")

    def build(self, n: int, epsilon: float, delta: float) -> Mechanism:
        """The mechanism for ``n`` records (public)."""
        params = dict(
            epsilon=float(epsilon), delta=float(delta), centre=[float(c) for c in self.centre], scale=self.scale,
            rho=self.rho, synthetic_points=self.synthetic_points, points_seed=self.points_seed,
        )
        return _build("kme", params, n, None, None, len(self.centre))


@dataclass(frozen=True)
class Sketch:
    """A private sketch of points in ``[0, 1]^D`` (add/remove-one ε-DP; n stays private).

    ``hist`` (marginal histograms of ``size`` bins, ``||Φ||₁ = D``), ``rff`` (``size`` random
    Fourier frequency pairs of bandwidth ``width``) or ``race`` (``size`` repetitions of a p-stable
    hash of width ``width`` into ``buckets`` buckets). Laplace noise on the feature sum (98% of ε)
    and on the count (2%); M2M estimates are post-processing (:meth:`SketchRelease.m2m`).
    ``width`` and ``map_seed`` are for ``rff`` and ``race`` only, ``buckets`` for ``race`` only
    (``None``: the registry's 0.3, 0, 16); given to a map that does not use them they are refused
    (``ValueError``), never silently ignored.
    """

    dim: int
    map: Literal["hist", "rff", "race"] = _default("sketch", "map")
    size: int = _default("sketch", "size")
    width: float | None = None
    buckets: int | None = None
    map_seed: int | None = None

    def build(self, epsilon: float) -> Mechanism:
        """The mechanism at ``epsilon``."""
        params = dict(
            epsilon=float(epsilon), dim=self.dim, map=self.map, size=self.size, width=self.width, buckets=self.buckets,
            map_seed=self.map_seed,
        )
        return _build("sketch", params, 1, None, None, self.dim)


def _rebuild(spec: str, shape: tuple[int, int], grid: NDArray[np.float64] | None, person_id: str | None) -> Mechanism:
    inner = _fdp.build(spec, max(int(shape[0]), 1), grid, person_id)
    return Mechanism(inner, shape, grid)


class SummaryState:
    """An exact partial summary (bytes): clipped per-record contributions summed as fixed-point
    integers, with the record count, the fingerprint of the mechanism that made it and a CRC-32.

    Built by :meth:`Mechanism.summarize_part`, merged with :meth:`merge` (exact, in any order),
    sent between processes as :meth:`to_bytes`, released by :meth:`fdp.Session.release_state`.
    """

    __slots__ = ("_bytes",)

    def __init__(self, data: bytes) -> None:
        _fdp.state_info(bytes(data))  # refuses truncated, corrupted or foreign bytes
        self._bytes = bytes(data)

    @classmethod
    def from_bytes(cls, data: bytes) -> "SummaryState":
        """A state from :meth:`to_bytes` (checked: magic word, version, length, CRC-32)."""
        return cls(data)

    def to_bytes(self) -> bytes:
        """The state's bytes."""
        return self._bytes

    @property
    def records(self) -> int:
        """How many records the state has summed."""
        return int(_fdp.state_info(self._bytes)[0])

    def merge(self, other: "SummaryState") -> "SummaryState":
        """The state of both parts (exact integer sums; states of different mechanisms are refused)."""
        return SummaryState(_fdp.merge_states(self._bytes, other._bytes))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SummaryState) and other._bytes == self._bytes

    def __hash__(self) -> int:
        return hash(self._bytes)

    def __repr__(self) -> str:
        return f"SummaryState(records={self.records}, bytes={len(self._bytes)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (SummaryState, (self._bytes,))


def _bound_and_range(
    bound: object, value_range: object
) -> tuple[str | None, tuple[float, float] | None]:
    """The bound text and the public range a :class:`MeanCurve` passes on: a ``(lo, hi)`` pair given
    as the bound is the range; a bare number is refused (a bound needs its norm)."""
    if isinstance(bound, (tuple, list)):
        if value_range is not None:
            raise ValueError("bound=(lo, hi) is a public range; give it once, as range=(lo, hi)")
        bound, value_range = None, bound
    if isinstance(bound, (int, float)) and not isinstance(bound, bool):
        raise ValueError(
            f"bound={bound!r} has no norm: give 'NORM:VALUE' (l1 for iclp_rkhs, l2 for iclp_l1, "
            f"iid_laplace and gaussian_process, sup for bernstein), e.g. 'l1:{bound}', or the values' "
            "public range as range=(lo, hi)"
        )
    if bound is not None and not isinstance(bound, str):
        raise ValueError(f"bound must be 'NORM:VALUE' or a (lo, hi) range, got {type(bound).__name__}")
    pair: tuple[float, float] | None = None
    if value_range is not None:
        try:
            lo, hi = (float(v) for v in value_range)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise ValueError(f"range must be a pair (lo, hi) of numbers, got {value_range!r}") from None
        pair = (lo, hi)
    return bound, pair


def _check_grid(mechanism: Mechanism, data: Curves) -> None:
    """Curves must be on the grid the mean mechanism was built for, in the data's units (Rust sees
    both mapped onto [0, 1], where two grids of one shape on different intervals would agree)."""
    built = mechanism._grid
    assert built is not None
    if not np.array_equal(np.asarray(built, dtype=np.float64), data.grid):
        raise ValueError(
            f"the curves are on another grid ([{data.grid[0]:g}, {data.grid[-1]:g}]) than the mechanism was built for "
            f"([{built[0]:g}, {built[-1]:g}]): build it from these curves"
        )


def _warn_outside(mechanism: Mechanism, values: Any) -> None:
    """A local warning (never part of a release) counting the records with a finite value outside
    the public interval the mechanism was told the values lie in: a mean's ``range``, a density's
    ``domain``, a sketch's ``[0, 1]``. The count describes the private data: it is for the curator
    (the command line writes it to ``local-log.txt``)."""
    kind, params = mechanism._kind, mechanism.spec["params"]
    if "range" in params:
        interval = params["range"]
        what = "public range"
        fate = "each is clipped at the mechanism's bound" + (", and the release clamped to the range" if kind == "mean" else "")
    elif kind == "kde":
        interval = params.get("domain", (0.0, 1.0))
        what, fate = "density's domain", "moved to its nearest end"
    elif kind == "sketch":
        interval, what, fate = (0.0, 1.0), "sketch's domain", "a histogram puts them in its end bins; M2M estimates assume [0, 1]^D"
    else:
        return
    lo, hi = interval
    rows = record_values(values).reshape(len(values), -1) if len(values) else np.empty((0, 1))
    with np.errstate(invalid="ignore"):
        count = int(np.count_nonzero(np.any(np.isfinite(rows) & ((rows < lo) | (rows > hi)), axis=1)))
    if count:
        warnings.warn(
            f"{count} of {rows.shape[0]} records have values outside the {what} [{lo:g}, {hi:g}] ({fate}): check the "
            "interval and the data's units. LOCAL INFORMATION: this count describes the private data; do not publish it.",
            stacklevel=user_stacklevel(),
        )


def _sparse_table(mechanism: Mechanism, data: Any, whole: bool) -> tuple[Any, Any, Any, int, str | None]:
    """``(codes, t, y, n, person_id)`` of :class:`fdp.SparseCurves` for a sparse-mean mechanism,
    checked against its n (``whole``: all the data, not one part) and domain (Rust checks the
    privacy unit)."""
    from .sparse import SparseCurves

    if not isinstance(data, SparseCurves):
        raise TypeError(f"a sparse-curve mechanism takes fdp.SparseCurves, got {type(data).__name__}")
    if whole and data.n != mechanism._shape[0]:
        raise ValueError(f"the mechanism was built for n = {mechanism._shape[0]} records, got {data.n}")
    grid = mechanism._grid
    assert grid is not None
    if (float(grid[0]), float(grid[-1])) != data.domain:
        raise ValueError(f"the mechanism's grid spans [{grid[0]:g}, {grid[-1]:g}] but the curves' domain is [{data.domain[0]:g}, {data.domain[1]:g}]")
    return data.codes, data.t, data.y, data.n, data.person_id


def _prepare(mechanism: Mechanism, data: Any) -> Any:
    """The data as the mechanism's Rust release function takes them, checked against its shape (and
    a local warning when values lie outside the mechanism's public interval)."""
    kind = mechanism._inner.input()
    if kind == "sparse_curves":
        return _sparse_table(mechanism, data, whole=True)
    if kind == "curves":
        if not isinstance(data, Curves):
            raise TypeError(f"a mean-curve or covariance mechanism releases fdp.Curves, got {type(data).__name__}")
        if (data.n, data.k) != mechanism._shape:
            raise ValueError(f"the mechanism was built for {mechanism._shape[0]} curves on {mechanism._shape[1]} points, got {data.n} on {data.k}")
        _check_grid(mechanism, data)
        _warn_outside(mechanism, data.values)
        return data
    if kind == "labelled":
        if not (isinstance(data, tuple) and len(data) == 2):
            raise TypeError("a regression releases a pair (x, y) of inputs and responses")
        x = np.ascontiguousarray(record_values(data[0]).reshape(-1))
        y = np.ascontiguousarray(record_values(data[1]).reshape(-1))
        if x.size != mechanism._shape[0] or y.size != x.size:
            raise ValueError(f"the mechanism was built for n = {mechanism._shape[0]} inputs and responses, got {x.size} and {y.size}")
        return x, y
    points: ArrayLike = data.values if isinstance(data, Curves) else data
    array = as_points(points, mechanism._shape[1])
    if mechanism._shape[0] >= 0 and array.shape[0] != mechanism._shape[0]:
        raise ValueError(f"the mechanism was built for n = {mechanism._shape[0]} records, got {array.shape[0]}")
    _warn_outside(mechanism, array)
    return array
