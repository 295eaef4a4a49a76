//! `fdp._fdp`: the compiled half of the Python package (`python/fdp`), a thin layer over
//! [`fdp::front`].
//!
//! Every release goes through the one Rust path: a request from `fdp::front` builds the mechanism,
//! a [`Session`] charges it and releases it. Curves come in as read-only numpy views and are not
//! copied unless a record needs repair ([`CurveSet::borrowed`]); the interpreter lock is released
//! while Rust computes. Summary states ([`SummaryState`]) cross as bytes, for partial summaries built
//! elsewhere (e.g. Spark executors) and merged exactly. Errors become Python exceptions with the Rust message: bad parameters
//! `ValueError`, an overspending release `fdp.BudgetExceededError`, files `OSError`.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use fdp::data::{CurveSet, SparseCurves, onto_grid};
use fdp::estimators::covariance::Covariance;
use fdp::estimators::{GridPoints, SparseBinnedMean, TunedCovariance};
use fdp::front::{
    AnyKde, AnyMean, KdeMethod, KdeRequest, KmeRequest, MeanMethod, MeanRequest, SketchRequest, TuningMode,
};
use fdp::functional::{Curve, CurveReleaseExt};
use fdp::kme::{M2mEstimator, PointSet, PrivateSketch, SyntheticData};
use fdp::mercer::{Grid, Stationary, StationaryShape};
use fdp::noise::{Delta, Epsilon, NeighbourRelation};
use fdp::release::{
    ClippingBound, Error, Mechanism, MergeableMechanism, PerUnit, PrivacyUnit, Release, Session, Sketch, SummaryState,
    WeightedSample,
};

create_exception!(
    _fdp,
    BudgetExceededError,
    PyRuntimeError,
    "A release would spend more than the session has left; nothing was released or charged."
);

/// The Python exception for a Rust error: the same message, a class by kind.
fn py_err(e: Error) -> PyErr {
    let message = e.to_string();
    match e {
        Error::BudgetExceeded { .. } => BudgetExceededError::new_err(message),
        Error::Write(_) => PyOSError::new_err(message),
        Error::Json(_) => PyValueError::new_err(message),
        Error::Noise(fdp::noise::NoiseError::Entropy(_)) => PyRuntimeError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

fn checked_epsilon(value: f64) -> PyResult<Epsilon> {
    Epsilon::new(value).map_err(|e| PyValueError::new_err(e.to_string()))
}

fn checked_delta(value: Option<f64>) -> PyResult<Option<Delta>> {
    value.map(|d| Delta::new(d).map_err(|e| PyValueError::new_err(e.to_string()))).transpose()
}

fn parse<T: std::str::FromStr<Err: std::fmt::Display>>(text: &str) -> PyResult<T> {
    text.parse().map_err(|e: T::Err| PyValueError::new_err(e.to_string()))
}

/// A contiguous slice of a numpy array (the Python layer makes arrays C-contiguous float64).
fn slice<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    name: &str,
) -> PyResult<&'a [T]> {
    array.as_slice().map_err(|_| PyValueError::new_err(format!("{name} must be a C-contiguous array")))
}

/// The grid of a curve set: the points with trapezoid weights (as for a CSV's numeric column names).
fn trapezoid_grid(points: &[f64]) -> PyResult<Grid> {
    let grid = if points.len() == 1 {
        Grid::with_weights(points.to_vec(), vec![1.0])
    } else {
        Grid::trapezoid_points(points.to_vec())
    };
    grid.map_err(|e| PyValueError::new_err(format!("grid: {e}")))
}

/// A privacy session: the total budget, the randomness and the ledger of one dataset.
#[pyclass(module = "fdp._fdp")]
struct RustSession {
    inner: Session,
}

#[pymethods]
impl RustSession {
    #[new]
    #[pyo3(signature = (epsilon, delta=None, add_remove=false, seed=None))]
    fn new(epsilon: f64, delta: Option<f64>, add_remove: bool, seed: Option<u64>) -> PyResult<Self> {
        let relation = if add_remove { NeighbourRelation::AddRemoveOne } else { NeighbourRelation::ReplaceOne };
        let session = Session::new(relation, checked_epsilon(epsilon)?, checked_delta(delta)?).map_err(py_err)?;
        Ok(Self { inner: with_seed(session, seed) })
    }

    /// A session continued from its JSON ledger.
    #[staticmethod]
    #[pyo3(signature = (json, seed=None))]
    fn from_json(json: &str, seed: Option<u64>) -> PyResult<Self> {
        Ok(Self { inner: with_seed(Session::from_json(json).map_err(py_err)?, seed) })
    }

    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(py_err)
    }

    /// Writes the ledger atomically (temporary file, fsync, rename).
    fn save(&self, path: std::path::PathBuf) -> PyResult<()> {
        self.inner.save(&path).map_err(py_err)
    }

    /// The hash of the ledger's last link (hex SHA-256).
    fn head(&self) -> String {
        self.inner.head().to_string()
    }

    fn spent(&self) -> (f64, f64) {
        self.inner.spent()
    }

    fn remaining(&self) -> (f64, f64) {
        self.inner.remaining()
    }

    fn add_remove(&self) -> bool {
        self.inner.relation() == NeighbourRelation::AddRemoveOne
    }

    /// Releases a mean-curve mechanism on `values` (n x K, C-contiguous) observed on `grid`.
    fn release_mean(
        &mut self,
        py: Python<'_>,
        mechanism: &MeanMechanism,
        values: PyReadonlyArray2<'_, f64>,
        grid: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<CurveRelease> {
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(CurveRelease { inner: on_unit_curves(py, &values, &grid, |curves| session.release(inner, curves))? })
    }

    /// Releases a sparse-curve mean mechanism on the `n` records of a long table: `codes[r]` the
    /// record (0..n) of observation r at time `t[r]` (the data's units) with value `y[r]`.
    fn release_sparse_mean(
        &mut self,
        py: Python<'_>,
        mechanism: &SparseMeanMechanism,
        codes: PyReadonlyArray1<'_, i64>,
        t: PyReadonlyArray1<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
        n: usize,
    ) -> PyResult<CurveRelease> {
        let data = mechanism.records(slice(&codes, "codes")?, slice(&t, "t")?, slice(&y, "y")?, n)?;
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(CurveRelease { inner: py.detach(move || session.release(inner, &data)).map_err(py_err)? })
    }

    /// Releases a covariance (FPCA) mechanism on `values` (n x K, C-contiguous) observed on `grid`.
    fn release_fpca(
        &mut self,
        py: Python<'_>,
        mechanism: &FpcaMechanism,
        values: PyReadonlyArray2<'_, f64>,
        grid: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<CovarianceRelease> {
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(CovarianceRelease { inner: on_unit_curves(py, &values, &grid, |curves| session.release(inner, curves))? })
    }

    /// Releases a density mechanism on 1-D `points`.
    fn release_kde(
        &mut self,
        py: Python<'_>,
        mechanism: &KdeMechanism,
        points: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<CurveRelease> {
        let points = slice(&points, "points")?;
        let (session, inner, grid) = (&mut self.inner, &mechanism.inner, &mechanism.grid);
        let release = py.detach(move || {
            let snapped = GridPoints::snap(grid, points)?;
            session.release(inner, &snapped)
        });
        Ok(CurveRelease { inner: release.map_err(py_err)? })
    }

    /// Releases a synthetic weighted dataset of `points` (n x D, C-contiguous).
    fn release_kme(
        &mut self,
        py: Python<'_>,
        mechanism: &KmeMechanism,
        points: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<WeightedRelease> {
        Ok(WeightedRelease { inner: on_points(py, &points, |p| self.inner.release(&mechanism.inner, p))? })
    }

    /// Releases a private sketch of `points` (n x D in [0, 1]^D, C-contiguous).
    fn release_sketch(
        &mut self,
        py: Python<'_>,
        mechanism: &SketchMechanism,
        points: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<SketchRelease> {
        Ok(SketchRelease { inner: on_points(py, &points, |p| self.inner.release(&mechanism.inner, p))? })
    }
}

/// `f` on the points of a C-contiguous n x D array (copied once into a point set, whose non-finite
/// records become the public default), with the interpreter lock released.
fn on_points<T: Send>(
    py: Python<'_>,
    points: &PyReadonlyArray2<'_, f64>,
    f: impl FnOnce(&PointSet) -> fdp::release::Result<T> + Send,
) -> PyResult<T> {
    let dim = points.shape()[1];
    let data = slice(points, "points")?;
    py.detach(move || f(&PointSet::with_default(dim, data.to_vec(), None)?)).map_err(py_err)
}

/// Releases from complete summary states (bytes), one method per mechanism family.
#[pymethods]
impl RustSession {
    fn release_mean_state(
        &mut self,
        py: Python<'_>,
        mechanism: &MeanMechanism,
        state: &[u8],
    ) -> PyResult<CurveRelease> {
        let state = SummaryState::from_bytes(state).map_err(py_err)?;
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(CurveRelease { inner: py.detach(move || session.release_state(inner, &state)).map_err(py_err)? })
    }

    fn release_sparse_mean_state(
        &mut self,
        py: Python<'_>,
        mechanism: &SparseMeanMechanism,
        state: &[u8],
    ) -> PyResult<CurveRelease> {
        let state = SummaryState::from_bytes(state).map_err(py_err)?;
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(CurveRelease { inner: py.detach(move || session.release_state(inner, &state)).map_err(py_err)? })
    }

    fn release_fpca_state(
        &mut self,
        py: Python<'_>,
        mechanism: &FpcaMechanism,
        state: &[u8],
    ) -> PyResult<CovarianceRelease> {
        let state = SummaryState::from_bytes(state).map_err(py_err)?;
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(CovarianceRelease { inner: py.detach(move || session.release_state(inner, &state)).map_err(py_err)? })
    }

    fn release_kde_state(&mut self, py: Python<'_>, mechanism: &KdeMechanism, state: &[u8]) -> PyResult<CurveRelease> {
        let state = SummaryState::from_bytes(state).map_err(py_err)?;
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(CurveRelease { inner: py.detach(move || session.release_state(inner, &state)).map_err(py_err)? })
    }

    fn release_kme_state(
        &mut self,
        py: Python<'_>,
        mechanism: &KmeMechanism,
        state: &[u8],
    ) -> PyResult<WeightedRelease> {
        let state = SummaryState::from_bytes(state).map_err(py_err)?;
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(WeightedRelease { inner: py.detach(move || session.release_state(inner, &state)).map_err(py_err)? })
    }

    fn release_sketch_state(
        &mut self,
        py: Python<'_>,
        mechanism: &SketchMechanism,
        state: &[u8],
    ) -> PyResult<SketchRelease> {
        let state = SummaryState::from_bytes(state).map_err(py_err)?;
        let (session, inner) = (&mut self.inner, &mechanism.inner);
        Ok(SketchRelease { inner: py.detach(move || session.release_state(inner, &state)).map_err(py_err)? })
    }
}

/// Runs `f` (without the interpreter lock) on the curves `values` (n x K, C-contiguous) observed on
/// `grid`: read and repaired on the grid as given, then on [0, 1] (the command line's rule).
fn on_unit_curves<T: Send>(
    py: Python<'_>,
    values: &PyReadonlyArray2<'_, f64>,
    grid: &PyReadonlyArray1<'_, f64>,
    f: impl FnOnce(&CurveSet) -> fdp::release::Result<T> + Send,
) -> PyResult<T> {
    let values = slice(values, "values")?;
    let grid = trapezoid_grid(slice(grid, "grid")?)?;
    py.detach(move || {
        let (curves, _) = CurveSet::borrowed(grid, values, None)?;
        f(&fdp::front::on_unit_interval(&curves)?)
    })
    .map_err(py_err)
}

/// The partial state of `part` (one part of the data) as bytes.
fn part_state<D: ?Sized, M: MergeableMechanism<D>>(mechanism: &M, part: &D) -> fdp::release::Result<Vec<u8>> {
    let mut state = mechanism.empty_state();
    mechanism.update_state(&mut state, part)?;
    Ok(state.to_bytes())
}

#[pymethods]
impl MeanMechanism {
    /// Warnings about the request's public choices (never about the data).
    fn warnings(&self) -> Vec<String> {
        self.warnings.clone()
    }

    /// The summary state of some curves (`values` n_part x K on `grid`), as bytes.
    fn part_state<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArray2<'_, f64>,
        grid: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let inner = &self.inner;
        Ok(PyBytes::new(py, &on_unit_curves(py, &values, &grid, |curves| part_state(inner, curves))?))
    }
}

#[pymethods]
impl KdeMechanism {
    /// The summary state of some 1-D points, as bytes.
    fn part_state<'py>(&self, py: Python<'py>, points: PyReadonlyArray1<'_, f64>) -> PyResult<Bound<'py, PyBytes>> {
        let points = slice(&points, "points")?;
        let (inner, grid) = (&self.inner, &self.grid);
        let bytes = py.detach(move || part_state(inner, &GridPoints::snap(grid, points)?)).map_err(py_err)?;
        Ok(PyBytes::new(py, &bytes))
    }
}

#[pymethods]
impl SketchMechanism {
    /// The summary state of some points (n_part x D), as bytes.
    fn part_state<'py>(&self, py: Python<'py>, points: PyReadonlyArray2<'_, f64>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = on_points(py, &points, |p| part_state(&self.inner, p))?;
        Ok(PyBytes::new(py, &bytes))
    }
}

#[pymethods]
impl KmeMechanism {
    /// The summary state of some points (n_part x D), as bytes.
    fn part_state<'py>(&self, py: Python<'py>, points: PyReadonlyArray2<'_, f64>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = on_points(py, &points, |p| part_state(&self.inner, p))?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// `(complete, interpolated, defaulted)`: how many of the curves (`values` n x K on `grid`) need
/// which repair. Describes the private data: for the curator only.
#[pyfunction]
fn repair_counts(
    py: Python<'_>,
    values: PyReadonlyArray2<'_, f64>,
    grid: PyReadonlyArray1<'_, f64>,
) -> PyResult<(usize, usize, usize)> {
    let values = slice(&values, "values")?;
    let grid = trapezoid_grid(slice(&grid, "grid")?)?;
    let report = py.detach(move || CurveSet::borrowed(grid, values, None).map(|(_, r)| r)).map_err(data_err)?;
    Ok((report.complete, report.interpolated, report.defaulted))
}

fn data_err(e: fdp::data::DataError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// One record per person: each row repaired, then each person's mean curve
/// ([`CurveSet::per_person`]); `codes` (one per row) name the persons. Returns the person curves
/// (row-major, persons in order of first appearance), the rows per person and the row-level
/// `(complete, interpolated, defaulted)` counts (both for the curator only).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn per_person<'py>(
    py: Python<'py>,
    values: PyReadonlyArray2<'_, f64>,
    grid: PyReadonlyArray1<'_, f64>,
    codes: PyReadonlyArray1<'_, i64>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, Vec<usize>, (usize, usize, usize))> {
    let values = slice(&values, "values")?;
    let codes = slice(&codes, "codes")?;
    let grid = trapezoid_grid(slice(&grid, "grid")?)?;
    let (persons, report) = py
        .detach(move || {
            let (curves, report) = CurveSet::borrowed(grid, values, None)?;
            Ok::<_, fdp::data::DataError>((curves.per_person(codes)?, report))
        })
        .map_err(data_err)?;
    let counts = (report.complete, report.interpolated, report.defaulted);
    Ok((PyArray1::from_slice(py, persons.curves.values()), persons.rows, counts))
}

/// Observations `(code, t, y)` of a long table on the public grid `points`: one row per code
/// (`0..records`), each record's observations interpolated onto the grid ([`onto_grid`]; NaN where
/// a record has no usable observation, repaired later like any missing value). Row-major.
#[pyfunction]
fn long_onto_grid<'py>(
    py: Python<'py>,
    codes: PyReadonlyArray1<'_, i64>,
    t: PyReadonlyArray1<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    points: PyReadonlyArray1<'_, f64>,
    records: usize,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (codes, t, y, points) = (slice(&codes, "codes")?, slice(&t, "t")?, slice(&y, "y")?, slice(&points, "grid")?);
    if t.len() != codes.len() || y.len() != codes.len() {
        return Err(PyValueError::new_err("ids, t and y must have the same length"));
    }
    let mut observations: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); records];
    for ((&code, &t), &y) in codes.iter().zip(t).zip(y) {
        let record = usize::try_from(code).ok().filter(|&c| c < records);
        let Some(record) = record else {
            return Err(PyValueError::new_err(format!("record code {code} is not in 0..{records}")));
        };
        observations[record].0.push(t);
        observations[record].1.push(y);
    }
    let values: Vec<f64> = observations.iter().flat_map(|(t, y)| onto_grid(t, y, points)).collect();
    Ok(PyArray1::from_vec(py, values))
}

/// Merges two summary states (bytes) of the same mechanism; exact.
#[pyfunction]
fn merge_states<'py>(py: Python<'py>, a: &[u8], b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    let mut a = SummaryState::from_bytes(a).map_err(py_err)?;
    a.merge(&SummaryState::from_bytes(b).map_err(py_err)?).map_err(py_err)?;
    Ok(PyBytes::new(py, &a.to_bytes()))
}

/// `(records, fingerprint)` of a state (bytes), after checking it.
#[pyfunction]
fn state_info(state: &[u8]) -> PyResult<(u64, u64)> {
    let state = SummaryState::from_bytes(state).map_err(py_err)?;
    Ok((state.records(), state.fingerprint()))
}

fn with_seed(session: Session, seed: Option<u64>) -> Session {
    match seed {
        Some(s) => session.with_seed(s),
        None => session,
    }
}

/// What every mechanism tells before it is released: name, guarantee, stages, accuracy preview.
macro_rules! mechanism_methods {
    ($t:ty, $data:ty) => {
        #[pymethods]
        impl $t {
            fn name(&self) -> &'static str {
                Mechanism::<$data>::name(&self.inner)
            }
            /// `None` (one record) or the id column naming the persons.
            fn person_id(&self) -> Option<String> {
                match Mechanism::<$data>::privacy_unit(&self.inner) {
                    PrivacyUnit::Person { id_column } => Some(id_column),
                    _ => None,
                }
            }
            /// `(ε, δ)` of one release.
            fn guarantee(&self) -> (f64, f64) {
                let g = Mechanism::<$data>::guarantee(&self.inner);
                (g.epsilon(), g.delta())
            }
            /// `[(stage, ε, δ), ...]`, charged in this order.
            fn stages(&self) -> Vec<(String, f64, f64)> {
                Mechanism::<$data>::stages(&self.inner)
                    .into_iter()
                    .map(|s| (s.name, s.guarantee.epsilon(), s.guarantee.delta()))
                    .collect()
            }
            /// `(E||noise||², sd or None, whether the first is only an upper bound)`.
            fn accuracy(&self) -> (f64, Option<f64>, bool) {
                let a = Mechanism::<$data>::accuracy(&self.inner);
                (a.expected_sq_error, a.sq_error_sd, a.upper_bound)
            }
        }
    };
}

/// A mean-curve mechanism built for a grid and n, protecting one record or one person.
#[pyclass(module = "fdp._fdp")]
struct MeanMechanism {
    inner: PerUnit<AnyMean>,
    /// The request's warnings about its public choices (`MeanRequest::warnings`), issued by Python.
    warnings: Vec<String>,
}

mechanism_methods!(MeanMechanism, CurveSet<'_>);

/// Builds a mean-curve mechanism (see `fdp::front::MeanRequest`).
#[pyfunction]
#[pyo3(signature = (method, kernel, bound, epsilon, grid, n, delta=None, tuning="private", centre=None, range=None, psi=None, components=None, degree=None, person_id=None))]
#[allow(clippy::too_many_arguments)]
fn build_mean(
    py: Python<'_>,
    method: &str,
    kernel: &str,
    bound: Option<&str>,
    epsilon: f64,
    grid: PyReadonlyArray1<'_, f64>,
    n: usize,
    delta: Option<f64>,
    tuning: &str,
    centre: Option<f64>,
    range: Option<(f64, f64)>,
    psi: Option<f64>,
    components: Option<usize>,
    degree: Option<usize>,
    person_id: Option<String>,
) -> PyResult<MeanMechanism> {
    let request = MeanRequest {
        method: parse::<MeanMethod>(method)?,
        kernel: parse::<Stationary>(kernel)?,
        bound: bound.map(parse::<ClippingBound>).transpose()?,
        epsilon: checked_epsilon(epsilon)?,
        delta: checked_delta(delta)?,
        tuning: parse::<TuningMode>(tuning)?,
        centre,
        range,
        psi,
        components,
        degree,
    };
    let grid = fdp::front::unit_grid(&trapezoid_grid(slice(&grid, "grid")?)?).map_err(py_err)?;
    let unit = person_id.map_or(PrivacyUnit::Record, PrivacyUnit::person);
    let inner = py.detach(|| request.build(&grid, n)).map_err(py_err)?;
    Ok(MeanMechanism { inner: PerUnit::new(inner, unit), warnings: request.warnings(&grid) })
}

/// A sparse-curve mean mechanism built for a grid (its domain in the data's units) and n.
#[pyclass(module = "fdp._fdp")]
struct SparseMeanMechanism {
    inner: PerUnit<SparseBinnedMean>,
    domain: (f64, f64),
}

mechanism_methods!(SparseMeanMechanism, SparseCurves);

impl SparseMeanMechanism {
    /// `n` records from a long table (`codes[r]` in 0..n the record of observation r, at `t[r]` in
    /// the data's units with value `y[r]`; a record without observations stays a record), on the
    /// grid mapped onto [0, 1].
    fn records(&self, codes: &[i64], t: &[f64], y: &[f64], n: usize) -> PyResult<SparseCurves> {
        if t.len() != codes.len() || y.len() != codes.len() {
            return Err(PyValueError::new_err("codes, t and y must have the same length"));
        }
        let mut records = vec![(Vec::new(), Vec::new()); n];
        for ((code, t), y) in codes.iter().zip(t).zip(y) {
            let record = usize::try_from(*code).ok().filter(|c| *c < n).ok_or_else(|| {
                PyValueError::new_err(format!("record codes must lie in 0..{n} (the number of records)"))
            })?;
            records[record].0.push(*t);
            records[record].1.push(*y);
        }
        let data = SparseCurves::new(self.domain, &records).map_err(data_err)?;
        data.rescaled(0.0, 1.0).map_err(data_err)
    }
}

#[pymethods]
impl SparseMeanMechanism {
    /// The summary state of `n` records of a long table, as bytes.
    fn part_state<'py>(
        &self,
        py: Python<'py>,
        codes: PyReadonlyArray1<'_, i64>,
        t: PyReadonlyArray1<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
        n: usize,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.records(slice(&codes, "codes")?, slice(&t, "t")?, slice(&y, "y")?, n)?;
        let inner = &self.inner;
        let bytes = py.detach(move || part_state(inner, &data)).map_err(py_err)?;
        Ok(PyBytes::new(py, &bytes))
    }
}

/// Builds the sparse-curve mean mechanism (see `fdp::front::sparse_mean`) for n records on `grid`
/// (the data's units: its first and last points are the domain).
#[pyfunction]
#[pyo3(signature = (kernel, range, epsilon, grid, n, centre=None, design=None, delta=None, person_id=None))]
#[allow(clippy::too_many_arguments)]
fn build_sparse_mean(
    py: Python<'_>,
    kernel: &str,
    range: (f64, f64),
    epsilon: f64,
    grid: PyReadonlyArray1<'_, f64>,
    n: usize,
    centre: Option<f64>,
    design: Option<PyReadonlyArray1<'_, f64>>,
    delta: Option<f64>,
    person_id: Option<String>,
) -> PyResult<SparseMeanMechanism> {
    let kernel = parse::<Stationary>(kernel)?;
    let (epsilon, delta) = (checked_epsilon(epsilon)?, checked_delta(delta)?);
    let data_grid = trapezoid_grid(slice(&grid, "grid")?)?;
    let domain = data_grid.domain()[0];
    let grid = fdp::front::unit_grid(&data_grid).map_err(py_err)?;
    let design = design.as_ref().map(|d| slice(d, "design")).transpose()?;
    let unit = person_id.map_or(PrivacyUnit::Record, PrivacyUnit::person);
    let inner = py
        .detach(|| fdp::front::sparse_mean(&grid, kernel, range, centre, design, epsilon, delta, n))
        .map_err(py_err)?;
    Ok(SparseMeanMechanism { inner: PerUnit::new(inner, unit), domain })
}

/// A privately tuned covariance (FPCA) mechanism built for a grid and n.
#[pyclass(module = "fdp._fdp")]
struct FpcaMechanism {
    inner: PerUnit<TunedCovariance>,
}

mechanism_methods!(FpcaMechanism, CurveSet<'_>);

#[pymethods]
impl FpcaMechanism {
    /// The summary state of some curves (`values` n_part x K on `grid`), as bytes.
    fn part_state<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArray2<'_, f64>,
        grid: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let inner = &self.inner;
        Ok(PyBytes::new(py, &on_unit_curves(py, &values, &grid, |curves| part_state(inner, curves))?))
    }
}

/// Builds the privately tuned covariance (see `fdp::front::FpcaRequest`) for n curves on `grid`.
#[pyfunction]
#[pyo3(signature = (kernel, range, components, epsilon, grid, n, centre=None, delta=None, person_id=None))]
#[allow(clippy::too_many_arguments)]
fn build_fpca(
    py: Python<'_>,
    kernel: &str,
    range: (f64, f64),
    components: usize,
    epsilon: f64,
    grid: PyReadonlyArray1<'_, f64>,
    n: usize,
    centre: Option<f64>,
    delta: Option<f64>,
    person_id: Option<String>,
) -> PyResult<FpcaMechanism> {
    let request = fdp::front::FpcaRequest {
        kernel: parse::<Stationary>(kernel)?,
        range,
        centre,
        components,
        epsilon: checked_epsilon(epsilon)?,
        delta: checked_delta(delta)?,
    };
    let grid = fdp::front::unit_grid(&trapezoid_grid(slice(&grid, "grid")?)?).map_err(py_err)?;
    let unit = person_id.map_or(PrivacyUnit::Record, PrivacyUnit::person);
    let inner = py.detach(|| request.build(&grid, n)).map_err(py_err)?;
    Ok(FpcaMechanism { inner: PerUnit::new(inner, unit) })
}

/// A released covariance operator (in the basis) and, by post-processing, its FPCA.
#[pyclass(module = "fdp._fdp")]
struct CovarianceRelease {
    inner: Release<Covariance>,
}

#[pymethods]
impl CovarianceRelease {
    /// `(eigenvalues, eigenfunctions k x K on the grid, explained variance)` of the top `k`.
    #[allow(clippy::type_complexity)]
    fn fpca(&self, k: usize) -> PyResult<(Vec<f64>, Vec<Vec<f64>>, Vec<f64>)> {
        let fpca = self.inner.output().fpca(k).map_err(py_err)?;
        Ok((fpca.eigenvalues().to_vec(), fpca.eigenfunctions().to_vec(), fpca.explained_variance().to_vec()))
    }
    /// The number J of basis components the covariance is released in.
    fn components(&self) -> usize {
        self.inner.output().components()
    }
    /// The released mean curve (the covariance is released about it).
    fn mean_curve<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.inner.output().mean_curve())
    }
    fn grid<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.inner.output().grid().points())
    }
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(py_err)
    }
    /// Writes release.json, fpca.svg and report.md into `out`; returns the report's path.
    #[pyo3(signature = (out, title, k, session, notes, x_label, y_label, x=None))]
    #[allow(clippy::too_many_arguments)]
    fn write_report(
        &self,
        out: &str,
        title: &str,
        k: usize,
        session: &RustSession,
        notes: Vec<String>,
        x_label: String,
        y_label: String,
        x: Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<String> {
        let x = x.map(|x| slice(&x, "x").map(<[f64]>::to_vec)).transpose()?;
        let axes = fdp::front::FigureAxes { x, ..fdp::front::FigureAxes::named(x_label, y_label) };
        let path = fdp::front::write_fpca_report(
            std::path::Path::new(out),
            title,
            &self.inner,
            k,
            &session.inner,
            &notes,
            &axes,
        )
        .map_err(py_err)?;
        Ok(path.display().to_string())
    }
}

/// A density mechanism built for n points.
#[pyclass(module = "fdp._fdp")]
struct KdeMechanism {
    inner: AnyKde,
    grid: Grid,
    /// The grid points the density is released on.
    #[pyo3(get)]
    grid_points: Vec<f64>,
}

mechanism_methods!(KdeMechanism, GridPoints);

/// Builds a density mechanism (see `fdp::front::KdeRequest`).
#[pyfunction]
#[pyo3(signature = (method, lo, hi, n, epsilon, delta=None, grid_points=200, kernel="gaussian", bandwidth=None, eta=1.25, components=None, degree=None))]
#[allow(clippy::too_many_arguments)]
fn build_kde(
    py: Python<'_>,
    method: &str,
    lo: f64,
    hi: f64,
    n: usize,
    epsilon: f64,
    delta: Option<f64>,
    grid_points: usize,
    kernel: &str,
    bandwidth: Option<f64>,
    eta: f64,
    components: Option<usize>,
    degree: Option<usize>,
) -> PyResult<KdeMechanism> {
    let shape = match kernel {
        "gaussian" => StationaryShape::Gaussian,
        "exponential" => StationaryShape::Exponential,
        _ => return Err(PyValueError::new_err(format!("kernel must be 'gaussian' or 'exponential', got {kernel:?}"))),
    };
    let request = KdeRequest {
        method: parse::<KdeMethod>(method)?,
        domain: (lo, hi),
        grid_points,
        shape,
        bandwidth,
        epsilon: checked_epsilon(epsilon)?,
        delta: checked_delta(delta)?,
        eta,
        components,
        degree,
    };
    let grid = request.grid().map_err(py_err)?;
    let inner = py.detach(|| request.build(n)).map_err(py_err)?;
    Ok(KdeMechanism { inner, grid_points: grid.points().to_vec(), grid })
}

/// Balog et al.'s Algorithm 1 built for n records.
#[pyclass(module = "fdp._fdp")]
struct KmeMechanism {
    inner: SyntheticData,
}

mechanism_methods!(KmeMechanism, PointSet);

/// Builds Algorithm 1 (see `fdp::front::KmeRequest`).
#[pyfunction]
#[pyo3(signature = (rho, centre, scale, synthetic_points, points_seed, n, epsilon, delta))]
#[allow(clippy::too_many_arguments)]
fn build_kme(
    py: Python<'_>,
    rho: f64,
    centre: Vec<f64>,
    scale: f64,
    synthetic_points: usize,
    points_seed: u64,
    n: usize,
    epsilon: f64,
    delta: f64,
) -> PyResult<KmeMechanism> {
    let request = KmeRequest {
        kernel: Stationary::gaussian(rho).map_err(|e| PyValueError::new_err(e.to_string()))?,
        centre,
        scale,
        synthetic_points,
        points_seed,
        epsilon: checked_epsilon(epsilon)?,
        delta: Delta::new(delta).map_err(|e| PyValueError::new_err(e.to_string()))?,
    };
    let inner = py.detach(|| request.build(n)).map_err(py_err)?;
    Ok(KmeMechanism { inner })
}

/// A private sketch mechanism.
#[pyclass(module = "fdp._fdp")]
struct SketchMechanism {
    inner: PrivateSketch,
}

mechanism_methods!(SketchMechanism, PointSet);

/// Builds a sketch mechanism (see `fdp::front::SketchRequest`).
#[pyfunction]
#[pyo3(signature = (map, dim, size, width, buckets, map_seed, epsilon))]
fn build_sketch(
    map: String,
    dim: usize,
    size: usize,
    width: f64,
    buckets: usize,
    map_seed: u64,
    epsilon: f64,
) -> PyResult<SketchMechanism> {
    let request = SketchRequest { map, dim, size, width, buckets, map_seed, epsilon: checked_epsilon(epsilon)? };
    Ok(SketchMechanism { inner: request.build().map_err(py_err)? })
}

/// A released curve (mean or density).
#[pyclass(module = "fdp._fdp")]
struct CurveRelease {
    inner: Release<Curve>,
}

#[pymethods]
impl CurveRelease {
    fn curve<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.inner.curve())
    }
    fn grid<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.inner.grid().points())
    }
    fn coefficients<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.inner.coefficients())
    }
    fn noise_sd<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.inner.output().noise_sd().map(|sd| PyArray1::from_slice(py, sd))
    }
    #[allow(clippy::type_complexity)]
    fn band<'py>(&self, py: Python<'py>, z: f64) -> Option<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>)> {
        let (lower, upper) = self.inner.output().band(z)?;
        Some((PyArray1::from_vec(py, lower), PyArray1::from_vec(py, upper)))
    }
    fn evaluate<'py>(&self, py: Python<'py>, points: PyReadonlyArray1<'_, f64>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let values = self.inner.evaluate(slice(&points, "points")?).map_err(py_err)?;
        Ok(PyArray1::from_vec(py, values))
    }
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(py_err)
    }
    /// Writes release.json, curves.svg and report.md into `out`; returns the report's path.
    #[pyo3(signature = (out, title, session, notes, x_label, y_label, x=None))]
    #[allow(clippy::too_many_arguments)]
    fn write_report(
        &self,
        out: &str,
        title: &str,
        session: &RustSession,
        notes: Vec<String>,
        x_label: String,
        y_label: String,
        x: Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<String> {
        let x = x.map(|x| slice(&x, "x").map(<[f64]>::to_vec)).transpose()?;
        let axes = fdp::front::FigureAxes { x, ..fdp::front::FigureAxes::named(x_label, y_label) };
        let path = fdp::front::write_curve_report(
            std::path::Path::new(out),
            title,
            &self.inner,
            &session.inner,
            &notes,
            &axes,
        )
        .map_err(py_err)?;
        Ok(path.display().to_string())
    }
}

/// A released synthetic weighted dataset.
#[pyclass(module = "fdp._fdp")]
struct WeightedRelease {
    inner: Release<WeightedSample>,
}

#[pymethods]
impl WeightedRelease {
    fn dim(&self) -> usize {
        self.inner.output().dim
    }
    fn points<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.inner.output().points)
    }
    fn weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.inner.output().weights)
    }
    fn to_csv(&self) -> String {
        self.inner.output().to_csv()
    }
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(py_err)
    }
}

/// A released sketch.
#[pyclass(module = "fdp._fdp")]
struct SketchRelease {
    inner: Release<Sketch>,
}

#[pymethods]
impl SketchRelease {
    fn sketch<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.inner.output().sketch)
    }
    fn noisy_count(&self) -> f64 {
        self.inner.output().noisy_count
    }
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(py_err)
    }
    /// M2M estimation from this sketch (post-processing).
    #[pyo3(signature = (mechanism, prior_points=fdp::front::M2M_PRIOR_POINTS, prior_seed=fdp::front::M2M_PRIOR_SEED))]
    fn m2m(&self, py: Python<'_>, mechanism: &SketchMechanism, prior_points: usize, prior_seed: u64) -> PyResult<M2m> {
        let (inner, release) = (&mechanism.inner, &self.inner);
        let summary =
            py.detach(|| fdp::front::m2m_summary(inner, release, prior_points, prior_seed)).map_err(py_err)?;
        Ok(M2m { inner: summary.estimator, dim: mechanism.inner.map().dim() })
    }
}

/// M2M estimates read off a released sketch.
#[pyclass(module = "fdp._fdp")]
struct M2m {
    inner: M2mEstimator,
    dim: usize,
}

#[pymethods]
impl M2m {
    fn means<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.inner.means())
    }
    fn covariance<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.inner.covariance())
    }
    fn cdf(&self, coordinate: usize, t: f64) -> PyResult<f64> {
        if coordinate >= self.dim {
            return Err(PyValueError::new_err(format!("coordinate must be < {}, got {coordinate}", self.dim)));
        }
        Ok(self.inner.cdf(coordinate, t))
    }
    fn weights<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, self.inner.weights())
    }
}

/// A mechanism's name for readers (`tuned_iclp_rkhs` → `ICLP-RKHS (privately tuned)`).
#[pyfunction]
fn display_name(mechanism: &str) -> String {
    fdp::report::display_name(mechanism)
}

/// The compiled module.
#[pymodule]
fn _fdp(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("BudgetExceededError", m.py().get_type::<BudgetExceededError>())?;
    // The front doors' shared defaults (fdp::front), read by the Python layer's signatures.
    m.add_function(wrap_pyfunction!(display_name, m)?)?;
    m.add("M2M_PRIOR_POINTS", fdp::front::M2M_PRIOR_POINTS)?;
    m.add("M2M_PRIOR_SEED", fdp::front::M2M_PRIOR_SEED)?;
    m.add_class::<RustSession>()?;
    m.add_class::<MeanMechanism>()?;
    m.add_class::<SparseMeanMechanism>()?;
    m.add_class::<FpcaMechanism>()?;
    m.add_class::<CovarianceRelease>()?;
    m.add_class::<KdeMechanism>()?;
    m.add_class::<KmeMechanism>()?;
    m.add_class::<SketchMechanism>()?;
    m.add_class::<CurveRelease>()?;
    m.add_class::<WeightedRelease>()?;
    m.add_class::<SketchRelease>()?;
    m.add_class::<M2m>()?;
    m.add_function(wrap_pyfunction!(build_mean, m)?)?;
    m.add_function(wrap_pyfunction!(build_sparse_mean, m)?)?;
    m.add_function(wrap_pyfunction!(build_fpca, m)?)?;
    m.add_function(wrap_pyfunction!(build_kde, m)?)?;
    m.add_function(wrap_pyfunction!(build_kme, m)?)?;
    m.add_function(wrap_pyfunction!(build_sketch, m)?)?;
    m.add_function(wrap_pyfunction!(merge_states, m)?)?;
    m.add_function(wrap_pyfunction!(repair_counts, m)?)?;
    m.add_function(wrap_pyfunction!(per_person, m)?)?;
    m.add_function(wrap_pyfunction!(long_onto_grid, m)?)?;
    m.add_function(wrap_pyfunction!(state_info, m)?)?;
    Ok(())
}
