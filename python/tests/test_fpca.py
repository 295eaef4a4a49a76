"""Private FPCA from Python (issue 25): the tuned covariance through the Session, the same bytes as
the command line at a fixed seed, merged states, and refusals before any charge."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import docblocks
import fdp


def curves(n: int = 500) -> fdp.Curves:
    t = np.linspace(0.0, 1.0, 30)
    rng = np.random.default_rng(5)
    scores = rng.normal(0.0, 1.0, (n, 2)) * [0.15, 0.05]
    values = 0.5 + scores[:, :1] * np.sin(np.pi * t) + scores[:, 1:] * np.cos(2 * np.pi * t) + rng.normal(0, 0.01, (n, 30))
    return fdp.Curves(values, t)


def test_fpca_release_charges_two_stages_and_recovers_the_leading_component(tmp_path: Path) -> None:
    data = curves()
    mechanism = fdp.Fpca(range=(0.0, 1.0), components=4).build(data, epsilon=2.0)
    assert [s for s, _, _ in mechanism.stages] == ["bound", "release"]
    assert mechanism.preview().upper_bound
    session = fdp.Session(2.0, seed=3)
    release = session.release(mechanism, data)
    assert isinstance(release, fdp.CovarianceRelease) and len(session.ledger) == 2
    assert repr(release).startswith("CovarianceRelease(components=4,")
    result = release.fpca(2)
    assert result.functions.shape == (2, 30) and np.all(result.explained_variance <= 1.0 + 1e-12)
    weights = np.full(30, 1.0 / 29.0)
    weights[[0, -1]] /= 2
    truth = np.sin(np.pi * np.linspace(0, 1, 30))
    truth /= np.sqrt(np.sum(weights * truth**2))
    assert abs(np.sum(weights * truth * result.functions[0])) > 0.9, "the leading component is the sine"
    report = Path(release.write_report(str(tmp_path / "fpca"), session, k=2))
    assert report.exists() and (tmp_path / "fpca" / "fpca.svg").exists()
    assert "principal components" in report.read_text()
    with pytest.raises(ValueError):
        release.fpca(5)  # k > J: post-processing refuses, nothing charged
    assert len(session.ledger) == 2


def test_the_components_are_truncated_by_their_estimated_risk_unless_fixed() -> None:
    data = curves()
    assert fdp.Fpca(range=(0.0, 1.0)).truncation == "risk" and fdp.Fpca(range=(0.0, 1.0)).components == 8
    risk = fdp.Session(0.5, seed=4).release(fdp.Fpca(range=(0.0, 1.0)).build(data, 0.5), data).fpca(2)
    fixed = fdp.Session(0.5, seed=4).release(fdp.Fpca(range=(0.0, 1.0), truncation="fixed").build(data, 0.5), data).fpca(2)
    # Two components carry the signal; at ε = 0.5 the noise of the other six does not pay for itself.
    assert 2 <= risk.components < 8 and fixed.components == 8
    assert risk.functions.shape == fixed.functions.shape == (2, 30)
    with pytest.raises(ValueError, match="truncation"):
        fdp.Fpca(range=(0.0, 1.0), truncation="sure").build(data, 1.0)  # type: ignore[arg-type]


def test_the_release_and_its_components_convert_to_scikit_fda() -> None:
    skfda = pytest.importorskip("skfda")
    data = curves()
    release = fdp.Session(2.0, seed=1).release(fdp.Fpca(range=(0.0, 1.0), components=4).build(data, 2.0), data)
    result = release.fpca(2)
    components = result.to_fdatagrid()
    assert isinstance(components, skfda.FDataGrid) and components.n_samples == 2
    np.testing.assert_array_equal(components.grid_points[0], data.grid)
    np.testing.assert_array_equal(components.data_matrix[..., 0], result.functions)
    # The components are orthonormal in L² of the grid mapped onto [0, 1]: scikit-fda's inner
    # product on the data's grid (here [0, 1] already) agrees.
    gram = skfda.misc.inner_product_matrix(components)
    np.testing.assert_allclose(gram, np.eye(2), atol=0.05)


def test_python_and_the_command_line_release_the_same_bytes(tmp_path: Path) -> None:
    cli = docblocks.cli()
    if cli is None:
        pytest.skip("the fdp command line is not built (cargo build -p fdp-cli) and FDP_CLI is not set")
    data = curves(300)
    header = ",".join(f"y_{float(t)!r}" for t in data.grid)
    rows = "\n".join(",".join(repr(float(v)) for v in row) for row in data.values)
    (tmp_path / "curves.csv").write_text(header + "\n" + rows + "\n")
    subprocess.run(
        [str(cli), "fpca", "--csv", str(tmp_path / "curves.csv"), "--columns", "y_", "--range", "0,1", "--components", "4",
         "--epsilon", "1", "--seed", "6", "--out", str(tmp_path / "cli"), "--quiet"],
        check=True,
    )
    from_cli = json.loads((tmp_path / "cli" / "release.json").read_text())
    mechanism = fdp.Fpca(range=(0.0, 1.0), components=4).build(data, epsilon=1.0)
    from_python = json.loads(fdp.Session(1.0, seed=6).release(mechanism, data).to_json())
    assert from_python["output"] == from_cli["output"]


def test_states_merge_and_misuse_is_refused() -> None:
    data = curves(400)
    mechanism = fdp.Fpca(range=(0.0, 1.0), components=3).build(data, epsilon=1.0)
    state = mechanism.empty_state()
    for rows in (slice(200, 400), slice(0, 200)):
        state = state.merge(mechanism.summarize_part(fdp.Curves(data.values[rows], data.grid)))
    whole = fdp.Session(1.0, seed=4).release(mechanism, data)
    merged = fdp.Session(1.0, seed=4).release_state(mechanism, state)
    assert np.array_equal(whole.fpca(2).functions, merged.fpca(2).functions)
    with pytest.raises(ValueError):
        fdp.Fpca(range=(1.0, 0.0)).build(data, 1.0)
    with pytest.raises(ValueError):
        fdp.Fpca(range=(0.0, 1.0), components=0).build(data, 1.0)
    with pytest.raises(ValueError, match="delta"):
        fdp.Fpca(range=(0.0, 1.0), delta=1.5).build(data, 1.0)
    with pytest.warns(UserWarning, match="outside the public range"):
        fdp.Session(1.0).release(fdp.Fpca(range=(0.0, 0.6), components=3).build(data, 1.0), data)
    gaussian = fdp.Fpca(range=(0.0, 1.0), delta=1e-6).build(data, 1.0)
    assert gaussian.guarantee == (1.0, 1e-6)
