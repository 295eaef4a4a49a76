"""The Python package: every public function, its errors, and agreement with the Rust command line."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import docblocks
import fdp
from docblocks import ROOT, code_blocks, run_python


def simulated(n: int = 200, k: int = 40, seed: int = 0) -> fdp.Curves:
    t = np.linspace(0.0, 1.0, k)
    rng = np.random.default_rng(seed)
    return fdp.Curves(0.5 + 0.3 * np.sin(6 * t) + rng.normal(0.0, 0.1, (n, k)), t)


# ----------------------------------------------------------------------------------------- Curves


def test_curves_rows_and_columns_are_the_same_curves() -> None:
    values = np.arange(12.0).reshape(3, 4)
    rows = fdp.Curves(values)
    cols = fdp.Curves(values.T, layout="columns")
    assert (rows.n, rows.k) == (3, 4)
    np.testing.assert_array_equal(rows.values, cols.values)
    np.testing.assert_allclose(rows.grid, np.linspace(0, 1, 4))
    assert "n=3" in repr(rows)


def test_curves_keep_a_contiguous_float64_array_without_copying_it() -> None:
    values = np.ones((5, 3))
    assert np.shares_memory(fdp.Curves(values).values, values)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(values=np.ones(5)), "2-D"),
        (dict(values=np.ones((2, 3)), grid=[0.0, 1.0]), "grid has 2 points"),
        (dict(values=np.ones((2, 3)), grid=[0.0, 0.5, 0.5]), "strictly increasing"),
        (dict(values=np.ones((2, 3)), grid=[0.0, np.nan, 1.0]), "finite"),
        (dict(values=np.ones((2, 3)), layout="diagonal"), "layout"),
        (dict(values=np.ones((0, 3))), "at least one curve"),
    ],
)
def test_curves_reject_bad_shapes_and_layouts(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fdp.Curves(**kwargs)


def test_nan_curves_are_repaired_not_refused() -> None:
    # An error that depended on a record's contents would leak it: non-finite values are repaired
    # per record in Rust (all-missing records become the public default) and n is kept.
    curves = simulated(100, 20)
    values = curves.values.copy()
    values[0, :] = np.nan
    values[1, 3] = np.inf
    values[2, :] = 1e308
    bad = fdp.Curves(values, curves.grid)
    session = fdp.Session(1.0, seed=1)
    release = session.release(fdp.MeanCurve(bound="l1:5").build(bad, 1.0), bad)
    assert np.all(np.isfinite(release.curve))


def test_from_long_puts_each_id_on_the_public_grid() -> None:
    grid = [0.0, 0.5, 1.0]
    curves = fdp.Curves.from_long(["b", "a", "a", "b", "c"], [0.5, 0.0, 0.5, 0.0, 0.8], [2.0, 1.0, 3.0, 4.0, 7.0], grid=grid)
    np.testing.assert_array_equal(curves.grid, grid)
    np.testing.assert_array_equal(curves.values[0], [4.0, 2.0, 2.0])  # b first: order of appearance
    np.testing.assert_array_equal(curves.values[2], [7.0, 7.0, 7.0])  # constant beyond its one observation
    assert curves.person_id == "id" and curves.rows.tolist() == [2, 2, 1]
    # Observation times are private: the grid is never taken from them, and no value is an error.
    moved = fdp.Curves.from_long(["a", "a", "a"], [0.1, 0.1, 0.3], [1.0, 3.0, np.nan], grid=grid)
    np.testing.assert_array_equal(moved.values[0], [2.0, 2.0, 2.0])  # ties averaged, NaN dropped
    with pytest.warns(UserWarning, match="NOT|LOCAL"):
        empty = fdp.Curves.from_long(["a", "b"], [np.nan, 0.2], [1.0, 2.0], grid=grid)
    assert empty.repairs["defaulted"] == 1
    with pytest.raises(TypeError):
        fdp.Curves.from_long(["a"], [0.0], [1.0])  # type: ignore[call-arg]  # the grid is required
    with pytest.raises(ValueError, match="same length"):
        fdp.Curves.from_long(["a", "b"], [0.0], [1.0], grid=grid)


def test_curves_grouped_by_person_are_one_record_each() -> None:
    t = np.linspace(0.0, 1.0, 5)
    values = np.array([[1.0] * 5, [3.0] * 5, [10.0] * 5, [np.nan, 5.0, 5.0, 5.0, np.nan]])
    with pytest.warns(UserWarning, match="LOCAL INFORMATION"):
        curves = fdp.Curves(values, t, ids=["p", "p", "q", "p"], id="patient")
    assert (curves.n, curves.person_id, curves.rows.tolist()) == (2, "patient", [3, 1])
    np.testing.assert_allclose(curves.values[0], [3.0] * 5)  # mean of 1, 3 and the repaired 5
    assert curves.repairs == {"complete": 3, "interpolated": 1, "defaulted": 0}
    assert "per person" in repr(curves)
    plain = fdp.Curves(values[:3], t)
    assert plain.person_id is None and plain.repairs == {"complete": 3, "interpolated": 0, "defaulted": 0}
    # The mechanism carries the unit into the release's metadata; a mismatch is refused.
    mechanism = fdp.MeanCurve(bound="l1:5").build(curves, 1.0)
    assert mechanism.person_id == "patient"
    release = fdp.Session(1.0, seed=3).release(mechanism, curves)
    assert release.metadata["privacy_unit"] == {"person": {"id_column": "patient"}}
    assert release.metadata["n"] == 2
    with pytest.raises(ValueError, match="built to protect one record"):
        fdp.Session(1.0).release(fdp.MeanCurve(bound="l1:5").build_for(t, 2, 1.0), curves)
    # The other way round: rows not grouped by person, handed to a per-person mechanism (a release
    # or a part's state), would each count as a person. Refused before anything is charged.
    session = fdp.Session(1.0)
    with pytest.raises(ValueError, match="built to protect one person"):
        session.release(fdp.MeanCurve(bound="l1:5").build_for(t, 3, 1.0, "patient"), plain)
    assert session.ledger == []
    with pytest.raises(ValueError, match="built to protect one person"):
        mechanism.summarize_part(plain)
    assert fdp.Session(1.0, seed=3).release(fdp.MeanCurve(bound="l1:5").build(plain, 1.0), plain).metadata["privacy_unit"] == "record"
    with pytest.raises(ValueError, match="ids has 2 entries"):
        fdp.Curves(values, t, ids=["p", "q"])


def test_from_pandas_reads_numeric_suffixes_as_the_grid() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"id": ["x", "y"], "v_1.0": [3.0, "NA"], "v_0.5": [2.0, 5.0], "v_0": [1.0, 4.0]})
    curves = fdp.Curves.from_pandas(frame, prefix="v_")
    np.testing.assert_array_equal(curves.grid, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(curves.values[0], [1.0, 2.0, 3.0])
    assert np.isnan(curves.values[1, 2])
    with pytest.raises(ValueError, match="no column"):
        fdp.Curves.from_pandas(frame, prefix="w_")


def test_from_pandas_groups_by_id_and_warns_about_repeated_ids() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"ID": [7, 7, 9], "visit": [1, 2, 1], "cca_0": [1.0, 3.0, 5.0], "cca_1": [1.0, 3.0, 5.0]})
    with pytest.warns(UserWarning, match="column 'ID' has repeated values"):
        rows = fdp.Curves.from_pandas(frame, prefix="cca_")
    assert rows.n == 3 and rows.person_id is None
    persons = fdp.Curves.from_pandas(frame, prefix="cca_", id="ID")
    assert (persons.n, persons.person_id) == (2, "ID")
    np.testing.assert_array_equal(persons.values, [[2.0, 2.0], [5.0, 5.0]])
    with pytest.raises(ValueError, match="no column 'patient'"):
        fdp.Curves.from_pandas(frame, prefix="cca_", id="patient")


def test_front_door_traps_are_refused_or_warned_locally() -> None:
    """The mistakes a new user makes: each is refused with a message naming the fix, or draws a
    local warning (never anything inside a release)."""
    pd = pytest.importorskip("pandas")
    ages = [1.0, 1.25, 1.5, 2.0, 3.0, 4.0]
    frame = pd.DataFrame({"id": ["a", "b", "c"], "sex": ["M", "F", "F"], **{f"age_{a}": [70.0 + a, 72.0 + a, 71.0 + a] for a in ages}})
    # String columns taken as grid points: refused, naming them.
    with pytest.raises(ValueError, match=r"\['id', 'sex'\] hold text and no numbers"):
        fdp.Curves.from_pandas(frame)
    # Names without numeric suffixes: equally spaced points of [0, 1], said out loud.
    with pytest.warns(UserWarning, match="carry no grid"):
        fdp.Curves.from_pandas(frame.rename(columns={f"age_{a}": f"h{i}x" for i, a in enumerate(ages)}), prefix="h")
    parsed = fdp.Curves.from_pandas(frame, prefix="age_")
    np.testing.assert_array_equal(parsed.grid, ages)
    # A likely transposed matrix (fewer curves than points, no grid).
    heights = np.tile(np.linspace(75.0, 180.0, 31), (93, 1))
    with pytest.warns(UserWarning, match="layout='columns'"):
        fdp.Curves(heights.T)
    # The grid is mapped onto [0, 1] at every door: matern32:0.1 on ages 1-18 is a tenth of the
    # domain, not 0.1 years (no warning); a length-scale below half the mapped spacing warns.
    years = fdp.Curves(heights, np.linspace(1.0, 18.0, 31))
    with pytest.warns(UserWarning, match="below half the grid's spacing"):
        fdp.MeanCurve(kernel="matern32:0.01", range=(40.0, 210.0)).build(years, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fdp.MeanCurve(kernel="matern32:0.1", range=(40.0, 210.0)).build(years, 1.0)
    # δ on a pure mechanism, and a huge session δ.
    with pytest.raises(ValueError, match="pure ε-DP"):
        fdp.MeanCurve(bound="l1:5", delta=1e-6).build(years, 1.0)
    with pytest.raises(ValueError, match="pure ε-DP"):
        fdp.Density(delta=1e-6).build(100, 1.0)
    with pytest.warns(UserWarning, match="large failure probability"):
        fdp.Session(1.0, delta=0.5)
    # Evaluation outside the domain.
    release = fdp.Session(1.0, seed=1).release(fdp.MeanCurve(range=(40.0, 210.0)).build(years, 1.0), years)
    np.testing.assert_array_equal(release.grid, years.grid)  # shown in the data's units
    np.testing.assert_allclose(release.evaluate(years.grid), release.curve, rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="outside the release's domain"):
        release.evaluate([25.0])


def test_values_outside_the_public_interval_are_counted_locally() -> None:
    """Values outside a mean's stated range, a density's domain or a sketch's [0, 1]: the release is
    made (each record clipped by the mechanism), and the curator gets a local warning with the count;
    nothing about it is published."""
    ages = np.linspace(1.0, 18.0, 31)
    heights = 80.0 + 90.0 * np.sqrt((ages - 1.0) / 17.0) + np.random.default_rng(2).normal(0.0, 5.0, (60, 31))
    in_mm = fdp.Curves(heights * 10.0, ages)  # millimetres against a range in centimetres
    mechanism = fdp.MeanCurve(range=(40.0, 210.0)).build(in_mm, 1.0)
    with pytest.warns(UserWarning, match=r"60 of 60 records have values outside the public range \[40, 210\].*LOCAL INFORMATION"):
        release = fdp.Session(1.0, seed=3).release(mechanism, in_mm)
    assert np.all((release.curve >= 40.0) & (release.curve <= 210.0))
    assert "outside" not in release.to_json() and "60 of 60" not in release.to_json()
    one_tall = heights.copy()
    one_tall[7, 3] = 250.0
    one_tall[9, :] = np.nan  # missing values are repaired, not counted as outside
    curves = fdp.Curves(one_tall, ages)
    with pytest.warns(UserWarning, match="1 of 60 records"):
        fdp.Session(1.0).release(fdp.MeanCurve(range=(40.0, 210.0)).build(curves, 1.0), curves)
    in_range = fdp.Curves(heights, ages)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fdp.Session(1.0).release(fdp.MeanCurve(range=(40.0, 210.0)).build(in_range, 1.0), in_range)
        fdp.Session(1.0).release(fdp.MeanCurve(bound="l1:5").build(in_mm, 1.0), in_mm)  # no range stated: no count
    humidity = np.random.default_rng(1).uniform(16.0, 40.0, 500)
    with pytest.warns(UserWarning, match=r"500 of 500 records have values outside the density's domain \[0, 1\]"):
        fdp.Session(1.0).release(fdp.Density(domain=(0.0, 1.0)).build(500, 1.0), humidity)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fdp.Session(1.0).release(fdp.Density(domain=(0.0, 100.0)).build(500, 1.0), humidity)
    points = np.column_stack([humidity / 100.0, humidity])
    with pytest.warns(UserWarning, match=r"500 of 500 records have values outside the sketch's domain"):
        fdp.Session(1.0, neighbours="add_remove_one").release(fdp.Sketch(dim=2).build(1.0), points)


def test_from_fdatagrid_takes_rows_and_the_grid() -> None:
    class FDataGrid:  # the two attributes scikit-fda's FDataGrid has that fdp reads
        data_matrix = np.arange(6.0).reshape(2, 3, 1)
        grid_points = (np.array([0.0, 0.5, 1.0]),)

    curves = fdp.Curves.from_fdatagrid(FDataGrid())
    np.testing.assert_array_equal(curves.values, np.arange(6.0).reshape(2, 3))
    FDataGrid.data_matrix = np.zeros((2, 3, 2))
    with pytest.raises(ValueError, match="one-dimensional values"):
        fdp.Curves.from_fdatagrid(FDataGrid())


def test_a_release_goes_to_scikit_fda_and_back() -> None:
    skfda = pytest.importorskip("skfda")
    t = np.linspace(1.0, 18.0, 25)
    grid = skfda.FDataGrid(data_matrix=np.sin(t / 6.0) + np.linspace(0, 1, 200)[:, None] * 0.1, grid_points=t)
    curves = fdp.Curves.from_fdatagrid(grid)
    release = fdp.Session(1.0, seed=2).release(fdp.MeanCurve(range=(-1.0, 2.0)).build(curves, 1.0), curves)
    back = release.to_fdatagrid()
    assert isinstance(back, skfda.FDataGrid) and back.n_samples == 1
    np.testing.assert_array_equal(back.grid_points[0], t)
    np.testing.assert_array_equal(back.data_matrix[0, :, 0], release.curve)


def test_as_points_shapes() -> None:
    assert fdp.as_points([1.0, 2.0]).shape == (2, 1)
    with pytest.raises(ValueError, match="coordinates"):
        fdp.as_points(np.ones((3, 2)), dim=3)
    # No rows is not an error (a sketch's n is private; public n is checked by the mechanism).
    assert fdp.as_points(np.ones((0, 2))).shape == (0, 2)
    with pytest.raises(ValueError, match="D >= 1"):
        fdp.as_points(np.ones((3, 0)))


@pytest.mark.parametrize("bad", ["alice-42", 10**400, 1 + 2j, None])
def test_a_record_that_is_not_a_number_is_the_public_default_never_an_error(bad: Any) -> None:
    """Whether an error is raised must not depend on a record's content, and no message may quote
    one: a value that is not a number becomes NaN (the public default), at every door."""
    session = fdp.Session(10)
    kde = session.release(fdp.Mechanism.from_spec("kde", 3, epsilon=1), [0.1, 0.2, bad])
    assert np.isfinite(kde.curve).all()
    with pytest.warns(UserWarning, match="LOCAL INFORMATION"):
        curves = fdp.Curves([[0.1, 0.2, 0.3], [0.4, bad, 0.6]])
    assert np.isnan(curves.values[1, 1])  # a missing value, repaired like NaN
    regression = fdp.Mechanism.from_spec("erm", 3, epsilon=1, psi=0.05)
    fit = session.release(regression, ([0.1, 0.5, 0.9], [1.0, bad, -1.0]))
    assert np.isfinite(fit.curve).all()
    sparse = fdp.SparseCurves([([0.1, bad], [1.0, 2.0]), ([0.5], [bad])], domain=(0, 1))
    assert np.isnan(sparse.t).sum() + np.isnan(sparse.y).sum() == 2


def test_warnings_point_at_the_callers_line_and_a_frame_draws_each_once() -> None:
    """A warning raised inside the package is attributed to the first caller outside it (this file),
    whatever path it took through the package (a frame's columns reach Curves through from_pandas);
    a frame whose column names carry no grid is told so once, not again as a layout question."""
    pd = pytest.importorskip("pandas")
    values = np.ones((3, 4))
    values[1, 2] = np.nan
    with pytest.warns(UserWarning) as record:
        fdp.Curves.from_pandas(pd.DataFrame(values, columns=[f"h{i}" for i in range(4)]))
    assert {Path(w.filename).resolve() for w in record} == {Path(__file__).resolve()}
    messages = [str(w.message) for w in record]
    assert sum("carry no grid" in m for m in messages) == 1 and not any("layout='columns'" in m for m in messages)


def test_a_sketch_of_no_points_is_released() -> None:
    """A sketch's n is private (add/remove neighbours): an empty dataset must release like any
    other, or the error itself would say n = 0."""
    mechanism = fdp.Sketch(dim=2).build(1)
    release = fdp.Session(1, neighbours="add_remove_one").release(mechanism, np.empty((0, 2)))
    assert np.isfinite(release.sketch).all() and np.isfinite(release.noisy_count)


# ------------------------------------------------------------------------------ Session and means


def test_a_tampered_ledger_is_refused_on_load(tmp_path: Path) -> None:
    session = fdp.Session(epsilon=1.0, seed=3)
    curves = simulated()
    session.release(fdp.MeanCurve(bound="l1:5").build(curves, epsilon=0.6), curves)
    path = tmp_path / "ledger.json"
    session.save(path)
    original = json.loads(path.read_text(encoding="utf-8"))

    def tampered(edit: Callable[[dict[str, Any]], Any]) -> Path:
        ledger = json.loads(json.dumps(original))
        edit(ledger)
        target = tmp_path / "tampered.json"
        target.write_text(json.dumps(ledger), encoding="utf-8")
        return target

    edits = {
        "spent lowered": lambda l: l["budget"].__setitem__("spent_epsilon", 0.0),
        "spent negative": lambda l: l["budget"].__setitem__("spent_epsilon", -50.0),
        "budget raised": lambda l: l["budget"].__setitem__("epsilon", 20.0),
        "delta of 5": lambda l: l["budget"].__setitem__("delta", 5.0),
        "entry lowered": lambda l: l["entries"][0].__setitem__("epsilon", 1e-9),
        "entry deleted": lambda l: l["entries"].pop(),
    }
    for what, edit in edits.items():
        try:
            fdp.Session.load(tampered(edit))
        except ValueError as error:
            assert "ledger refused" in str(error), what
        else:
            pytest.fail(f"{what}: a tampered ledger was accepted")
    assert fdp.Session.load(path).spent == session.spent


def test_session_ledger_save_load_and_refusal(tmp_path: Path) -> None:
    curves = simulated()
    session = fdp.Session(epsilon=1.0, seed=7)
    mechanism = fdp.MeanCurve(bound="l1:5").build(curves, epsilon=0.6)
    assert [s[0] for s in mechanism.stages] == ["bound", "release"]
    assert mechanism.guarantee == (0.6, 0.0)
    assert mechanism.name == "tuned_iclp_rkhs" and "tuned_iclp_rkhs" in repr(mechanism)
    release = session.release(mechanism, curves)
    assert len(session.ledger) == 2 and session.ledger[0]["released"].startswith("bound")
    assert session.spent[0] == pytest.approx(0.6) and session.remaining[0] == pytest.approx(0.4)
    path = tmp_path / "ledger.json"
    session.save(path)
    restored = fdp.Session.load(path)
    assert restored.ledger == session.ledger
    with pytest.raises(fdp.BudgetExceededError, match=r"spent \(ε = 0.6"):
        restored.release(mechanism, curves)
    assert len(restored.ledger) == 2  # nothing charged on refusal
    assert "remaining" in repr(restored)
    assert restored.head == session.head == session.ledger[-1]["hash"]
    metadata = release.metadata
    assert metadata["mechanism"] == "tuned_iclp_rkhs" and metadata["n"] == curves.n
    assert json.loads(release.to_json())["output"]["curve"] == list(release.curve)
    release.save(str(tmp_path / "release.json"))
    assert (tmp_path / "release.json").exists()


def test_a_public_range_gives_centre_ceiling_and_clamp(tmp_path: Path) -> None:
    """Heights in cm on ages 1-18: the range (40, 210) is all a curator states; the release stays in
    it, and a (lo, hi) pair given as the bound is read as the range."""
    ages = np.linspace(1.0, 18.0, 31)
    rng = np.random.default_rng(4)
    values = 80.0 + 90.0 * np.sqrt((ages - 1.0) / 17.0) + rng.normal(0.0, 6.0, (40, 31))
    curves = fdp.Curves(values, ages)
    framed = fdp.MeanCurve(kernel="matern32:2", range=(40.0, 210.0))
    release = fdp.Session(0.25, seed=2).release(framed.build(curves, 0.25), curves)
    assert np.all((release.curve >= 40.0) & (release.curve <= 210.0))
    assert any(stage["stage"] == "range" for stage in release.metadata["stages"])
    out = release.write_report(str(tmp_path / "report"), fdp.Session(1.0), x_label="age (years)", y_label="height (cm)")
    svg = (tmp_path / "report" / "curves.svg").read_text(encoding="utf-8")
    assert out.endswith("report.md") and "age (years)" in svg and "height (cm)" in svg and "n = 40" in svg
    as_bound = fdp.MeanCurve(kernel="matern32:2", bound=(40.0, 210.0))
    again = fdp.Session(0.25, seed=2).release(as_bound.build(curves, 0.25), curves)
    np.testing.assert_array_equal(again.curve, release.curve)
    with pytest.raises(ValueError, match="has no norm"):
        fdp.MeanCurve(bound=300).build(curves, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="range"):
        fdp.MeanCurve(range=(210.0, 40.0)).build(curves, 1.0)
    with pytest.raises(ValueError, match="plug-in"):
        fdp.MeanCurve(range=(40.0, 210.0), tuning="plug_in").build(curves, 1.0)


def test_a_basis_release_states_its_pointwise_noise_band() -> None:
    curves = simulated()
    mechanism = fdp.MeanCurve(bound="l1:5", tuning="plug_in").build(curves, 1.0)
    release = fdp.Session(1.0, seed=5).release(mechanism, curves)
    sd = release.noise_sd
    assert sd is not None and sd.shape == release.curve.shape and np.all(sd > 0)
    lower, upper = release.band(2.0)  # type: ignore[misc]
    np.testing.assert_allclose(upper - lower, 4.0 * sd, rtol=1e-12)


def test_a_tuned_release_reads_its_own_error_into_numbers() -> None:
    """The accuracy stage as numbers: at a small n·ε (the public ceiling) the release is the centre,
    its estimate mostly 0 and its upper-side figure positive; a plug-in mechanism reports none."""
    small = simulated(n=20, k=30, seed=3)
    mechanism = fdp.MeanCurve(range=(0.0, 1.0)).build(small, 0.5)
    own = fdp.Session(0.5, seed=3).release(mechanism, small).own_error
    assert isinstance(own, fdp.OwnError)
    assert own.noise_dominated and own.band == 0.0 and own.upper > own.estimate >= 0.0
    curves = simulated()
    own = fdp.Session(1.0, seed=4).release(fdp.MeanCurve(range=(0.0, 1.0)).build(curves, 1.0), curves).own_error
    assert own is not None and not own.noise_dominated and own.centre > own.estimate and own.upper >= own.estimate
    plug_in = fdp.MeanCurve(bound="l1:5", tuning="plug_in").build(curves, 1.0)
    assert fdp.Session(1.0, seed=5).release(plug_in, curves).own_error is None
    # A pilot-tuned kind reports its single estimate.
    pilot = fdp.MeanCurve(mechanism="iid_laplace", bound="l2:5").build(curves, 1.0)
    own = fdp.Session(1.0, seed=6).release(pilot, curves).own_error
    assert own is not None and own.estimate >= 0.0 and own.upper is None and own.noise_dominated is None


def test_every_release_has_a_repr_a_labelled_figure_and_table_outputs(tmp_path: Path) -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    sketch = fdp.Session(1.0, seed=2, neighbours="add_remove_one").release(fdp.Sketch(dim=2).build(1.0), rng.uniform(size=(500, 2)))
    assert repr(sketch).startswith("SketchRelease(") and "noisy_count=" in repr(sketch)
    points = rng.normal(size=(400, 2))
    synthetic = fdp.Session(1.0, delta=1e-6, seed=1).release(
        fdp.SyntheticDataset(centre=[0.0, 0.0], scale=1.5, rho=1.0, synthetic_points=50).build(400, 1.0, 1e-6), points
    )
    assert repr(synthetic) == "WeightedSampleRelease(points=50, dim=2, epsilon=1.0, delta=1e-06)"
    curves = simulated()
    curve = fdp.Session(1.0, seed=5).release(fdp.MeanCurve(bound="l1:5").build(curves, 1.0), curves)
    for release, title in [(sketch, "Private sketch"), (synthetic, "Private synthetic dataset"), (curve, "ICLP-RKHS (privately tuned)")]:
        fig, ax = plt.subplots()
        release.plot(ax=ax)
        assert ax.get_title().startswith(title) and "ε = 1" in ax.get_title()
        assert "n = " in ax.get_title(), ax.get_title()  # the number of records (noisy for the sketch)
        assert ax.get_xlabel() and ax.get_ylabel()
        fig.savefig(tmp_path / f"{title[:8]}.png")
        plt.close(fig)
    table = curve.to_pandas()
    assert isinstance(table, pd.DataFrame) and list(table.columns) == ["t", "value", "lower", "upper"]
    np.testing.assert_array_equal(table["value"].to_numpy(), curve.curve)


def test_the_readme_python_snippet_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's first Python block is run as written (the Spark one in test_spark.py)."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    run_python(code_blocks(ROOT / "README.md", "python")[0], namespace, ROOT / "README.md")
    release = namespace["release"]
    assert release.curve.shape == (50,) and np.all((release.curve >= 0.0) & (release.curve <= 1.0))
    assert (tmp_path / "ledger.json").exists()


def test_a_ledger_keeps_one_privacy_unit(tmp_path: Path) -> None:
    """Budgets of different privacy units do not add up: a session (and its saved ledger) that charged
    a per-person release refuses a per-record one, charging nothing."""
    t = np.linspace(0.0, 1.0, 5)
    values = np.array([[1.0] * 5, [3.0] * 5, [10.0] * 5, [4.0] * 5])
    persons = fdp.Curves(values, t, ids=["p", "p", "q", "r"], id="patient")
    rows = fdp.Curves(values, t)
    session = fdp.Session(2.0, seed=1)
    session.release(fdp.MeanCurve(bound="l1:5").build(persons, 0.5), persons)
    path = tmp_path / "ledger.json"
    session.save(path)
    entries = len(session.ledger)
    for ledger in (session, fdp.Session.load(path)):
        with pytest.raises(ValueError, match="privacy unit"):
            ledger.release(fdp.MeanCurve(bound="l1:5").build(rows, 0.5), rows)
        assert ledger.spent[0] == pytest.approx(0.5) and len(ledger.ledger) == entries


@pytest.mark.parametrize(
    "epsilon, kwargs, message",
    [
        (0.0, dict(bound="l1:5"), "epsilon"),
        (-1.0, dict(bound="l1:5"), "epsilon"),
        (float("nan"), dict(bound="l1:5"), "epsilon"),
        (1.0, dict(kernel="cauchy:1"), "SHAPE"),
        (1.0, dict(kernel="matern32:-1"), "rho"),
        (1.0, dict(bound="l2:1"), "norm"),  # ICLP-RKHS clips in the coefficient l1 norm
        (1.0, dict(bound="l1:0"), "clipping bound"),
        (1.0, dict(mechanism="magic"), "mean mechanism"),
        (1.0, dict(tuning="guess"), "tuning"),
        (1.0, dict(mechanism="gaussian_process", bound="l2:1"), "delta"),
        (1.0, dict(mechanism="gaussian_process", bound="l2:1", delta=2.0), "delta"),
        (1.0, dict(psi=0.1, bound="l1:5"), "plug-in"),
        (1.0, dict(), "bound"),  # neither a bound nor a range: refused at every door
        (1.0, dict(mechanism="bernstein", bound="sup:2", degree=8), "plug-in"),
        (1.0, dict(centre=float("inf")), "centre"),
    ],
)
def test_bad_mean_parameters_raise_value_errors_naming_them(epsilon: float, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fdp.MeanCurve(**kwargs).build(simulated(), epsilon)


def test_bad_session_parameters() -> None:
    with pytest.raises(ValueError, match="epsilon"):
        fdp.Session(epsilon=0.0)
    with pytest.raises(ValueError, match="delta"):
        fdp.Session(epsilon=1.0, delta=1.5)
    with pytest.raises(ValueError, match="neighbours"):
        fdp.Session(1.0, neighbours="everyone")
    for seed in (-3, 2**64, 1.5, True):
        with pytest.raises(ValueError, match="seed"):
            fdp.Session(1.0, seed=seed)  # type: ignore[arg-type]
    kde = fdp.Mechanism.from_spec("kde", 50, epsilon=1.0)
    a = fdp.Session(1.0, seed=np.int64(3)).release(kde, np.full(50, 0.5))  # a numpy integer is a seed
    np.testing.assert_array_equal(a.curve, fdp.Session(1.0, seed=3).release(kde, np.full(50, 0.5)).curve)
    # n is a public count: a whole number in [1, 2^53], refused with a ValueError naming it.
    grid = np.linspace(0.0, 1.0, 5)
    for n in (0, 1.5, 2**70):
        with pytest.raises(ValueError, match="public number of records"):
            fdp.MeanCurve(range=(0.0, 1.0)).build_for(grid, n, 1.0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="range"):
        fdp.Fpca(range=None).build_for(grid, 10, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least two grid points"):
        fdp.MeanCurve(range=(0.0, 1.0)).build(fdp.Curves(np.ones((3, 1))), 1.0)
    with pytest.raises(TypeError):
        fdp.Session(1.0).release("iclp", simulated())  # type: ignore[arg-type]


def test_data_must_match_the_mechanism() -> None:
    curves = simulated(100, 20)
    mechanism = fdp.MeanCurve(bound="l1:5").build(curves, 1.0)
    session = fdp.Session(10.0)
    with pytest.raises(ValueError, match="built for 100 curves"):
        session.release(mechanism, simulated(99, 20))
    with pytest.raises(TypeError):
        session.release(mechanism, curves.values)
    other_grid = fdp.Curves(curves.values, np.linspace(0, 2, 20))
    with pytest.raises(ValueError, match="grid"):
        session.release(mechanism, other_grid)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(mechanism="iclp_rkhs", bound="l1:5"),
        dict(mechanism="iclp_l1", bound="l2:2"),
        dict(mechanism="iid_laplace", bound="l2:2"),
        dict(mechanism="gaussian_process", bound="l2:2", delta=1e-6),
        dict(mechanism="bernstein", bound="sup:2"),
        dict(mechanism="iclp_rkhs", bound="l1:5", tuning="plug_in", psi=1e-3, centre=0.5),
        dict(mechanism="iid_laplace", bound="l2:2", tuning="plug_in", components=5),
        dict(mechanism="bernstein", bound="sup:2", tuning="plug_in", degree=8),
        dict(mechanism="gaussian_process", bound="l2:2", tuning="plug_in", delta=1e-6),
    ],
)
def test_every_mean_mechanism_releases_a_finite_curve(kwargs: dict) -> None:
    curves = simulated()
    mechanism = fdp.MeanCurve(**kwargs).build(curves, 1.0)
    accuracy = mechanism.preview()
    assert accuracy.expected_sq_error > 0 and accuracy.bound(0.05) > accuracy.expected_sq_error
    session = fdp.Session(1.0, delta=kwargs.get("delta"), seed=2)
    release = session.release(mechanism, curves)
    assert release.curve.shape == (curves.k,) and np.all(np.isfinite(release.curve))
    assert release.coefficients.size > 0
    assert release.evaluate(np.array([0.0, 0.33, 1.0])).shape == (3,)
    assert session.spent[0] == pytest.approx(1.0)


def test_the_private_mean_is_close_to_the_sample_mean() -> None:
    curves = simulated(2000, 50, seed=3)
    release = fdp.Session(1.0, seed=5).release(fdp.MeanCurve(bound="l1:5").build(curves, 1.0), curves)
    error = np.sqrt(np.mean((release.curve - curves.values.mean(axis=0)) ** 2))
    assert error < 0.05, error


def test_same_seed_same_release_and_os_noise_differs() -> None:
    curves = simulated()
    mechanism = fdp.MeanCurve(bound="l1:5").build(curves, 1.0)
    a = fdp.Session(1.0, seed=11).release(mechanism, curves).curve
    b = fdp.Session(1.0, seed=11).release(mechanism, curves).curve
    c = fdp.Session(1.0).release(mechanism, curves).curve
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_accuracy_bound_validates_alpha() -> None:
    assert fdp.Accuracy(1.0, None).bound(0.5) == 2.0
    with pytest.raises(ValueError):
        fdp.Accuracy(1.0, 0.1).bound(0.0)


def test_write_report_and_plot(tmp_path: Path) -> None:
    curves = simulated()
    session = fdp.Session(1.0, seed=1)
    release = session.release(fdp.MeanCurve(bound="l1:5").build(curves, 1.0), curves)
    report = release.write_report(str(tmp_path / "r"), session, notes=["a note"])
    text = Path(report).read_text(encoding="utf-8")
    assert "a note" in text and "## Ledger" in text
    assert "tuned_iclp_rkhs" in repr(release)
    assert (tmp_path / "r" / "curves.svg").exists() and (tmp_path / "r" / "release.json").exists()
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    assert release.plot() is not None


def _mask(text: str) -> str:
    import re

    return re.sub(r"[-+.eE]*\d[-+.eE\d]*", "#", text)


def _published(out: Path) -> tuple[dict, str, set[str]]:
    """The publishable files with exactly the released (noisy) quantities masked: the curve, the
    coefficients, the private bound with the sensitivity and noise scale it sets, ψ, each stage's
    outcome and the accuracy stage's numbers (``own_error``), and the figure's coordinates (drawn
    from the released curve)."""
    record = json.loads((out / "release.json").read_text(encoding="utf-8"))
    for key in ("curve", "coefficients", "noise_sd"):  # the band is set by the private bound and ψ
        record["output"][key] = "released"
    for key in ("clipping", "regularisation", "sensitivity"):
        record["metadata"][key] = "released"
    for calibration in record["metadata"]["calibration"].values():
        calibration["scale"] = calibration["sensitivity"] = "released"
    for stage in record["metadata"]["stages"]:
        stage["outcome"] = "released"
    if "own_error" in record["metadata"]:  # the accuracy stage's numbers
        record["metadata"]["own_error"] = "released"
    rows = ("| bound |", "| tuning |", "| accuracy |", "| clipping bound |", "| η, ψ |", "| sensitivity |", "| 0 |")
    report = "\n".join(_mask(l) if l.startswith(rows) else l for l in (out / "report.md").read_text(encoding="utf-8").splitlines())
    svg = {_mask(l) for l in (out / "curves.svg").read_text(encoding="utf-8").splitlines()}
    return record, report, svg


def test_neighbouring_datasets_publish_the_same_reports_but_for_the_released_numbers(tmp_path: Path) -> None:
    # Two datasets that differ in one person: in A person 3 has four clean rows, in B two rows, one
    # with holes (repaired) and one huge; and, in long form, observations at other times.
    t = np.linspace(0.0, 1.0, 12)
    base = [(p, 0.4 + 0.02 * p + 0.01 * (t * 11 + v)) for p in range(40) for v in range(1 + p % 4)]
    rows_a = list(base)
    rows_b = [r for r in base if r[0] != 3] + [(3, np.r_[np.nan, 0.5, np.full(10, np.nan)]), (3, np.full(12, 1e300))]
    outputs = []
    for name, rows in (("a", rows_a), ("b", rows_b)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the repairs are reported locally
            curves = fdp.Curves(np.array([v for _, v in rows]), t, ids=[p for p, _ in rows], id="patient_id")
        session = fdp.Session(1.0, seed=11)
        release = session.release(fdp.MeanCurve(bound="l1:2", centre=0.5).build(curves, 1.0), curves)
        release.write_report(str(tmp_path / name), session, title="Private mean curve")
        outputs.append((curves.repairs, _published(tmp_path / name), (tmp_path / name / "release.json").read_text()))
    (repairs_a, published_a, raw_a), (repairs_b, published_b, raw_b) = outputs
    assert repairs_a != repairs_b and raw_a != raw_b  # the data (and the noisy numbers) did differ
    assert published_a == published_b
    long_outputs = []
    for moved in (False, True):
        ids, ts, ys = [], [], []
        for p in range(30):
            times = [0.05, 0.37, 0.81] if moved and p == 5 else list(np.linspace(0.0, 1.0, 6))
            for j, s in enumerate(times):
                ids.append(f"s{p}"), ts.append(s), ys.append(np.nan if moved and p == 5 and j == 1 else 0.5 + 0.1 * s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            curves = fdp.Curves.from_long(ids, ts, ys, grid=np.linspace(0.0, 1.0, 8))
        session = fdp.Session(1.0, seed=11)
        release = session.release(fdp.MeanCurve(bound="l1:2", centre=0.5).build(curves, 1.0), curves)
        out = tmp_path / f"long-{moved}"
        release.write_report(str(out), session, title="Private mean curve")
        long_outputs.append(_published(out))
    assert long_outputs[0] == long_outputs[1]
    assert long_outputs[0][0]["output"]["grid_points"] == list(np.linspace(0.0, 1.0, 8))


# -------------------------------------------------------------------- densities, KME and sketches


def test_density_release_integrates_to_about_one() -> None:
    rng = np.random.default_rng(4)
    points = rng.beta(2, 5, 5000)
    mechanism = fdp.Density(domain=(0.0, 1.0)).build(points.size, 1.0)
    assert mechanism.name == "iclp_kde"
    release = fdp.Session(1.0, seed=3).release(mechanism, points)
    mass = np.trapezoid(release.curve, release.grid) if hasattr(np, "trapezoid") else np.trapz(release.curve, release.grid)
    assert abs(mass - 1.0) < 0.1
    for method, delta in [("gaussian_process", 1e-6), ("iid_laplace", None), ("bernstein", None)]:
        m = fdp.Density(mechanism=method, delta=delta).build(points.size, 1.0)
        assert np.all(np.isfinite(fdp.Session(1.0, delta=delta).release(m, points).curve))
    with pytest.raises(ValueError, match="2 coordinates, the mechanism expects 1"):
        fdp.Session(1.0).release(mechanism, np.ones((5000, 2)))
    with pytest.raises(ValueError):
        fdp.Density(domain=(1.0, 0.0)).build(10, 1.0)
    with pytest.raises(ValueError, match="kernel"):
        fdp.Density(kernel="cosine").build(10, 1.0)  # type: ignore[arg-type]


def test_synthetic_dataset_release() -> None:
    rng = np.random.default_rng(5)
    points = rng.normal(0.0, 1.0, (400, 2))
    mechanism = fdp.SyntheticDataset(centre=[0.0, 0.0], scale=1.5, rho=1.0, synthetic_points=50).build(400, 1.0, 1e-6)
    release = fdp.Session(1.0, delta=1e-6, seed=1).release(mechanism, points)
    assert isinstance(release, fdp.WeightedSampleRelease)
    assert release.points.shape == (50, 2) and release.weights.shape == (50,)
    assert release.to_csv().startswith("x1,x2,weight")
    assert release.metadata["mechanism"] == "balog_alg1"
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    assert release.plot() is not None
    with pytest.raises(ValueError, match="coordinates"):
        fdp.Session(1.0, delta=1e-6).release(mechanism, np.ones((400, 3)))
    with pytest.raises(ValueError, match="delta"):
        fdp.SyntheticDataset(centre=[0.0], scale=1.0).build(10, 1.0, 0.0)


def test_sketch_release_and_m2m_means() -> None:
    rng = np.random.default_rng(6)
    points = np.column_stack([rng.beta(2, 5, 20000), rng.uniform(size=20000)])
    mechanism = fdp.Sketch(dim=2).build(1.0)
    session = fdp.Session(1.0, seed=2, neighbours="add_remove_one")
    release = session.release(mechanism, points)
    assert isinstance(release, fdp.SketchRelease) and release.noisy_count > 19000
    assert release.sketch.shape == (20,)  # 10 bins per coordinate
    m2m = release.m2m()
    np.testing.assert_allclose(m2m.means, [2 / 7, 0.5], atol=0.03)
    assert m2m.covariance.shape == (2, 2) and 0.0 <= m2m.cdf(0, 0.3) <= 1.0
    with pytest.raises(ValueError):
        m2m.cdf(5, 0.3)
    with pytest.raises(ValueError, match="neighbours"):
        fdp.Session(1.0).release(mechanism, points)  # the sketch protects add/remove neighbours
    with pytest.raises(ValueError, match="feature map"):
        fdp.Sketch(dim=2, map="wavelet").build(1.0)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------- summary states


def test_states_of_parts_merge_into_the_state_of_the_whole_and_release_the_same() -> None:
    curves = simulated(500, 20)
    mechanism = fdp.MeanCurve(bound="l1:5").build(curves, 1.0)
    whole = mechanism.summarize_part(curves)
    state = mechanism.empty_state()
    for rows in np.array_split(np.arange(curves.n)[::-1], 9):
        state = state.merge(mechanism.summarize_part(fdp.Curves(curves.values[rows], curves.grid)))
    assert state == whole and state.records == 500 and hash(state) == hash(whole) and "records=500" in repr(state)
    a = fdp.Session(1.0, seed=4).release_state(mechanism, fdp.SummaryState.from_bytes(state.to_bytes()))
    b = fdp.Session(1.0, seed=4).release(mechanism, curves)
    np.testing.assert_array_equal(a.curve, b.curve)


def test_damaged_foreign_and_incomplete_states_are_refused() -> None:
    import pickle

    curves = simulated(100, 20)
    mechanism = fdp.MeanCurve(bound="l1:5").build(curves, 1.0)
    state = mechanism.summarize_part(curves)
    data = state.to_bytes()
    with pytest.raises(ValueError, match="truncated"):
        fdp.SummaryState.from_bytes(data[:-3])
    with pytest.raises(ValueError, match="CRC"):
        fdp.SummaryState.from_bytes(data[:50] + bytes([data[50] ^ 1]) + data[51:])
    with pytest.raises(ValueError, match="not an fdp summary state"):
        fdp.SummaryState(b"garbage")
    other = fdp.MeanCurve(kernel="matern32:0.2", bound="l1:5").build(curves, 1.0)
    with pytest.raises(ValueError, match="different mechanisms"):
        state.merge(other.summarize_part(curves))
    session = fdp.Session(1.0)
    with pytest.raises(ValueError, match="another mechanism"):
        session.release_state(other, state)
    with pytest.raises(ValueError, match="records in the summary state"):
        session.release_state(mechanism, mechanism.summarize_part(fdp.Curves(curves.values[:50], curves.grid)))
    assert session.ledger == []
    # Mechanisms and states pickle (as Spark ships them) and come back the same.
    again = pickle.loads(pickle.dumps(mechanism))
    assert again.summarize_part(curves) == state and pickle.loads(pickle.dumps(state)) == state
    with pytest.raises(TypeError):
        session.release_state(mechanism, data)  # type: ignore[arg-type]


def test_density_and_sketch_states() -> None:
    rng = np.random.default_rng(8)
    points = np.column_stack([rng.uniform(size=1000), rng.uniform(size=1000)])
    kde = fdp.Density().build(1000, 1.0)
    merged = kde.summarize_part(points[:300, 0]).merge(kde.summarize_part(points[300:, 0]))
    assert merged == kde.summarize_part(points[:, 0]) and kde.empty_state().records == 0
    sketch = fdp.Sketch(dim=2).build(1.0)
    merged = sketch.empty_state().merge(sketch.summarize_part(points[:10])).merge(sketch.summarize_part(points[10:]))
    assert merged == sketch.summarize_part(points)
    kme = fdp.SyntheticDataset(centre=[0.5, 0.5], scale=1.0, synthetic_points=30).build(1000, 1.0, 1e-6)
    merged = kme.summarize_part(points[:123]).merge(kme.summarize_part(points[123:]))
    assert merged == kme.summarize_part(points)
    a = fdp.Session(1.0, 1e-6, seed=3).release_state(kme, merged)
    b = fdp.Session(1.0, 1e-6, seed=3).release(kme, points)
    np.testing.assert_array_equal(a.weights, b.weights)


# ----------------------------------------------------------------- the same release as Rust's CLI


def test_python_release_equals_the_rust_cli_release_bit_for_bit(tmp_path: Path) -> None:
    cli = docblocks.cli()
    if cli is None:
        pytest.skip("the fdp command line is not built (cargo build -p fdp-cli), and FDP_CLI is not set")
    assert cli.exists(), f"FDP_CLI={cli} does not exist"
    curves = simulated(150, 30, seed=9)
    values = curves.values.copy()
    values[3, 4] = np.nan  # a repaired record, on both sides
    header = "id," + ",".join(f"y_{t!r}" for t in curves.grid.tolist())
    rows = [f"r{i}," + ",".join("NA" if np.isnan(v) else repr(float(v)) for v in row) for i, row in enumerate(values)]
    csv = tmp_path / "curves.csv"
    csv.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    for mechanism, bound in [("iclp-rkhs", "l1:2"), ("bernstein", "sup:2")]:
        out = tmp_path / mechanism
        subprocess.run(
            [str(cli), "mean", "--csv", str(csv), "--columns", "y_", "--epsilon", "1", "--bound", bound,
             "--mechanism", mechanism, "--centre", "0.5", "--seed", "42", "--out", str(out), "--quiet"],
            check=True, capture_output=True,
        )
        rust = json.loads((out / "release.json").read_text(encoding="utf-8"))["output"]
        python = fdp.Session(1.0, seed=42).release(
            fdp.MeanCurve(mechanism=mechanism.replace("-", "_"), bound=bound, centre=0.5).build(fdp.Curves(values, curves.grid), 1.0),
            fdp.Curves(values, curves.grid),
        )
        assert rust["curve"] == python.curve.tolist(), mechanism
        assert rust["coefficients"] == python.coefficients.tolist(), mechanism
    # One grid rule at both doors: the same curves on ages 1-18 (column names y_1.0 ... y_18.0) give
    # the same bytes, and Python shows the release on the ages.
    ages = np.linspace(1.0, 18.0, curves.grid.size)
    header_ages = "id," + ",".join(f"y_{t!r}" for t in ages.tolist())
    csv_ages = tmp_path / "ages.csv"
    csv_ages.write_text(header_ages + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    out = tmp_path / "ages"
    subprocess.run(
        [str(cli), "mean", "--csv", str(csv_ages), "--columns", "y_", "--epsilon", "1", "--bound", "l1:2",
         "--centre", "0.5", "--seed", "42", "--out", str(out), "--quiet"],
        check=True, capture_output=True,
    )
    rust = json.loads((out / "release.json").read_text(encoding="utf-8"))["output"]
    on_ages = fdp.Curves(values, ages)
    python = fdp.Session(1.0, seed=42).release(fdp.MeanCurve(bound="l1:2", centre=0.5).build(on_ages, 1.0), on_ages)
    assert rust["curve"] == python.curve.tolist() and rust["coefficients"] == python.coefficients.tolist()
    np.testing.assert_array_equal(python.grid, ages)
    # The public frame: a range alone gives the same centre, ceiling, search and clamp at both doors.
    out = tmp_path / "range"
    subprocess.run(
        [str(cli), "mean", "--csv", str(csv), "--columns", "y_", "--epsilon", "1", "--range", "-0.5,1.5",
         "--seed", "42", "--out", str(out), "--quiet"],
        check=True, capture_output=True,
    )
    rust = json.loads((out / "release.json").read_text(encoding="utf-8"))["output"]
    framed = fdp.MeanCurve(range=(-0.5, 1.5)).build(fdp.Curves(values, curves.grid), 1.0)
    python = fdp.Session(1.0, seed=42).release(framed, fdp.Curves(values, curves.grid))
    assert rust["curve"] == python.curve.tolist()
    assert rust["coefficients"] == python.coefficients.tolist()


@pytest.mark.parametrize("module", ["fdp", "fdp.data", "fdp.mechanisms", "fdp.releases", "fdp.session", "fdp.sparse"])
def test_the_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {module} failed"


def test_the_peers_benchmark_runs_and_prints_its_records() -> None:
    """`examples/python/peers_mean.py` (issue 28's peer record) at a small n: fdp and numpy always;
    diffprivlib and OpenDP when the `bench` extra is installed (not in CI: a benchmark, not a test of
    them). Asserts the records' shape, not timings."""
    import sys

    script = Path(__file__).resolve().parents[2] / "examples" / "python" / "peers_mean.py"
    out = subprocess.run(
        [sys.executable, str(script), "--n", "2000", "--repeats", "1", "--polars-repeats", "0", "--no-rust"],
        check=True, capture_output=True, text=True, cwd=script.parent,
    ).stdout
    assert "peer tool=fdp_tuned n=2000 k=100" in out and "peer tool=numpy n=2000" in out
    summary = [line for line in out.splitlines() if line.startswith("peers ")]
    assert len(summary) == 1 and "numpy_cpu_over_fdp=" in summary[0]
