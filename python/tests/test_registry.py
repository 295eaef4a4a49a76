"""The one registry (``fdp::registry``) at the Python door and the command line: every registered
mechanism is reachable by name from both, and at a fixed seed both give the same bytes."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fdp

import docblocks

K = 20
N = 60


def _values() -> np.ndarray:
    i = np.arange(N)[:, None]
    t = np.arange(K)[None, :] / (K - 1)
    return np.clip(0.5 + 0.3 * np.sin(6 * t + 0.1 * i) * (1 - 0.005 * i), 0, 1)


def _fixture(entry: dict[str, Any], tmp: Path) -> tuple[list[str], Any, dict[str, Any]]:
    """The CLI's data arguments, the Python data and the frame keywords for ``entry``'s input kind."""
    grid = np.array([10.0 * i / (K - 1) for i in range(K)])  # the CLI's --grid 0,10,K, point for point
    values = _values()
    if entry["input"] == "curves":
        csv = tmp / "curves.csv"
        header = ",".join(f"y_{t!r}" for t in grid.tolist())
        csv.write_text(header + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in values) + "\n")
        return ["--csv", str(csv), "--columns", "y_"], fdp.Curves(values, grid), dict(grid=grid)
    if entry["input"] == "sparse_curves":
        rows = [(f"r{i}", float(grid[j]), float(values[i, j])) for i in range(N) for j in sorted({(i * 7) % K, (i * 3 + 5) % K, (i * 11 + 2) % K})]
        csv = tmp / "long.csv"
        csv.write_text("id,t,y\n" + "\n".join(f"{i},{t!r},{y!r}" for i, t, y in rows) + "\n")
        ids, t, y = zip(*rows)
        curves = fdp.SparseCurves.from_long(np.array(ids), np.array(t), np.array(y), domain=(0.0, 10.0))
        return ["--csv", str(csv), "--long", "id,t,y", "--grid", f"0,10,{K}"], curves, dict(grid=grid, id="id")
    if entry["input"] == "labelled":
        x = (np.arange(N) * 7 % 23) / 23.0
        y = 0.8 * np.sin(6 * x)
        csv = tmp / "labelled.csv"
        csv.write_text("x0,y\n" + "\n".join(f"{a!r},{b!r}" for a, b in zip(x.tolist(), y.tolist())) + "\n")
        return ["--csv", str(csv), "--columns", "x", "--response", "y"], (x, y), {}
    params = entry["example"]
    dim = int(params.get("dim") or len(params.get("centre") or ()) or 1)
    points = ((np.arange(N)[:, None] * (np.arange(dim)[None, :] + 3)) % 17) / 17.0
    csv = tmp / "points.csv"
    csv.write_text(",".join(f"x{d}" for d in range(dim)) + "\n" + "\n".join(",".join(repr(float(v)) for v in row) for row in points) + "\n")
    return ["--csv", str(csv), "--columns", "x"], points, {}


def test_the_registry_lists_every_mechanism_with_its_parameters() -> None:
    names = [e["mechanism"] for e in fdp.registered()]
    for name in ["mean", "sparse_mean", "fpca", "sparse_fpca", "kde", "kme", "kme_features", "kme_exponential", "sketch", "erm"]:
        assert name in names
    for entry in fdp.registered():
        assert any(p["name"] == "epsilon" for p in entry["params"])
        assert entry["input"] in ("curves", "sparse_curves", "points", "labelled")


def test_from_spec_refuses_unknown_mechanisms_and_parameters() -> None:
    with pytest.raises(ValueError, match="not a registered mechanism"):
        fdp.Mechanism.from_spec("magic", 10, epsilon=1.0)
    with pytest.raises(ValueError, match="epsilom"):
        fdp.Mechanism.from_spec("kme_exponential", 10, epsilom=1.0, dim=2)
    with pytest.raises(ValueError, match="epsilon"):
        fdp.Mechanism.from_spec("kme_exponential", 10, epsilon=float("nan"), dim=2)


def test_every_registered_mechanism_gives_the_same_bytes_from_python_and_the_cli(tmp_path: Path) -> None:
    cli = docblocks.cli()
    if cli is None:
        pytest.skip("the fdp command line is not built (cargo build -p fdp-cli), and FDP_CLI is not set")
    for entry in fdp.registered():
        name, example = entry["mechanism"], dict(entry["example"])
        args, data, frame = _fixture(entry, tmp_path)
        epsilon, delta = float(example.pop("epsilon")), example.pop("delta", None)
        n = data.n if hasattr(data, "n") else len(data[0]) if isinstance(data, tuple) else len(data)
        mechanism = fdp.Mechanism.from_spec(name, n, epsilon=epsilon, delta=delta, **frame, **example)
        assert mechanism.spec["mechanism"] == name
        session = fdp.Session(10.0, delta=1e-3, seed=11, neighbours="add_remove_one" if name == "sketch" else "replace_one")
        python = json.loads(session.release(mechanism, data).to_json())["output"]
        assert session.spent == pytest.approx(mechanism.guarantee), name
        out = tmp_path / name
        command = [str(cli), "release", name, *args, "--epsilon", repr(epsilon), "--seed", "11", "--out", str(out), "--quiet",
                   "--budget-epsilon", "10", "--budget-delta", "1e-3"]
        command += ["--delta", repr(delta)] if delta is not None else []
        command += [f"--param={k}={json.dumps(v)}" for k, v in example.items()]
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, (name, done.stderr)
        rust = json.loads((out / "release.json").read_text(encoding="utf-8"))["output"]
        assert rust == python, name
        # Mechanisms with summary states: merged parts release the same bytes (the Spark path).
        if mechanism._inner.mergeable() and entry["input"] != "sparse_curves":
            half = n // 2
            parts = (data.values[:half], data.values[half:]) if isinstance(data, fdp.Curves) else (data[:half], data[half:])
            if isinstance(data, fdp.Curves):
                parts = tuple(fdp.Curves(p, data.grid) for p in parts)
            state = mechanism.summarize_part(parts[0]).merge(mechanism.summarize_part(parts[1]))
            again = fdp.Session(10.0, delta=1e-3, seed=11, neighbours="add_remove_one" if name == "sketch" else "replace_one")
            assert json.loads(again.release_state(mechanism, state).to_json())["output"] == python, name


def test_a_regression_on_ages_is_released_and_shown_in_years(tmp_path: Path) -> None:
    ages = 20 + 60 * ((np.arange(N) * 7) % 23) / 23.0
    y = np.sin((ages - 20) / 10)
    mechanism = fdp.Mechanism.from_spec("erm", N, epsilon=1.0, psi=0.1, domain=(20, 80))
    release = fdp.Session(1.0, seed=3).release(mechanism, (ages, y))
    assert 20 < release.grid[0] < release.grid[-1] < 80  # shown on the ages
    assert np.all(np.isfinite(release.evaluate(np.array([25.0, 50.0, 75.0]))))
    cli = docblocks.cli()
    if cli is None:
        return
    csv = tmp_path / "ages.csv"
    csv.write_text("x_age,y\n" + "\n".join(f"{a!r},{b!r}" for a, b in zip(ages.tolist(), y.tolist())) + "\n")
    out = tmp_path / "erm"
    subprocess.run([str(cli), "release", "erm", "--csv", str(csv), "--columns", "x_", "--response", "y", "--param", "psi=0.1",
                    "--param", "domain=[20,80]", "--epsilon", "1", "--seed", "3", "--out", str(out), "--quiet"], check=True)
    assert json.loads((out / "release.json").read_text())["output"] == json.loads(release.to_json())["output"]


def test_point_mechanisms_refuse_a_person_unit_and_sketches_take_any_count() -> None:
    with pytest.raises(ValueError, match="person"):
        fdp.Mechanism.from_spec("kde", 100, epsilon=1.0, id="pid")
    sketch = fdp.Mechanism.from_spec("sketch", 1, epsilon=1.0, dim=2)
    points = np.random.default_rng(0).uniform(0, 1, (257, 2))
    release = fdp.Session(1.0, seed=1, neighbours="add_remove_one").release(sketch, points)
    assert release.noisy_count > 0
    # A non-finite point goes to the density's public default (the grid point nearest the domain's
    # centre), at every door.
    kde = fdp.Mechanism.from_spec("kde", 3, epsilon=1.0, domain=(10, 20), grid_points=11)
    a = fdp.Session(1.0, seed=2).release(kde, np.array([np.nan, 15.0, 15.0]))
    b = fdp.Session(1.0, seed=2).release(kde, np.array([15.0, 15.0, 15.0]))
    np.testing.assert_array_equal(a.curve, b.curve)


def test_the_classes_defaults_are_the_registry_s() -> None:
    """The friendly classes write specs; the defaults they show are read from the registry at import
    (``_default``), so this checks that each field reads the parameter it writes."""
    import dataclasses

    defaults = {e["mechanism"]: {p["name"]: p["default"] for p in e["params"]} for e in fdp.registered()}
    pairs = [
        (fdp.MeanCurve, "mean", {"kernel": "kernel", "mechanism": "method", "tuning": "tuning"}),
        (fdp.Fpca, "fpca", {"components": "components", "kernel": "kernel"}),
        (fdp.Density, "kde", {"domain": "domain", "mechanism": "method", "kernel": "kernel", "grid_points": "grid_points"}),
        (fdp.SyntheticDataset, "kme", {"rho": "rho", "synthetic_points": "synthetic_points", "points_seed": "points_seed"}),
        (fdp.Sketch, "sketch", {"map": "map", "size": "size"}),
        (fdp.SparseMean, "sparse_mean", {"kernel": "kernel"}),
        (fdp.SparseFpca, "sparse_fpca", {"components": "components", "kernel": "kernel", "ridge": "ridge"}),
    ]
    for cls, name, fields in pairs:
        shown = {f.name: f.default for f in dataclasses.fields(cls)}
        for field, param in fields.items():
            value = shown[field]
            expected = defaults[name][param]
            assert (list(value) if isinstance(value, tuple) else value) == expected, (cls.__name__, field, value, expected)
    # A parameter that only some methods use shows None: the registry's default applies where it is
    # used, and a value given where it is not is refused rather than ignored.
    conditional = {e["mechanism"]: {p["name"] for p in e["params"] if "only_with" in p} for e in fdp.registered()}
    assert conditional["kde"] == {"eta"} and conditional["sketch"] == {"width", "buckets", "map_seed"}
    for cls, name in [(fdp.Density, "kde"), (fdp.Sketch, "sketch")]:
        shown = {f.name: f.default for f in dataclasses.fields(cls)}
        assert all(shown[p] is None for p in conditional[name]), (cls.__name__, shown)


def test_a_parameter_the_method_does_not_use_is_refused() -> None:
    """Silently ignoring a parameter would let a spec read as asking for what was not done."""
    with pytest.raises(ValueError, match="width does not apply with map = hist"):
        fdp.Sketch(dim=2, width=0.5).build(1.0)
    with pytest.raises(ValueError, match="eta does not apply with method = bernstein"):
        fdp.Density(mechanism="bernstein", eta=2.0).build(100, 1.0)
    with pytest.raises(ValueError, match="degree does not apply with method = iid_laplace"):
        fdp.Density(mechanism="iid_laplace", degree=5).build(100, 1.0)
    with pytest.raises(ValueError, match="components does not apply with method = iclp_rkhs"):
        fdp.MeanCurve(tuning="plug_in", bound="l1:1", components=3).build(fdp.Curves(np.zeros((5, 10)), np.linspace(0.0, 1.0, 10)), 1.0)
    # Where they are used they are read, and the unused defaults stay out of the spec as built.
    assert fdp.Sketch(dim=2, map="race", buckets=8).build(1.0).spec["params"]["buckets"] == 8
    assert "width" not in fdp.Sketch(dim=2).build(1.0).spec["params"]
    assert fdp.Density(eta=2.0).build(100, 1.0).spec["params"]["eta"] == 2.0


def test_door_traps_are_refused_with_a_value_error() -> None:
    """Counts are read, never truncated (``size=2.9`` became 2); an integral float is a count;
    the registry's names are read the same everywhere; post-processing arguments are checked."""
    with pytest.raises(ValueError, match="size"):
        fdp.Sketch(dim=2, size=10.9).build(1.0)
    assert fdp.Sketch(dim=2, size=np.float64(10.0)).build(1.0).spec["params"]["size"] == 10
    with pytest.raises(ValueError, match="components"):
        fdp.Fpca(range=(0, 1), components=3.5).build(fdp.Curves(np.zeros((20, 8)), np.linspace(0, 1, 8)), 1.0)
    # None takes the registry's default, as for every parameter.
    assert fdp.Density(grid_points=None).build(50, 1.0).spec["params"]["grid_points"] == 200
    kme = fdp.Mechanism.from_spec("KME", 300, epsilon=1.0, delta=1e-6, centre=[0.5, 0.5], scale=0.3, synthetic_points=10)
    release = fdp.Session(1.0, delta=1e-6, seed=1).release(kme, np.full((300, 2), 0.5))
    assert release.points.shape == (10, 2)
    # The regression's default response bound is stated in the spec (it was applied and not shown).
    erm = fdp.Mechanism.from_spec("erm", 50, epsilon=1.0, psi=0.1)
    assert erm.spec["params"]["response_bound"] == 1.0
    assert "response_bound" not in fdp.Mechanism.from_spec("erm", 50, epsilon=1.0, psi=0.1, loss="logistic").spec["params"]
    t = np.linspace(0, 1, 20)
    curves = fdp.Curves(0.5 + 0.1 * np.sin(6 * t) + np.zeros((100, 20)), t)
    curve = fdp.Session(1.0, seed=3).release(fdp.MeanCurve(range=(0, 1)).build(curves, 1.0), curves)
    with pytest.raises(ValueError, match="z"):
        curve.band(-1.0)
    sketch = fdp.Session(1.0, seed=3, neighbours="add_remove_one").release(fdp.Sketch(dim=2).build(1.0), np.full((50, 2), 0.5))
    with pytest.raises(ValueError, match="prior_seed"):
        sketch.m2m(prior_seed=-1)
    # Choices are read as every name is: a truncation "Risk" is "risk".
    assert fdp.Mechanism.from_spec("fpca", 30, grid=t, epsilon=1.0, range=(0, 1), truncation=" Risk").spec["params"]["truncation"] == " Risk"
    # A unit is what the curves are grouped by, never a label alone.
    with pytest.raises(ValueError, match="give ids="):
        fdp.Curves(np.zeros((4, 20)), t, id="patient")
