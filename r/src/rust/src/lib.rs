//! The compiled half of the R package `fdpriv` (`r/`), a thin layer over [`fdp::registry`].
//!
//! Every release goes through the one Rust path the command line and Python take: a [`Spec`] (JSON)
//! names a registered mechanism and its parameters, [`registry::build`] builds it for the public
//! [`Frame`] (n, the grid in the data's units, the privacy unit), a [`Session`] charges it stage by
//! stage and releases it. No calibration, sampler, default or dispatch lives here: a mechanism
//! registered in Rust is reachable from R with no edit here. The conversions the bindings share
//! (the curve grid, long tables) are [`fdp::front`]'s.
//!
//! **Errors never unwind into R.** Every function returns either its value or an error payload (a
//! list of class `fdpriv_error_payload` with the Rust message and its kind), which the R layer
//! (`R/internal.R`) turns into an R condition with `stop()`: `fdpriv_budget_exceeded` for an
//! overspending release, `fdpriv_error` otherwise.
//!
//! **Curves are not copied when R already holds them row by row.** The registry reads curves
//! row-major (`n x K`, one record per row). An R matrix is column-major, so a `K x n` matrix (one
//! curve per column, fda's layout) *is* that buffer and is borrowed as it is; an `n x K` matrix (one
//! curve per row) is transposed once, in cache-sized blocks.

use std::borrow::Cow;

use extendr_api::prelude::*;
use rayon::prelude::*;
use serde_json::json;

use fdp::data::CurveSet;
use fdp::front;
use fdp::noise::{Delta, Epsilon, NeighbourRelation};
use fdp::registry::{self, Built, Frame, Input, InputKind, Released, Spec};
use fdp::release::{CurveReleaseExt, PrivacyUnit, Session, SummaryState};

/// A glue failure: the message R shows, and its kind (`budget` or `error`).
struct Failure {
    kind: &'static str,
    message: String,
}

type Out<T> = std::result::Result<T, Failure>;

impl From<fdp::release::Error> for Failure {
    fn from(e: fdp::release::Error) -> Self {
        let kind = if matches!(e, fdp::release::Error::BudgetExceeded { .. }) { "budget" } else { "error" };
        Self { kind, message: e.to_string() }
    }
}

impl From<fdp::data::DataError> for Failure {
    fn from(e: fdp::data::DataError) -> Self {
        fail(e.to_string())
    }
}

fn fail(message: impl Into<String>) -> Failure {
    Failure { kind: "error", message: message.into() }
}

/// The value, or the error payload the R layer raises.
fn answer(result: Out<Robj>) -> Robj {
    match result {
        Ok(value) => value,
        Err(f) => {
            let payload = List::from_names_and_values(["message", "kind"], [r!(f.message), r!(f.kind)]);
            match payload {
                Ok(list) => {
                    let mut robj: Robj = list.into();
                    match robj.set_class(["fdpriv_error_payload"]) {
                        Ok(_) => robj,
                        Err(e) => r!(format!("fdpriv: {e}")),
                    }
                }
                Err(e) => r!(format!("fdpriv: {e}")),
            }
        }
    }
}

fn named(names: &[&str], values: Vec<Robj>) -> Out<Robj> {
    List::from_names_and_values(names, values).map(Robj::from).map_err(|e| fail(e.to_string()))
}

// ------------------------------------------------------------------------------ reading R values

/// A double vector (R's `numeric`), borrowed.
fn reals<'a>(x: &'a Robj, name: &str) -> Out<&'a [f64]> {
    x.as_real_slice().ok_or_else(|| fail(format!("{name} must be a numeric (double) vector")))
}

fn real(x: &Robj, name: &str) -> Out<f64> {
    match reals(x, name)? {
        [v] => Ok(*v),
        _ => Err(fail(format!("{name} must be one number"))),
    }
}

fn opt_real(x: &Robj, name: &str) -> Out<Option<f64>> {
    if x.is_null() { Ok(None) } else { real(x, name).map(Some) }
}

/// A count given as an R number (whole, non-negative, at most 2^53).
fn count(x: &Robj, name: &str) -> Out<usize> {
    let v = real(x, name)?;
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= 9_007_199_254_740_992.0 {
        Ok(v as usize)
    } else {
        Err(fail(format!("{name} must be a whole number >= 0, got {v}")))
    }
}

fn opt_seed(x: &Robj) -> Out<Option<u64>> {
    if x.is_null() { Ok(None) } else { count(x, "seed").map(|s| Some(s as u64)) }
}

fn text<'a>(x: &'a Robj, name: &str) -> Out<&'a str> {
    x.as_str().ok_or_else(|| fail(format!("{name} must be one string")))
}

fn flag(x: &Robj, name: &str) -> Out<bool> {
    x.as_bool().ok_or_else(|| fail(format!("{name} must be TRUE or FALSE")))
}

fn ints<'a>(x: &'a Robj, name: &str) -> Out<&'a [i32]> {
    x.as_integer_slice().ok_or_else(|| fail(format!("{name} must be an integer vector")))
}

fn bytes<'a>(x: &'a Robj, name: &str) -> Out<&'a [u8]> {
    x.as_raw_slice().ok_or_else(|| fail(format!("{name} must be a raw vector")))
}

fn element(list: &List, name: &str) -> Out<Robj> {
    list.iter().find(|(n, _)| *n == name).map(|(_, v)| v).ok_or_else(|| fail(format!("the data lack {name}")))
}

fn session(x: &Robj) -> Out<ExternalPtr<Session>> {
    ExternalPtr::<Session>::try_from(x).map_err(|_| fail("not an fdpriv session"))
}

fn mechanism(x: &Robj) -> Out<ExternalPtr<Mech>> {
    ExternalPtr::<Mech>::try_from(x).map_err(|_| fail("not an fdpriv mechanism"))
}

fn released(x: &Robj) -> Out<ExternalPtr<Released>> {
    ExternalPtr::<Released>::try_from(x).map_err(|_| fail("not an fdpriv release"))
}

fn json_text(value: &serde_json::Value) -> Out<Robj> {
    serde_json::to_string(value).map(|s| r!(s)).map_err(|e| fail(e.to_string()))
}

// ------------------------------------------------------------------------------ mechanisms

/// A registered mechanism built for its public frame.
struct Mech {
    built: Built,
    /// The domain of the frame's grid in the data's units (sparse records are read on it).
    domain: Option<(f64, f64)>,
}

/// Every registered mechanism with its parameters, defaults and an example (JSON).
#[extendr]
fn registered() -> Robj {
    let entries: Vec<serde_json::Value> = registry::REGISTRY.iter().map(registry::Entry::describe).collect();
    answer(json_text(&serde_json::Value::Array(entries)))
}

/// The privacy unit an R caller names: NULL (one record) or the person id variable's name.
fn unit_of(person_id: &Robj) -> Out<PrivacyUnit> {
    Ok(PrivacyUnit::of_id(if person_id.is_null() { None } else { Some(text(person_id, "id")?) }))
}

/// Builds the registered mechanism `spec` (JSON) for `n` records on `grid` (the data's units; NULL
/// for points), protecting one record or, with `person_id`, one person.
#[extendr]
fn build(spec: Robj, n: Robj, grid: Robj, person_id: Robj) -> Robj {
    answer((|| {
        let spec = Spec::from_json(text(&spec, "spec")?)?;
        let n = count(&n, "n")?;
        let grid = if grid.is_null() { None } else { Some(front::observation_grid(reals(&grid, "grid")?)?) };
        let domain = grid.as_ref().and_then(|g| g.domain().first().copied());
        let unit = unit_of(&person_id)?;
        let built = registry::build(&spec, &Frame::new(n, grid).protecting(unit))?;
        Ok(ExternalPtr::new(Mech { built, domain }).into())
    })())
}

/// What a built mechanism is, as JSON: its names, input, spec, warnings, unit, guarantee, stages,
/// accuracy preview, whether it merges, its neighbours and its display grid.
#[extendr]
fn mechanism_info(m: Robj) -> Robj {
    answer((|| {
        let m = mechanism(&m)?;
        let b = &m.built;
        let input = match b.input() {
            InputKind::Curves => "curves",
            InputKind::SparseCurves => "sparse_curves",
            InputKind::Points => "points",
            InputKind::Labelled => "labelled",
        };
        let person_id = match b.privacy_unit() {
            PrivacyUnit::Person { id_column } => Some(id_column.clone()),
            _ => None,
        };
        let (g, a) = (b.guarantee(), b.accuracy());
        let stages: Vec<serde_json::Value> = b
            .stages()
            .iter()
            .map(|s| json!({"stage": s.name, "epsilon": s.guarantee.epsilon(), "delta": s.guarantee.delta()}))
            .collect();
        json_text(&json!({
            "name": b.name(),
            "display_name": fdp::report::display_name(b.name()),
            "registered": b.spec().mechanism,
            "input": input,
            "spec": b.spec(),
            "warnings": b.warnings,
            "person_id": person_id,
            "epsilon": g.epsilon(),
            "delta": g.delta(),
            "stages": stages,
            "accuracy": {"expected_sq_error": a.expected_sq_error, "sq_error_sd": a.sq_error_sd, "upper_bound": a.upper_bound},
            "mergeable": b.is_mergeable(),
            "add_remove": b.guarantee().relation() == NeighbourRelation::AddRemoveOne,
            "display_grid": b.display_grid().map(|g| g.points().to_vec()),
        }))
    })())
}

// ------------------------------------------------------------------------------ data

/// `n x K` values in row-major order from an R matrix: borrowed when R holds the curves one per
/// column (`K x n`, `by_row = FALSE`), else transposed once (`n x K`, `by_row = TRUE`).
fn row_major<'a>(values: &'a [f64], n: usize, k: usize, by_row: bool) -> Out<Cow<'a, [f64]>> {
    if n.checked_mul(k) != Some(values.len()) {
        return Err(fail(format!("the values are not {n} x {k}")));
    }
    if !by_row || n <= 1 || k <= 1 {
        return Ok(Cow::Borrowed(values));
    }
    // Blocks of ROWS rows: each column's ROWS values are read in one contiguous run and scattered
    // into the block's rows (ROWS x K values, cache-resident), blocks on rayon's threads.
    const ROWS: usize = 64;
    let mut out = vec![0.0; values.len()];
    out.par_chunks_mut(ROWS * k).enumerate().for_each(|(block, chunk)| {
        let (first, rows) = (block * ROWS, chunk.len() / k);
        for j in 0..k {
            let column = &values[j * n + first..j * n + first + rows];
            for (r, value) in column.iter().enumerate() {
                chunk[r * k + j] = *value;
            }
        }
    });
    Ok(Cow::Owned(out))
}

/// `f` on the data an R caller handed over, read as `m`'s input kind: `data` is a named list —
/// curves `(values, n, k, by_row, grid, unit)`, sparse `(codes, t, y, n, unit)` (codes 0-based;
/// `unit` NULL or the person id's name: what one record is, checked against the mechanism's),
/// points `(values, n, d)` (an n x d R matrix), labelled `(x, y)`.
fn with_input<T>(m: &Mech, data: &Robj, f: impl FnOnce(Input<'_>) -> fdp::release::Result<T>) -> Out<T> {
    let list = List::try_from(data.clone()).map_err(|_| fail("the data must be a list"))?;
    match m.built.input() {
        InputKind::Curves => {
            let (values, grid) = (element(&list, "values")?, element(&list, "grid")?);
            let (n, k) = (count(&element(&list, "n")?, "n")?, count(&element(&list, "k")?, "k")?);
            let values = row_major(reals(&values, "values")?, n, k, flag(&element(&list, "by_row")?, "by_row")?)?;
            let grid = front::observation_grid(reals(&grid, "grid")?)?;
            let unit = unit_of(&element(&list, "unit")?)?;
            let (curves, _) = CurveSet::borrowed(grid, &values, None)?;
            Ok(f(Input::Curves { curves: &curves, unit: &unit })?)
        }
        InputKind::SparseCurves => {
            let domain = m.domain.ok_or_else(|| fail("this mechanism does not read sparse curves"))?;
            let (codes, t, y) = (element(&list, "codes")?, element(&list, "t")?, element(&list, "y")?);
            let n = count(&element(&list, "n")?, "n")?;
            let unit = unit_of(&element(&list, "unit")?)?;
            let data = front::long_to_sparse(ints(&codes, "ids")?, reals(&t, "t")?, reals(&y, "y")?, n, domain)?;
            Ok(f(Input::Sparse { curves: &data, unit: &unit })?)
        }
        InputKind::Points => {
            let values = element(&list, "values")?;
            let (n, dim) = (count(&element(&list, "n")?, "n")?, count(&element(&list, "d")?, "d")?);
            let data = row_major(reals(&values, "points")?, n, dim, true)?;
            Ok(f(Input::Points { data: &data, dim })?)
        }
        InputKind::Labelled => {
            let (x, y) = (element(&list, "x")?, element(&list, "y")?);
            Ok(f(Input::Labelled { x: reals(&x, "x")?, y: reals(&y, "y")? })?)
        }
    }
}

/// A long table `(codes, t, y)` (codes 0-based, one per observation) on the public grid `points`:
/// `records x K` values, row-major (see [`front::long_onto_grid`]).
#[extendr]
fn long_onto_grid(codes: Robj, t: Robj, y: Robj, points: Robj, records: Robj) -> Robj {
    answer((|| {
        let values = front::long_onto_grid(
            ints(&codes, "ids")?,
            reals(&t, "t")?,
            reals(&y, "y")?,
            reals(&points, "grid")?,
            count(&records, "records")?,
        )?;
        Ok(r!(values))
    })())
}

/// `c(complete, interpolated, defaulted)`: how many curves (an R matrix, see [`row_major`]) need
/// which repair. Describes the private data: for the curator only.
#[extendr]
fn repair_counts(values: Robj, n: Robj, k: Robj, by_row: Robj, grid: Robj) -> Robj {
    answer((|| {
        let (n, k) = (count(&n, "n")?, count(&k, "k")?);
        let values = row_major(reals(&values, "values")?, n, k, flag(&by_row, "by_row")?)?;
        let (_, report) = CurveSet::borrowed(front::observation_grid(reals(&grid, "grid")?)?, &values, None)?;
        Ok(r!([report.complete as f64, report.interpolated as f64, report.defaulted as f64]))
    })())
}

/// One record per person ([`CurveSet::per_person`]): `codes` (0-based, one per row) name the
/// persons. Returns the person curves (row-major, persons in order of first appearance), the rows
/// per person and the row-level repair counts (both for the curator only).
#[extendr]
fn per_person(values: Robj, n: Robj, k: Robj, by_row: Robj, grid: Robj, codes: Robj) -> Robj {
    answer((|| {
        let (n, k) = (count(&n, "n")?, count(&k, "k")?);
        let values = row_major(reals(&values, "values")?, n, k, flag(&by_row, "by_row")?)?;
        let grid = front::observation_grid(reals(&grid, "grid")?)?;
        let (curves, report) = CurveSet::borrowed(grid, &values, None)?;
        let persons = curves.per_person(ints(&codes, "ids")?)?;
        let rows: Vec<f64> = persons.rows.iter().map(|&r| r as f64).collect();
        let counts = [report.complete as f64, report.interpolated as f64, report.defaulted as f64];
        named(&["values", "rows", "repairs"], vec![r!(persons.curves.values()), r!(rows), r!(counts)])
    })())
}

// ------------------------------------------------------------------------------ sessions

fn with_seed(session: Session, seed: Option<u64>) -> Session {
    match seed {
        Some(s) => session.with_seed(s),
        None => session,
    }
}

/// A session of budget `(epsilon, delta)` (delta NULL: pure), replace-one or add/remove-one
/// neighbours, with an opt-in seed (recorded in every release).
#[extendr]
fn session_new(epsilon: Robj, delta: Robj, add_remove: Robj, seed: Robj) -> Robj {
    answer((|| {
        let epsilon = Epsilon::new(real(&epsilon, "epsilon")?).map_err(|e| fail(e.to_string()))?;
        let delta = opt_real(&delta, "delta")?.map(Delta::new).transpose().map_err(|e| fail(e.to_string()))?;
        let relation = if flag(&add_remove, "add_remove")? {
            NeighbourRelation::AddRemoveOne
        } else {
            NeighbourRelation::ReplaceOne
        };
        let session = Session::new(relation, epsilon, delta)?;
        Ok(ExternalPtr::new(with_seed(session, opt_seed(&seed)?)).into())
    })())
}

/// A session continued from its JSON ledger (verified: hash chain, budget, totals).
#[extendr]
fn session_from_json(json: Robj, seed: Robj) -> Robj {
    answer((|| {
        let session = Session::from_json(text(&json, "ledger")?)?;
        Ok(ExternalPtr::new(with_seed(session, opt_seed(&seed)?)).into())
    })())
}

/// The ledger as JSON (what Python's `Session.to_json` and the command line write).
#[extendr]
fn session_to_json(s: Robj) -> Robj {
    answer((|| Ok(r!(session(&s)?.to_json()?)))())
}

/// Writes the ledger atomically (temporary file, fsync, rename).
#[extendr]
fn session_save(s: Robj, path: Robj) -> Robj {
    answer((|| {
        session(&s)?.save(std::path::Path::new(text(&path, "path")?))?;
        Ok(r!(true))
    })())
}

/// `c(spent ε, spent δ, remaining ε, remaining δ)`, the ledger's head hash and the neighbours.
#[extendr]
fn session_state(s: Robj) -> Robj {
    answer((|| {
        let s = session(&s)?;
        let ((se, sd), (re, rd)) = (s.spent(), s.remaining());
        let add_remove = s.relation() == NeighbourRelation::AddRemoveOne;
        named(&["totals", "head", "add_remove"], vec![r!([se, sd, re, rd]), r!(s.head().to_string()), r!(add_remove)])
    })())
}

/// Charges `m` to the session and releases it on `data` ([`with_input`]): nothing is charged when
/// the data are not what it was built for, or the budget would be exceeded. Only when the
/// environment variable `FDPRIV_CORE_TIMING` is set (the overhead benchmark, `r/bench/overhead.R`)
/// the release carries the attribute `core_seconds`, the wall time of [`Built::release`] alone:
/// a running time depends on the data (their size, the records the repair touches), so it is
/// never attached to a release that might be saved or published.
#[extendr]
fn session_release(s: Robj, m: Robj, data: Robj) -> Robj {
    answer((|| {
        let (mut s, m) = (session(&s)?, mechanism(&m)?);
        let session: &mut Session = &mut s;
        let mut core_seconds = 0.0;
        let release = with_input(&m, &data, |input| {
            let start = std::time::Instant::now();
            let release = m.built.release(session, input);
            core_seconds = start.elapsed().as_secs_f64();
            release
        })?;
        // The time of the registry's release itself (what the command line and Python call), so
        // that the R layer's overhead (conversions, the transpose) can be measured against it.
        let mut robj: Robj = ExternalPtr::new(release).into();
        if std::env::var_os("FDPRIV_CORE_TIMING").is_some() {
            robj.set_attrib("core_seconds", core_seconds).map_err(|e| fail(e.to_string()))?;
        }
        Ok(robj)
    })())
}

/// Charges `m` and releases it from a complete summary state (raw bytes).
#[extendr]
fn session_release_state(s: Robj, m: Robj, state: Robj) -> Robj {
    answer((|| {
        let (mut s, m) = (session(&s)?, mechanism(&m)?);
        let state = SummaryState::from_bytes(bytes(&state, "state")?)?;
        let release = m.built.release_state(&mut s, &state)?;
        Ok(ExternalPtr::new(release).into())
    })())
}

// ------------------------------------------------------------------------------ summary states

/// The exact summary state of one part of the data (any number of records), as raw bytes.
#[extendr]
fn part_state(m: Robj, data: Robj) -> Robj {
    answer((|| {
        let m = mechanism(&m)?;
        let state = with_input(&m, &data, |input| m.built.part_state(input))?;
        Ok(Raw::from_bytes(&state.to_bytes()).into())
    })())
}

/// Two states of the same mechanism merged (exact), as raw bytes.
#[extendr]
fn merge_states(a: Robj, b: Robj) -> Robj {
    answer((|| {
        let mut a = SummaryState::from_bytes(bytes(&a, "state")?)?;
        a.merge(&SummaryState::from_bytes(bytes(&b, "state")?)?)?;
        Ok(Raw::from_bytes(&a.to_bytes()).into())
    })())
}

/// The number of records in a state (after checking it).
#[extendr]
fn state_records(state: Robj) -> Robj {
    answer((|| Ok(r!(SummaryState::from_bytes(bytes(&state, "state")?)?.records() as f64)))())
}

// ------------------------------------------------------------------------------ releases

/// The release as JSON (`release.json`: what the command line writes).
#[extendr]
fn release_to_json(r: Robj) -> Robj {
    answer((|| Ok(r!(released(&r)?.to_json()?)))())
}

/// The released numbers by kind, as a named list (`kind` first).
#[extendr]
fn release_fields(r: Robj) -> Robj {
    answer((|| {
        let r = released(&r)?;
        match &*r {
            Released::Curve(c) => {
                let sd = c.output().noise_sd().map_or_else(|| r!(()), |sd| r!(sd));
                named(
                    &["kind", "curve", "grid", "coefficients", "noise_sd"],
                    vec![r!("curve"), r!(c.curve()), r!(c.grid().points()), r!(c.coefficients()), sd],
                )
            }
            Released::Covariance(c) => {
                let out = c.output();
                named(
                    &["kind", "mean", "grid", "components"],
                    vec![r!("covariance"), r!(out.mean_curve()), r!(out.grid().points()), r!(out.components() as f64)],
                )
            }
            Released::Weighted(w) => {
                let out = w.output();
                named(
                    &["kind", "points", "weights", "dim"],
                    vec![r!("weighted"), r!(&out.points[..]), r!(&out.weights[..]), r!(out.dim as f64)],
                )
            }
            Released::Sketch(s) => {
                let out = s.output();
                named(&["kind", "sketch", "noisy_count"], vec![r!("sketch"), r!(&out.sketch[..]), r!(out.noisy_count)])
            }
            Released::Coefficients(c) => named(&["kind", "values"], vec![r!("coefficients"), r!(&c.output().0[..])]),
            _ => Err(fail("a release of a kind this package does not know: update fdpriv")),
        }
    })())
}

fn curve_release(r: &Released) -> Out<&fdp::release::Release<fdp::release::Curve>> {
    match r {
        Released::Curve(c) => Ok(c),
        _ => Err(fail("not a curve release")),
    }
}

/// The pointwise band `curve ± z sd` (NULL when the noise has no pointwise sd).
#[extendr]
fn release_band(r: Robj, z: Robj) -> Robj {
    answer((|| {
        let r = released(&r)?;
        match curve_release(&r)?.output().band(real(&z, "z")?)? {
            Some((lower, upper)) => named(&["lower", "upper"], vec![r!(lower), r!(upper)]),
            None => Ok(r!(())),
        }
    })())
}

/// FPCA of a released covariance (post-processing): eigenvalues, eigenfunctions (k x K, row-major)
/// and explained variance of the top `k`.
#[extendr]
fn release_fpca(r: Robj, k: Robj) -> Robj {
    answer((|| {
        let r = released(&r)?;
        let Released::Covariance(c) = &*r else { return Err(fail("not a covariance release")) };
        let fpca = c.output().fpca(count(&k, "k")?)?;
        let functions: Vec<f64> = fpca.eigenfunctions().concat();
        named(
            &["values", "functions", "explained", "components"],
            vec![r!(fpca.eigenvalues()), r!(functions), r!(fpca.explained_variance()), r!(fpca.components() as i32)],
        )
    })())
}

/// M2M estimates read off a released sketch (post-processing, no budget): means, covariance
/// (row-major) and the weights of the public prior points.
#[extendr]
fn release_m2m(r: Robj, m: Robj, prior_points: Robj, prior_seed: Robj) -> Robj {
    answer((|| {
        let (r, m) = (released(&r)?, mechanism(&m)?);
        let Released::Sketch(sketch) = &*r else { return Err(fail("not a sketch release")) };
        let summary =
            m.built.m2m(sketch, count(&prior_points, "prior_points")?, count(&prior_seed, "prior_seed")? as u64)?;
        named(
            &["means", "covariance", "weights"],
            vec![r!(summary.means), r!(summary.covariance), r!(summary.estimator.weights())],
        )
    })())
}

/// Writes `release.json`, the figure (`curves.svg`, or `fpca.svg` with the top `k` components) and
/// `report.md` into `out` (fdp's own report writer, as the command line and Python); returns the
/// report's path. `x` (NULL or the grid in the data's units) is the figure's x axis.
#[extendr]
#[allow(clippy::too_many_arguments)]
fn release_write_report(r: Robj, out: Robj, title: Robj, s: Robj, notes: Robj, labels: Robj, x: Robj, k: Robj) -> Robj {
    answer((|| {
        let (r, s) = (released(&r)?, session(&s)?);
        let notes: Vec<String> = if notes.is_null() {
            Vec::new()
        } else {
            notes
                .as_str_vector()
                .ok_or_else(|| fail("notes must be a character vector"))?
                .iter()
                .map(|n| n.to_string())
                .collect()
        };
        let labels = labels.as_str_vector().ok_or_else(|| fail("labels must be two strings"))?;
        let [x_label, y_label] = labels.as_slice() else { return Err(fail("labels must be two strings")) };
        let x = if x.is_null() { None } else { Some(reals(&x, "x")?.to_vec()) };
        let axes = front::FigureAxes { x, ..front::FigureAxes::named(*x_label, *y_label) };
        let (out, title) = (std::path::Path::new(text(&out, "out")?), text(&title, "title")?);
        let path = match &*r {
            Released::Curve(c) => front::write_curve_report(out, title, c, &s, &notes, &axes)?,
            Released::Covariance(c) => front::write_fpca_report(out, title, c, count(&k, "k")?, &s, &notes, &axes)?,
            _ => return Err(fail("reports are written for curves and covariances; use to_json() for this release")),
        };
        Ok(r!(path.display().to_string()))
    })())
}

/// fdp's shared front-door constants: the M2M prior's size and seed.
#[extendr]
fn front_defaults() -> Robj {
    answer(named(
        &["m2m_prior_points", "m2m_prior_seed"],
        vec![r!(front::M2M_PRIOR_POINTS as f64), r!(front::M2M_PRIOR_SEED as f64)],
    ))
}

extendr_module! {
    mod fdpriv;
    fn registered;
    fn build;
    fn mechanism_info;
    fn long_onto_grid;
    fn repair_counts;
    fn per_person;
    fn session_new;
    fn session_from_json;
    fn session_to_json;
    fn session_save;
    fn session_state;
    fn session_release;
    fn session_release_state;
    fn part_state;
    fn merge_states;
    fn state_records;
    fn release_to_json;
    fn release_fields;
    fn release_band;
    fn release_fpca;
    fn release_m2m;
    fn release_write_report;
    fn front_defaults;
}
