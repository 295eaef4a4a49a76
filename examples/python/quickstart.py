"""The Python quickstart: an ε-DP mean curve by the privately tuned ICLP-RKHS pipeline, with a report.

    python examples/python/quickstart.py [--seed N] [--out DIR]

Simulates 500 noisy curves on 100 points of [0, 1] (a smooth mean, a random level per curve and
Brownian-like wiggles), fixes the public ceiling of the clipping bound before
looking at the data, releases the mean at a total ε = 1 through a Session (a private bound, then the
release, with ψ chosen from the release by marginal likelihood), prints the accuracy preview and the error against the
truth, and writes reports/python_quickstart/{report.md, curves.svg, release.json, ledger.json}.
Without --seed the noise comes from the operating system's entropy.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import fdp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=None, help="reproducible noise (experiments only)")
    parser.add_argument("--out", default="reports/python_quickstart")
    args = parser.parse_args()

    # Data: 500 curves (the data's own seed, not the release's).
    n, k = 500, 100
    t = (np.arange(k) + 0.5) / k
    truth = 0.5 + 0.3 * np.sin(2 * np.pi * t) * np.exp(-t)
    rng = np.random.default_rng(20231)
    wiggle = np.cumsum(rng.normal(0.0, 0.05, (n, k)), axis=1) / np.sqrt(k) * 3
    curves = fdp.Curves(truth + rng.normal(0.0, 0.1, (n, 1)) + wiggle, t)

    # Public choices, fixed before the data are seen: kernel, the ceiling of the bound, the centre.
    mean = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:2", centre=0.5)
    session = fdp.Session(epsilon=1.0, seed=args.seed)
    mechanism = mean.build(curves, epsilon=1.0)
    preview = mechanism.preview()  # no budget spent
    plug_in = fdp.MeanCurve(kernel="matern32:0.1", bound="l1:2", centre=0.5, tuning="plug_in").build(curves, 1.0)
    release = session.release(mechanism, curves)

    sample_mean = curves.values.mean(axis=0)
    l2 = lambda f: float(np.sqrt(np.mean(f**2)))  # noqa: E731 - L2 norm on [0, 1]
    err_release, err_sample = l2(release.curve - truth), l2(sample_mean - truth)

    out = Path(args.out)
    notes = [
        f"{n} simulated curves on {k} midpoint-grid points of [0, 1]; bound ceiling l1:2 and centre 0.5 fixed before the data",
        f"accuracy preview at the ceiling (no budget): E||noise||^2 = {preview.expected_sq_error:.3e}; plug-in default {plug_in.preview().expected_sq_error:.3e}",
        f"||release - truth|| = {err_release:.4f} (the truth is the simulation's, public; the non-private sample mean's error describes the data and is printed locally, not published)",
        "noise: " + ("seeded (reproducible; not for real releases)" if args.seed is not None else "OS entropy"),
    ]
    report = release.write_report(str(out), session, title="Python quickstart: an ε-DP mean curve, privately tuned", notes=notes)
    session.save(out / "ledger.json")
    try:  # a matplotlib figure beside the SVG, when matplotlib is installed
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        ax = release.plot(label="private release (tuned)")
        ax.plot(t, truth, "--", label="truth")
        ax.legend()
        plt.savefig(out / "curves_matplotlib.png", dpi=100)
    except ImportError:
        pass
    meta = release.metadata
    print(
        f"python_quickstart mechanism={meta['mechanism']} epsilon=1 n={n} tau={meta['clipping']['value']:.4f} "
        f"psi={meta['regularisation']['psi']:.4e} l2_err_vs_truth={err_release:.4f} l2_err_nonprivate={err_sample:.4f} "
        f"seeded={args.seed is not None} report={report}"
    )


if __name__ == "__main__":
    main()
