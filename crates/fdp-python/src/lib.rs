//! `fdp._fdp`: the compiled half of the Python package (`python/fdp`), a thin layer over
//! [`fdp::registry`].
//!
//! Every release goes through the one Rust path: a [`Spec`] (JSON) names a registered mechanism
//! and its parameters, [`registry::build`] builds it for the public frame, a [`Session`] charges it
//! and releases it. There is one mechanism class and one release method per input kind, whatever
//! the mechanism: a mechanism registered in Rust is reachable from Python with no edit here. Curves come in as read-only numpy views and are not
//! copied unless a record needs repair ([`CurveSet::borrowed`]); the interpreter lock is released
//! while Rust computes. Summary states ([`SummaryState`]) cross as bytes, for partial summaries built
//! elsewhere (e.g. Spark executors) and merged exactly. Errors become Python exceptions with the Rust message: bad parameters
//! `ValueError`, an overspending release `fdp.BudgetExceededError`, files `OSError`.

use numpy::{PyArray1, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use fdp::data::{CurveSet, SparseCurves};
use fdp::estimators::covariance::Covariance;
use fdp::functional::{Curve, CurveReleaseExt};
use fdp::kme::M2mEstimator;
use fdp::mercer::Grid;
use fdp::noise::{Delta, Epsilon, NeighbourRelation};
use fdp::registry::{self, Built, Frame, Input, InputKind, Released, Spec};
use fdp::release::{Coefficients, Error, PrivacyUnit, Release, Session, Sketch, SummaryState, WeightedSample};

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

/// A contiguous slice of a numpy array (the Python layer makes arrays C-contiguous float64).
fn slice<'a, T: numpy::Element, D: numpy::ndarray::Dimension>(
    array: &'a numpy::PyReadonlyArray<'_, T, D>,
    name: &str,
) -> PyResult<&'a [T]> {
    array.as_slice().map_err(|_| PyValueError::new_err(format!("{name} must be a C-contiguous array")))
}

/// The grid of a curve set ([`fdp::front::observation_grid`], shared with the R package).
fn trapezoid_grid(points: &[f64]) -> PyResult<Grid> {
    fdp::front::observation_grid(points).map_err(py_err)
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

    /// Releases a curve mechanism on `values` (n x K, C-contiguous) observed on `grid` (the data's
    /// units: the registry maps the grid onto [0, 1]); each row one record of `person_id`'s unit
    /// (None: one row; else a person, the rows already grouped), checked against the mechanism's.
    #[pyo3(signature = (mechanism, values, grid, person_id=None))]
    fn release_curves(
        &mut self,
        py: Python<'_>,
        mechanism: &RegisteredMechanism,
        values: PyReadonlyArray2<'_, f64>,
        grid: PyReadonlyArray1<'_, f64>,
        person_id: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let values = slice(&values, "values")?;
        let grid = trapezoid_grid(slice(&grid, "grid")?)?;
        let unit = PrivacyUnit::of_id(person_id);
        let (session, built) = (&mut self.inner, &mechanism.inner);
        let released = py.detach(move || {
            let (curves, _) = CurveSet::borrowed(grid, values, None)?;
            built.release(session, Input::Curves { curves: &curves, unit: &unit })
        });
        released_to_py(py, released.map_err(py_err)?)
    }

    /// Releases a sparse-curve mechanism on the `n` records of a long table: `codes[r]` the record
    /// (0..n) of observation r at time `t[r]` (the data's units) with value `y[r]`; each record one
    /// of `person_id`'s unit (None: one record), checked against the mechanism's.
    #[pyo3(signature = (mechanism, codes, t, y, n, person_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn release_sparse(
        &mut self,
        py: Python<'_>,
        mechanism: &RegisteredMechanism,
        codes: PyReadonlyArray1<'_, i64>,
        t: PyReadonlyArray1<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
        n: usize,
        person_id: Option<String>,
    ) -> PyResult<Py<PyAny>> {
        let data = mechanism.records(slice(&codes, "codes")?, slice(&t, "t")?, slice(&y, "y")?, n)?;
        let unit = PrivacyUnit::of_id(person_id);
        let (session, built) = (&mut self.inner, &mechanism.inner);
        let released =
            py.detach(move || built.release(session, Input::Sparse { curves: &data, unit: &unit })).map_err(py_err)?;
        released_to_py(py, released)
    }

    /// Releases a point mechanism on `points` (n x D, C-contiguous).
    fn release_points(
        &mut self,
        py: Python<'_>,
        mechanism: &RegisteredMechanism,
        points: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<Py<PyAny>> {
        let (session, built) = (&mut self.inner, &mechanism.inner);
        let released = on_points(py, &points, |p| built.release(session, p))?;
        released_to_py(py, released)
    }

    /// Releases a labelled-point mechanism on inputs `x` (n, the data's units) and responses `y` (n).
    fn release_labelled(
        &mut self,
        py: Python<'_>,
        mechanism: &RegisteredMechanism,
        x: PyReadonlyArray1<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
    ) -> PyResult<Py<PyAny>> {
        let (x, y) = (slice(&x, "x")?, slice(&y, "y")?);
        let (session, built) = (&mut self.inner, &mechanism.inner);
        let released = py.detach(move || built.release(session, Input::Labelled { x, y })).map_err(py_err)?;
        released_to_py(py, released)
    }

    /// Releases a mergeable mechanism from a complete summary state (bytes).
    fn release_state(&mut self, py: Python<'_>, mechanism: &RegisteredMechanism, state: &[u8]) -> PyResult<Py<PyAny>> {
        let state = SummaryState::from_bytes(state).map_err(py_err)?;
        let (session, built) = (&mut self.inner, &mechanism.inner);
        let released = py.detach(move || built.release_state(session, &state)).map_err(py_err)?;
        released_to_py(py, released)
    }
}

/// The Python object of a release: its class by what was released.
fn released_to_py(py: Python<'_>, released: Released) -> PyResult<Py<PyAny>> {
    Ok(match released {
        Released::Curve(inner) => Py::new(py, CurveRelease { inner })?.into_any(),
        Released::Covariance(inner) => Py::new(py, CovarianceRelease { inner })?.into_any(),
        Released::Weighted(inner) => Py::new(py, WeightedRelease { inner })?.into_any(),
        Released::Sketch(inner) => Py::new(py, SketchRelease { inner })?.into_any(),
        Released::Coefficients(inner) => Py::new(py, CoefficientsRelease { inner })?.into_any(),
        _ => return Err(PyValueError::new_err("a release of a kind this package does not know: update fdp")),
    })
}

/// `f` on the points of a C-contiguous n x D array (as read: the mechanism's reader gives a
/// non-finite record its public default), with the interpreter lock released.
fn on_points<T: Send>(
    py: Python<'_>,
    points: &PyReadonlyArray2<'_, f64>,
    f: impl FnOnce(Input<'_>) -> fdp::release::Result<T> + Send,
) -> PyResult<T> {
    let dim = points.shape()[1];
    let data = slice(points, "points")?;
    py.detach(move || f(Input::Points { data, dim })).map_err(py_err)
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
    let values = fdp::front::long_onto_grid(codes, t, y, points, records).map_err(py_err)?;
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

/// A registered mechanism ([`fdp::registry`]) built for its public frame: what it guarantees, its
/// stages, its preview, its summary states; released by [`RustSession`].
#[pyclass(module = "fdp._fdp", name = "Mechanism")]
struct RegisteredMechanism {
    inner: Built,
    /// The domain of the frame's grid in the data's units (sparse records are read on it).
    domain: Option<(f64, f64)>,
}

/// Builds the registered mechanism `spec` (JSON: `{"mechanism": NAME, "params": {...}}`) for `n`
/// records on `grid` (curves: in the data's units; `None` for points), protecting one record or,
/// with `person_id`, one person.
#[pyfunction]
#[pyo3(signature = (spec, n, grid=None, person_id=None))]
fn build(
    py: Python<'_>,
    spec: &str,
    n: usize,
    grid: Option<PyReadonlyArray1<'_, f64>>,
    person_id: Option<String>,
) -> PyResult<RegisteredMechanism> {
    let spec = Spec::from_json(spec).map_err(py_err)?;
    let grid = grid.map(|g| slice(&g, "grid").and_then(trapezoid_grid)).transpose()?;
    let domain = grid.as_ref().and_then(|g| g.domain().first().copied());
    let frame = Frame::new(n, grid).protecting(PrivacyUnit::of_id(person_id));
    let inner = py.detach(|| registry::build(&spec, &frame)).map_err(py_err)?;
    Ok(RegisteredMechanism { inner, domain })
}

/// Every registered mechanism with its parameters, defaults and an example (JSON).
#[pyfunction]
fn registered() -> PyResult<String> {
    let entries: Vec<serde_json::Value> = registry::REGISTRY.iter().map(registry::Entry::describe).collect();
    serde_json::to_string(&entries).map_err(|e| PyValueError::new_err(e.to_string()))
}

impl RegisteredMechanism {
    /// `n` records from a long table (`codes[r]` in 0..n the record of observation r, at `t[r]` in
    /// the data's units with value `y[r]`; a record without observations stays a record), on the
    /// domain of the grid the mechanism was built for.
    fn records(&self, codes: &[i64], t: &[f64], y: &[f64], n: usize) -> PyResult<SparseCurves> {
        let domain = self.domain.ok_or_else(|| PyValueError::new_err("this mechanism does not read sparse curves"))?;
        fdp::front::long_to_sparse(codes, t, y, n, domain).map_err(py_err)
    }
}

#[pymethods]
impl RegisteredMechanism {
    /// The mechanism's own name (`tuned_iclp_rkhs`, `iclp_kde`, `balog_alg1`, ...).
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    /// The registered name it was built under (`mean`, `kde`, ...).
    fn registered_name(&self) -> String {
        self.inner.spec().mechanism.clone()
    }
    /// `curves`, `sparse_curves` or `points`.
    fn input(&self) -> &'static str {
        match self.inner.input() {
            InputKind::Curves => "curves",
            InputKind::SparseCurves => "sparse_curves",
            InputKind::Points => "points",
            InputKind::Labelled => "labelled",
        }
    }
    /// The spec it was built from (JSON).
    fn spec(&self) -> PyResult<String> {
        self.inner.spec().to_json().map_err(py_err)
    }
    /// Warnings about the spec's public choices (never about the data).
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings.clone()
    }
    /// `None` (one record) or the id column naming the persons.
    fn person_id(&self) -> Option<String> {
        match self.inner.privacy_unit() {
            PrivacyUnit::Person { id_column } => Some(id_column.clone()),
            _ => None,
        }
    }
    /// `(ε, δ)` of one release.
    fn guarantee(&self) -> (f64, f64) {
        let g = self.inner.guarantee();
        (g.epsilon(), g.delta())
    }
    /// `[(stage, ε, δ), ...]`, charged in this order.
    fn stages(&self) -> Vec<(String, f64, f64)> {
        self.inner.stages().iter().map(|s| (s.name.clone(), s.guarantee.epsilon(), s.guarantee.delta())).collect()
    }
    /// `(E||noise||², sd or None, whether the first is only an upper bound)`.
    fn accuracy(&self) -> (f64, Option<f64>, bool) {
        let a = self.inner.accuracy();
        (a.expected_sq_error, a.sq_error_sd, a.upper_bound)
    }
    /// Whether summary states of parts merge and release.
    fn mergeable(&self) -> bool {
        self.inner.is_mergeable()
    }
    /// Whether it protects add/remove-one neighbours (n is then private: any number of records).
    fn add_remove(&self) -> bool {
        self.inner.guarantee().relation() == NeighbourRelation::AddRemoveOne
    }
    /// The grid a released curve is shown on, in the data's units (None: the release's own).
    fn display_grid<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyArray1<f64>>> {
        self.inner.display_grid().map(|g| PyArray1::from_slice(py, g.points()))
    }
    /// The summary state of some curves (`values` n_part x K on `grid`, the data's units; each row
    /// one record of `person_id`'s unit), as bytes.
    #[pyo3(signature = (values, grid, person_id=None))]
    fn part_state_curves<'py>(
        &self,
        py: Python<'py>,
        values: PyReadonlyArray2<'_, f64>,
        grid: PyReadonlyArray1<'_, f64>,
        person_id: Option<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let values = slice(&values, "values")?;
        let grid = trapezoid_grid(slice(&grid, "grid")?)?;
        let unit = PrivacyUnit::of_id(person_id);
        let built = &self.inner;
        let state = py
            .detach(move || {
                let (curves, _) = CurveSet::borrowed(grid, values, None)?;
                built.part_state(Input::Curves { curves: &curves, unit: &unit })
            })
            .map_err(py_err)?;
        Ok(PyBytes::new(py, &state.to_bytes()))
    }
    /// The summary state of `n` records of a long table (each one of `person_id`'s unit), as bytes.
    #[pyo3(signature = (codes, t, y, n, person_id=None))]
    fn part_state_sparse<'py>(
        &self,
        py: Python<'py>,
        codes: PyReadonlyArray1<'_, i64>,
        t: PyReadonlyArray1<'_, f64>,
        y: PyReadonlyArray1<'_, f64>,
        n: usize,
        person_id: Option<String>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let data = self.records(slice(&codes, "codes")?, slice(&t, "t")?, slice(&y, "y")?, n)?;
        let unit = PrivacyUnit::of_id(person_id);
        let built = &self.inner;
        let state =
            py.detach(move || built.part_state(Input::Sparse { curves: &data, unit: &unit })).map_err(py_err)?;
        Ok(PyBytes::new(py, &state.to_bytes()))
    }
    /// The summary state of some points (n_part x D), as bytes.
    fn part_state_points<'py>(
        &self,
        py: Python<'py>,
        points: PyReadonlyArray2<'_, f64>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let state = on_points(py, &points, |p| self.inner.part_state(p))?;
        Ok(PyBytes::new(py, &state.to_bytes()))
    }
}

/// A released covariance operator (in the basis) and, by post-processing, its FPCA.
#[pyclass(module = "fdp._fdp")]
struct CovarianceRelease {
    inner: Release<Covariance>,
}

#[pymethods]
impl CovarianceRelease {
    /// `(eigenvalues, eigenfunctions k x K on the grid, explained variance, components used)` of
    /// the top `k`.
    #[allow(clippy::type_complexity)]
    fn fpca(&self, k: usize) -> PyResult<(Vec<f64>, Vec<Vec<f64>>, Vec<f64>, usize)> {
        let fpca = self.inner.output().fpca(k).map_err(py_err)?;
        Ok((
            fpca.eigenvalues().to_vec(),
            fpca.eigenfunctions().to_vec(),
            fpca.explained_variance().to_vec(),
            fpca.components(),
        ))
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
        let axes = figure_axes(x_label, y_label, x)?;
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

/// A report figure's axes: its labels, and the grid shown in the data's units (`x`), if given.
fn figure_axes(
    x_label: String,
    y_label: String,
    x: Option<PyReadonlyArray1<'_, f64>>,
) -> PyResult<fdp::front::FigureAxes> {
    let x = x.map(|x| slice(&x, "x").map(<[f64]>::to_vec)).transpose()?;
    Ok(fdp::front::FigureAxes { x, ..fdp::front::FigureAxes::named(x_label, y_label) })
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
    fn band<'py>(
        &self,
        py: Python<'py>,
        z: f64,
    ) -> PyResult<Option<(Bound<'py, PyArray1<f64>>, Bound<'py, PyArray1<f64>>)>> {
        let band = self.inner.output().band(z).map_err(py_err)?;
        Ok(band.map(|(lower, upper)| (PyArray1::from_vec(py, lower), PyArray1::from_vec(py, upper))))
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
        let axes = figure_axes(x_label, y_label, x)?;
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
    fn m2m(
        &self,
        py: Python<'_>,
        mechanism: &RegisteredMechanism,
        prior_points: usize,
        prior_seed: u64,
    ) -> PyResult<M2m> {
        let (built, release) = (&mechanism.inner, &self.inner);
        let summary = py.detach(|| built.m2m(release, prior_points, prior_seed)).map_err(py_err)?;
        let dim = summary.means.len();
        Ok(M2m { inner: summary.estimator, dim })
    }
}

/// A released coefficient vector (Algorithm 2's private mean feature vector).
#[pyclass(module = "fdp._fdp")]
struct CoefficientsRelease {
    inner: Release<Coefficients>,
}

#[pymethods]
impl CoefficientsRelease {
    fn values<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.inner.output().0)
    }
    fn to_json(&self) -> PyResult<String> {
        self.inner.to_json().map_err(py_err)
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
    m.add_class::<RegisteredMechanism>()?;
    m.add_class::<CoefficientsRelease>()?;
    m.add_function(wrap_pyfunction!(build, m)?)?;
    m.add_function(wrap_pyfunction!(registered, m)?)?;
    m.add_class::<CovarianceRelease>()?;
    m.add_class::<CurveRelease>()?;
    m.add_class::<WeightedRelease>()?;
    m.add_class::<SketchRelease>()?;
    m.add_class::<M2m>()?;
    m.add_function(wrap_pyfunction!(merge_states, m)?)?;
    m.add_function(wrap_pyfunction!(repair_counts, m)?)?;
    m.add_function(wrap_pyfunction!(per_person, m)?)?;
    m.add_function(wrap_pyfunction!(long_onto_grid, m)?)?;
    m.add_function(wrap_pyfunction!(state_info, m)?)?;
    Ok(())
}
