"""fdp: differentially private functional data.

Release mean curves, densities, synthetic datasets and sketches under differential privacy, with
the Independent Component Laplace Process (pure ε-DP in the Mercer eigenbasis of a kernel) at the
core, private tuning inside the budget, and a ledger of every release. The numerical work is the
Rust library's (``fdp._fdp``); this package is a thin, typed layer over it.

>>> import numpy as np, fdp
>>> t = np.linspace(0, 1, 100)
>>> curves = fdp.Curves(np.random.default_rng(0).normal(np.sin(6 * t), 0.3, (500, 100)), t)
>>> session = fdp.Session(epsilon=1.0)
>>> mechanism = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:10").build(curves, epsilon=1.0)
>>> mechanism.preview().expected_sq_error > 0        # before any budget is spent
True
>>> release = session.release(mechanism, curves)     # charged to the ledger
>>> session.remaining
(0.0, 0.0)
"""

from ._fdp import BudgetExceededError
from .data import Curves, as_points
from .mechanisms import Density, Fpca, MeanCurve, Mechanism, Sketch, SummaryState, SyntheticDataset, registered
from .releases import Accuracy, CoefficientsRelease, CovarianceRelease, CurveRelease, FpcaResult, M2mEstimates, OwnError, SketchRelease, WeightedSampleRelease
from .session import Session
from .sparse import SparseCurves, SparseFpca, SparseMean

__all__ = [
    "Accuracy",
    "BudgetExceededError",
    "CoefficientsRelease",
    "CovarianceRelease",
    "CurveRelease",
    "Curves",
    "Density",
    "Fpca",
    "FpcaResult",
    "M2mEstimates",
    "MeanCurve",
    "Mechanism",
    "OwnError",
    "Session",
    "Sketch",
    "SketchRelease",
    "SparseCurves",
    "SparseFpca",
    "SparseMean",
    "SummaryState",
    "SyntheticDataset",
    "WeightedSampleRelease",
    "as_points",
    "registered",
]
