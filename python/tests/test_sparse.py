"""Sparse curves from Python (issue 25): the same release as the command line at a fixed seed,
bad observations dropped and counted locally, mergeable states, and refusals before any charge."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest

import docblocks
import fdp


def long_table(n: int = 150) -> tuple[list[str], list[float], list[float]]:
    ids, t, y = [], [], []
    for i in range(n):
        for j in range(2 + i % 4):
            age = float((i * 7 + j * 5) % 18) + 1.0
            ids.append(f"c{i}")
            t.append(age)
            y.append(75.0 + 6.0 * age + float(i % 9))
    return ids, t, y


def test_a_sparse_release_is_in_range_charges_epsilon_and_counts_bad_observations_locally() -> None:
    ids, t, y = long_table()
    ids += ["c3", "c4", "c5"]
    t += [float("nan"), 40.0, 7.0]
    y += [90.0, 120.0, 1e300]
    with pytest.warns(UserWarning, match="LOCAL INFORMATION") as caught:
        curves = fdp.SparseCurves.from_long(ids, t, y, domain=(1, 18), id="child")
    assert "1 observations with a missing time or value and 1 outside" in str(caught[0].message)
    assert curves.repairs == {"non_finite": 1, "outside_domain": 1, "empty_records": 0}
    assert curves.n == 150 and curves.person_id == "child"
    mechanism = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35)).build(curves, epsilon=1.0)
    assert mechanism.name == "sparse_binned_mean" and mechanism.person_id == "child"
    assert abs(sum(e for _, e, _ in mechanism.stages) - 1.0) < 1e-12
    assert mechanism.preview().upper_bound  # the noise at the ceiling: a bound, not an estimate
    assert not fdp.MeanCurve(bound="l1:2", tuning="plug_in").build(fdp.Curves(np.zeros((5, 4)), np.arange(4.0)), 1.0).preview().upper_bound
    session = fdp.Session(1.0, seed=5)
    release = session.release(mechanism, curves)
    assert release.curve.shape == (35,) and np.all((release.curve >= 40) & (release.curve <= 210))
    assert release.noise_sd is not None and np.all(np.isfinite(release.noise_sd))
    assert session.remaining[0] < 1e-12
    metadata = json.loads(release.to_json())["metadata"]
    assert metadata["privacy_unit"] == {"person": {"id_column": "child"}}
    published = release.to_json()
    assert "non_finite" not in published and "outside the domain" not in published and "missing" not in published
    with pytest.raises(fdp.BudgetExceededError):
        session.release(mechanism, curves)


def test_python_and_the_command_line_release_the_same_bytes(tmp_path: Path) -> None:
    cli = docblocks.cli()
    if cli is None:
        pytest.skip("the fdp command line is not built (cargo build -p fdp-cli) and FDP_CLI is not set")
    ids, t, y = long_table()
    (tmp_path / "long.csv").write_text("id,age,height\n" + "".join(f"{i},{a!r},{h!r}\n" for i, a, h in zip(ids, t, y)))
    subprocess.run(
        [str(cli), "mean", "--csv", str(tmp_path / "long.csv"), "--long", "id,age,height", "--sparse", "--grid", "1,18,35",
         "--range", "40,210", "--epsilon", "1", "--seed", "5", "--out", str(tmp_path / "cli"), "--quiet"],
        check=True,
    )
    from_cli = json.loads((tmp_path / "cli" / "release.json").read_text())
    curves = fdp.SparseCurves.from_long(ids, t, y, domain=(1, 18), id="id")
    mechanism = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35)).build(curves, epsilon=1.0)
    from_python = json.loads(fdp.Session(1.0, seed=5).release(mechanism, curves).to_json())
    assert from_python["output"] == from_cli["output"]
    assert from_python["metadata"]["stages"] == from_cli["metadata"]["stages"]


def test_states_of_parts_merge_into_the_release_of_the_whole() -> None:
    ids, t, y = long_table()
    curves = fdp.SparseCurves.from_long(ids, t, y, domain=(1, 18))
    mechanism = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35)).build(curves, epsilon=1.0)
    # Parts split at record boundaries (a record is one subject: all of its rows in one part).
    cuts = [0, len(ids) // 3, 2 * len(ids) // 3, len(ids)]
    cuts = [next(r for r in range(c, len(ids) + 1) if r == len(ids) or r == 0 or ids[r] != ids[r - 1]) for c in cuts]
    state = mechanism.empty_state()
    for lo, hi in reversed(list(zip(cuts, cuts[1:]))):
        part = fdp.SparseCurves.from_long(ids[lo:hi], t[lo:hi], y[lo:hi], domain=(1, 18))
        state = state.merge(mechanism.summarize_part(part))
    assert state.records == curves.n
    whole = fdp.Session(1.0, seed=9).release(mechanism, curves)
    merged = fdp.Session(1.0, seed=9).release_state(mechanism, state)
    assert np.array_equal(merged.curve, whole.curve)


def test_misuse_is_refused_before_anything_is_charged() -> None:
    ids, t, y = long_table(40)
    curves = fdp.SparseCurves.from_long(ids, t, y, domain=(1, 18))
    session = fdp.Session(1.0)
    with pytest.raises(ValueError, match="domain"):
        fdp.SparseMean(range=(40, 210), grid=np.linspace(0, 18, 35)).build(curves, epsilon=1.0)
    with pytest.raises(ValueError):
        fdp.SparseMean(range=(210, 40), grid=np.linspace(1, 18, 35)).build(curves, epsilon=1.0)
    with pytest.raises(ValueError):
        fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35), design=np.full(35, 0.5)).build(curves, epsilon=1.0)
    with pytest.raises(ValueError, match="domain"):
        fdp.SparseCurves([([1.0], [2.0])], domain=(1, 1))
    with pytest.raises(ValueError, match="times"):
        fdp.SparseCurves([([1.0, 2.0], [2.0])], domain=(0, 3))
    mechanism = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35)).build(curves, epsilon=1.0)
    other = fdp.SparseCurves.from_long(ids[:20], t[:20], y[:20], domain=(1, 18))
    with pytest.raises(ValueError, match="n = 40"):
        session.release(mechanism, other)
    with pytest.raises(TypeError, match="SparseCurves"):
        session.release(mechanism, np.zeros((40, 35)))
    assert session.spent == (0.0, 0.0)
    stated = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 35), design=np.full(35, 1 / 35)).build(curves, 1.0)
    assert [s for s, _, _ in stated.stages] == [s for s, _, _ in mechanism.stages]
    assert fdp.Session(1.0).release(stated, curves).curve.shape == (35,)


def test_a_record_without_observations_still_counts_in_n() -> None:
    curves = fdp.SparseCurves([([1.0, 5.0], [80.0, 110.0]), ([], []), ([float("nan")], [90.0])] * 20, domain=(1, 18))
    assert curves.n == 60 and curves.repairs["empty_records"] == 40
    mechanism = fdp.SparseMean(range=(40, 210), grid=np.linspace(1, 18, 18)).build(curves, epsilon=1.0)
    release = fdp.Session(1.0, seed=2).release(mechanism, curves)
    assert np.all(np.isfinite(release.curve))


def test_from_fdatairregular_reads_scikit_fda_objects() -> None:
    skfda = pytest.importorskip("skfda")
    irregular = skfda.representation.irregular.FDataIrregular(
        start_indices=[0, 2, 5],
        points=[1.0, 4.0, 2.0, 3.0, 9.0, 5.0],
        values=[80.0, 100.0, 88.0, 95.0, 131.0, 110.0],
        domain_range=(1, 18),
    )
    with pytest.raises(TypeError):
        fdp.SparseCurves.from_fdatairregular(irregular)  # type: ignore[call-arg]  # the domain is never taken from the data
    curves = fdp.SparseCurves.from_fdatairregular(irregular, domain=(1, 18))
    assert curves.n == 3 and curves.domain == (1.0, 18.0)
    assert list(curves.codes) == [0, 0, 1, 1, 1, 2]


def test_sparse_fpca_from_arrays_equals_the_command_line_and_merged_parts(tmp_path: Path) -> None:
    """fdp.SparseFpca: from (ids, t, y) arrays, the same bytes as `fdp fpca --sparse` at a seed and as
    the release of merged part states; its release is a CovarianceRelease with FPCA."""
    ids, t, y = long_table()
    curves = fdp.SparseCurves.from_long(np.array(ids), np.array(t), np.array(y), domain=(1, 18), id="id")
    fpca = fdp.SparseFpca(range=(40, 210), grid=np.linspace(1, 18, 35), components=4)
    mechanism = fpca.build(curves, epsilon=1.0)
    assert mechanism.name == "sparse_covariance_laplace" and [s for s, _, _ in mechanism.stages] == ["bound", "release"]
    session = fdp.Session(1.0, seed=5)
    release = session.release(mechanism, curves)
    assert session.spent == pytest.approx((1.0, 0.0))
    result = release.fpca(3)
    assert result.functions.shape == (3, 35) and bool(np.all(np.isfinite(result.values)))
    cuts = [0, 100, 301, len(ids)]
    cuts = [next(r for r in range(c, len(ids) + 1) if r == len(ids) or r == 0 or ids[r] != ids[r - 1]) for c in cuts]
    state = mechanism.empty_state()
    for lo, hi in reversed(list(zip(cuts, cuts[1:]))):
        state = state.merge(mechanism.summarize_part(fdp.SparseCurves.from_long(ids[lo:hi], t[lo:hi], y[lo:hi], domain=(1, 18))))
    merged = fdp.Session(1.0, seed=5).release_state(mechanism, state)
    assert json.loads(merged.to_json())["output"] == json.loads(release.to_json())["output"]
    cli = docblocks.cli()
    if cli is None:
        pytest.skip("the fdp command line is not built (cargo build -p fdp-cli) and FDP_CLI is not set")
    (tmp_path / "long.csv").write_text("id,age,height\n" + "".join(f"{i},{a!r},{h!r}\n" for i, a, h in zip(ids, t, y)))
    subprocess.run(
        [str(cli), "fpca", "--sparse", "--csv", str(tmp_path / "long.csv"), "--long", "id,age,height", "--grid", "1,18,35",
         "--range", "40,210", "--components", "4", "--epsilon", "1", "--seed", "5", "--out", str(tmp_path / "cli"), "--quiet"],
        check=True,
    )
    from_cli = json.loads((tmp_path / "cli" / "release.json").read_text())
    assert json.loads(release.to_json())["output"] == from_cli["output"]
    assert (tmp_path / "cli" / "fpca.svg").exists()


def test_sparse_fpca_refuses_bad_parameters_before_any_charge() -> None:
    ids, t, y = long_table(40)
    curves = fdp.SparseCurves.from_long(ids, t, y, domain=(1, 18))
    grid = np.linspace(1, 18, 35)
    for bad in [dict(ridge=0.0), dict(ridge=float("nan")), dict(components=0), dict(components=65), dict(range=(210, 40)),
                dict(delta=2.0)]:
        with pytest.raises(ValueError):
            fdp.SparseFpca(**{**dict(range=(40, 210), grid=grid), **bad}).build(curves, epsilon=1.0)
    with pytest.raises(ValueError, match="domain"):
        fdp.SparseFpca(range=(40, 210), grid=np.linspace(0, 18, 35)).build(curves, epsilon=1.0)
    session = fdp.Session(1.0)
    mechanism = fdp.SparseFpca(range=(40, 210), grid=grid).build(curves, epsilon=1.0)
    with pytest.raises(ValueError, match="n = 40"):
        session.release(mechanism, fdp.SparseCurves.from_long(ids[:20], t[:20], y[:20], domain=(1, 18)))
    assert session.spent == (0.0, 0.0)
    gaussian = fdp.SparseFpca(range=(40, 210), grid=grid, delta=1e-6).build(curves, epsilon=1.0)
    assert gaussian.name == "sparse_covariance_gaussian"


def test_the_person_unit_comes_from_grouping_never_from_a_label() -> None:
    """A unit is what the records are grouped by (an independent audit found that ``id=`` alone, or
    setting ``person_id``, labelled ungrouped records per person: a subject with k records was then
    protected only at k ε while the release said ε per person)."""
    records = [([1.0, 2.0], [80.0, 84.0]), ([3.0], [90.0]), ([4.0, 5.0], [95.0, 99.0])]
    with pytest.raises(ValueError, match="give ids="):
        fdp.SparseCurves(records, domain=(1, 18), id="child")
    grouped = fdp.SparseCurves(records, domain=(1, 18), ids=["a", "b", "a"], id="child")
    assert (grouped.n, grouped.person_id) == (2, "child")
    np.testing.assert_array_equal(grouped.codes, [0, 0, 1, 0, 0])
    # The same records as a long table: the same data.
    long = fdp.SparseCurves.from_long(["a", "a", "b", "a", "a"], [1.0, 2.0, 3.0, 4.0, 5.0], [80.0, 84.0, 90.0, 95.0, 99.0], domain=(1, 18), id="child")
    np.testing.assert_array_equal(long.codes, grouped.codes)
    with pytest.raises(ValueError, match="ids has 2 entries"):
        fdp.SparseCurves(records, domain=(1, 18), ids=["a", "b"])
    for data in (grouped, fdp.Curves(np.zeros((3, 4)), np.linspace(0, 1, 4), ids=[1, 2, 1])):
        with pytest.raises(AttributeError):
            data.person_id = "someone else"  # type: ignore[misc]
    # How many observations there are is private: repr does not show it.
    assert "observations" not in repr(grouped)
