"""The privacy session: the budget of one dataset, its randomness and its ledger."""

from __future__ import annotations

import warnings

import json
import os
from typing import Any

from . import _fdp
from .data import user_stacklevel
from .mechanisms import Mechanism, SummaryState, _prepare
from .releases import CovarianceRelease, CurveRelease, SketchRelease, WeightedSampleRelease, _Release, _whole, _wrap

__all__ = ["Session"]


class Session:
    """A privacy session over one dataset (OpenDP's and Tumult's context object).

    Every release goes through :meth:`release`, which checks the whole cost against the budget
    **before** the data are read, charges it (one ledger entry per stage) and releases. Releases on
    the same data compose sequentially: ``(Σ ε_i, Σ δ_i)``-DP in total, so the session refuses
    (``fdp.BudgetExceededError``) anything that would take the sums past ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon, delta:
        The total budget (``delta=None``: pure DP only).
    seed:
        Opt-in reproducible noise, recorded in every release and ledger entry. Experiments only:
        anyone who knows the seed can remove the noise. Without it the noise comes from the
        operating system's CSPRNG.
    neighbours:
        ``"replace_one"`` (n public; means, densities, KME) or ``"add_remove_one"`` (sketches).
    """

    def __init__(self, epsilon: float, delta: float | None = None, *, seed: int | None = None, neighbours: str = "replace_one") -> None:
        if neighbours not in ("replace_one", "add_remove_one"):
            raise ValueError(f"neighbours must be 'replace_one' or 'add_remove_one', got {neighbours!r}")
        seed = _checked_seed(seed)
        if delta is not None and 1e-3 < float(delta) < 1.0:
            warnings.warn(
                f"delta = {delta} is a large failure probability: an (ε, δ) release may expose a record outright "
                "with probability up to δ; δ is usually far below 1/n (e.g. 1e-6)",
                stacklevel=user_stacklevel(),
            )
        self._inner = _fdp.RustSession(float(epsilon), None if delta is None else float(delta), neighbours == "add_remove_one", seed)

    @classmethod
    def load(cls, path: str | os.PathLike[str], seed: int | None = None) -> "Session":
        """A session continued from the ledger file at ``path`` (its budget and charges).

        The ledger is a hash chain fixed to its budget at creation; it is verified and its totals
        are recomputed from its entries. An edited, truncated or reordered ledger, a raised budget
        or a lowered spend raises ``ValueError`` ("ledger refused: ...")."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        session = cls.__new__(cls)
        session._inner = _fdp.RustSession.from_json(text, _checked_seed(seed))
        return session

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the ledger (neighbour relation, budget, every charge, the hash chain) as JSON,
        atomically: a reader never sees half a ledger. Several processes releasing against one
        ledger file should go through the command line (which locks it) or Rust's ``LedgerFile``."""
        self._inner.save(os.fspath(path))

    @property
    def head(self) -> str:
        """The hash of the ledger's last link: record it where the ledger file cannot reach, and any
        later rewrite of the history stops matching it."""
        return str(self._inner.head())

    def to_json(self) -> str:
        """The ledger as JSON."""
        return str(self._inner.to_json())

    @property
    def spent(self) -> tuple[float, float]:
        """``(ε, δ)`` spent so far."""
        e, d = self._inner.spent()
        return float(e), float(d)

    @property
    def remaining(self) -> tuple[float, float]:
        """``(ε, δ)`` left."""
        e, d = self._inner.remaining()
        return float(e), float(d)

    @property
    def ledger(self) -> list[dict[str, Any]]:
        """Every charge so far: index, mechanism, ε, δ, what was released, the noise's provenance."""
        return list(json.loads(self.to_json())["entries"])

    def release(self, mechanism: Mechanism, data: Any) -> CurveRelease | CovarianceRelease | WeightedSampleRelease | SketchRelease:
        """Charges ``mechanism`` and releases it on ``data`` (``fdp.Curves`` for a mean curve,
        ``fdp.SparseCurves`` for a sparse mean, ``fdp.Curves`` for a covariance (``fdp.Fpca``), a pair
        ``(x, y)`` of inputs and responses for a regression (``erm``), an array of points otherwise). The interpreter lock is released while Rust computes."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"mechanism must be built by fdp (e.g. MeanCurve(...).build), got {type(mechanism).__name__}")
        prepared = _prepare(mechanism, data)
        kind, inner = mechanism._inner.input(), mechanism._inner
        if kind == "curves":
            out = self._inner.release_curves(inner, prepared.values, prepared.grid, prepared.person_id)
        elif kind == "sparse_curves":
            out = self._inner.release_sparse(inner, *prepared)
        elif kind == "labelled":
            out = self._inner.release_labelled(inner, *prepared)
        else:
            out = self._inner.release_points(inner, prepared)
        return _wrap(out, mechanism)  # type: ignore[return-value]

    def release_state(
        self, mechanism: Mechanism, state: SummaryState
    ) -> CurveRelease | CovarianceRelease | WeightedSampleRelease | SketchRelease:
        """Charges ``mechanism`` and releases it from a complete summary state (the merged states of
        every part of the data): the same release as :meth:`release` on all the data at the same
        seed. A state of another mechanism, or with another record count than the public n, is
        refused before anything is charged."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(f"mechanism must be built by fdp, got {type(mechanism).__name__}")
        if not isinstance(state, SummaryState):
            raise TypeError(f"state must be an fdp.SummaryState, got {type(state).__name__}")
        return _wrap(self._inner.release_state(mechanism._inner, state.to_bytes()), mechanism)  # type: ignore[return-value]

    def __repr__(self) -> str:
        (se, sd), (re_, rd) = self.spent, self.remaining
        return f"Session(spent=(ε={se:g}, δ={sd:g}), remaining=(ε={re_:g}, δ={rd:g}), ledger_entries={len(self.ledger)})"


def _checked_seed(seed: object) -> int | None:
    """A seed is None or an integer in [0, 2^64) (numpy integers included)."""
    if seed is None:
        return None
    return _whole("seed", seed, 0)
