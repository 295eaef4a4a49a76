//! CSV files of curves: wide (one curve per row, value columns selected by a name prefix, optional id
//! columns) or long (one `(id, t, y)` observation per row).

use std::path::Path;

use fdp_mercer::Grid;

use crate::curves::{CurveSet, RepairReport, onto_grid};
use crate::error::{DataError, Result};
use crate::sparse::SparseCurves;

/// Which columns hold the curve.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvSpec {
    /// Value columns are those whose name starts with this prefix, in file order.
    pub value_prefix: String,
    /// Columns copied as record identifiers (must exist).
    pub id_columns: Vec<String>,
}

impl CsvSpec {
    /// Value columns `prefix*`, no id columns.
    pub fn prefix(prefix: impl Into<String>) -> Self {
        Self { value_prefix: prefix.into(), id_columns: Vec::new() }
    }

    /// Adds id columns.
    pub fn with_ids(mut self, ids: &[&str]) -> Self {
        self.id_columns = ids.iter().map(|s| s.to_string()).collect();
        self
    }
}

/// Curves read from a CSV file, with their ids and the curator's repair counts.
#[derive(Debug, Clone)]
pub struct LoadedCurves {
    pub curves: CurveSet<'static>,
    /// One entry per record: the id columns' values.
    pub ids: Vec<Vec<String>>,
    /// The value column names, in order.
    pub columns: Vec<String>,
    /// How many records were complete, interpolated or replaced by the default curve.
    pub report: RepairReport,
    /// What the loader did to the file's layout (columns reordered by their grid value, headers
    /// trimmed, positions used as the grid), one sentence each; empty when it took the file as it is.
    pub notes: Vec<String>,
}

/// Tokens read as missing. Any other non-numeric cell is missing too: a cell's content never
/// becomes an error.
fn parse_cell(cell: &str) -> f64 {
    cell.trim().parse::<f64>().unwrap_or(f64::NAN)
}

/// The grid implied by the value columns and the order to read them in.
///
/// When every name parses as a number after the prefix (e.g. `age_1.25`, `nm_852.02`), the columns
/// are sorted by that value (a file may list them in any order) and the grid is those values with
/// trapezoid weights; two columns with the same value are an error. Otherwise the grid is the positions
/// 1..K in file order. Every departure from the file as written is said in `notes`.
fn grid_from_columns(
    path: &Path,
    columns: &[String],
    prefix: &str,
    notes: &mut Vec<String>,
) -> Result<(Grid, Vec<usize>)> {
    let file_order: Vec<usize> = (0..columns.len()).collect();
    let parsed: Option<Vec<f64>> =
        columns.iter().map(|c| c[prefix.len()..].trim().parse::<f64>().ok().filter(|v| v.is_finite())).collect();
    let Some(values) = parsed else {
        if columns.len() >= 2 {
            notes.push(format!(
                "column names after {prefix:?} are not all numbers: the grid is the positions 1..{} in file order",
                columns.len()
            ));
            return Ok((Grid::trapezoid_points((1..=columns.len()).map(|i| i as f64).collect())?, file_order));
        }
        return Ok((Grid::with_weights(vec![1.0], vec![1.0])?, file_order));
    };
    let mut order = file_order;
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    if let Some(w) = order.windows(2).find(|w| values[w[0]] == values[w[1]]) {
        return Err(DataError::Read {
            path: path.to_path_buf(),
            message: format!(
                "columns {:?} and {:?} give the same grid value {}",
                columns[w[0]], columns[w[1]], values[w[0]]
            ),
        });
    }
    if order.windows(2).any(|w| w[1] < w[0]) {
        notes.push("value columns were not in increasing order of their grid value; sorted by it".to_string());
    }
    let points: Vec<f64> = order.iter().map(|&i| values[i]).collect();
    let grid = if points.len() >= 2 { Grid::trapezoid_points(points)? } else { Grid::with_weights(points, vec![1.0])? };
    Ok((grid, order))
}

/// Reads a wide CSV: header row, one record per line. Missing values (empty, `NA`, `NaN`, anything
/// non-numeric) are repaired per record; records that stay unusable become `default` (zero if `None`).
pub fn read_wide_csv(path: &Path, spec: &CsvSpec, default: Option<&[f64]>) -> Result<LoadedCurves> {
    let read_err = |e: csv::Error| DataError::Read { path: path.to_path_buf(), message: e.to_string() };
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_path(path).map_err(read_err)?;
    let raw_headers = reader.headers().map_err(read_err)?.clone();
    let headers: Vec<&str> = raw_headers.iter().map(str::trim).collect();
    let mut notes = Vec::new();
    if raw_headers.iter().zip(&headers).any(|(raw, trimmed)| raw.len() != trimmed.len()) {
        notes.push("header names had surrounding white space; trimmed".to_string());
    }
    let file_value_idx: Vec<usize> =
        headers.iter().enumerate().filter(|(_, h)| h.starts_with(&spec.value_prefix)).map(|(i, _)| i).collect();
    if file_value_idx.is_empty() {
        return Err(DataError::NoValueColumns { path: path.to_path_buf(), prefix: spec.value_prefix.clone() });
    }
    let id_idx = spec
        .id_columns
        .iter()
        .map(|c| {
            headers
                .iter()
                .position(|h| h == c)
                .ok_or_else(|| DataError::MissingColumn { path: path.to_path_buf(), column: c.clone() })
        })
        .collect::<Result<Vec<_>>>()?;
    let file_columns: Vec<String> = file_value_idx.iter().map(|&i| headers[i].to_string()).collect();
    let (grid, order) = grid_from_columns(path, &file_columns, &spec.value_prefix, &mut notes)?;
    let value_idx: Vec<usize> = order.iter().map(|&i| file_value_idx[i]).collect();
    let columns: Vec<String> = order.iter().map(|&i| file_columns[i].clone()).collect();
    let mut values = Vec::new();
    let mut ids = Vec::new();
    for record in reader.records() {
        let record = record.map_err(read_err)?;
        values.extend(value_idx.iter().map(|&i| parse_cell(&record[i])));
        ids.push(id_idx.iter().map(|&i| record[i].to_string()).collect());
    }
    let (curves, report) = CurveSet::from_flat(grid, values, default)?;
    Ok(LoadedCurves { curves, ids, columns, report, notes })
}

/// Reads a long CSV: one observation `(id, t, y)` per row, in the named columns, onto the **public**
/// `grid` (chosen by the curator before reading the file; never the observed times, which are
/// private). The records are the distinct ids in order of first appearance; each id's observations
/// are put on the grid by [`onto_grid`] (linear between observations, constant beyond the first and
/// last; a `t` or `y` that is not a finite number is a missing observation; observations at the same
/// `t` are averaged) and then repaired as in [`read_wide_csv`] (an id with no usable observation
/// becomes `default`). No cell can raise an error. `ids` holds each record's id: one record per id,
/// so the id column is the privacy unit.
pub fn read_long_csv(
    path: &Path,
    id: &str,
    t: &str,
    y: &str,
    grid: &Grid,
    default: Option<&[f64]>,
) -> Result<LoadedCurves> {
    let (ids, observations) = read_long_records(path, id, t, y)?;
    let values: Vec<f64> = observations.iter().flat_map(|(ts, ys)| onto_grid(ts, ys, grid.points())).collect();
    let (curves, report) = CurveSet::from_flat(grid.clone(), values, default)?;
    let notes = vec![format!(
        "long layout: each {id:?}'s observations of {y:?} at {t:?} interpolated onto the public grid of {} points (linear, constant beyond the first and last observation)",
        grid.len()
    )];
    Ok(LoadedCurves {
        curves,
        ids: ids.into_iter().map(|i| vec![i]).collect(),
        columns: vec![y.to_string()],
        report,
        notes,
    })
}

/// One id's observation times and values, in row order.
type Observations = (Vec<f64>, Vec<f64>);

/// The observations of a long CSV grouped by id: the distinct ids in order of first appearance and
/// each id's `(t, y)` lists in row order (a cell that is not a finite number is NaN).
fn read_long_records(path: &Path, id: &str, t: &str, y: &str) -> Result<(Vec<String>, Vec<Observations>)> {
    let read_err = |e: csv::Error| DataError::Read { path: path.to_path_buf(), message: e.to_string() };
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_path(path).map_err(read_err)?;
    let headers: Vec<String> = reader.headers().map_err(read_err)?.iter().map(|h| h.trim().to_string()).collect();
    let column = |name: &str| {
        headers
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| DataError::MissingColumn { path: path.to_path_buf(), column: name.to_string() })
    };
    let (id_col, t_col, y_col) = (column(id)?, column(t)?, column(y)?);
    let mut observations: Vec<Observations> = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut index = std::collections::HashMap::new();
    for record in reader.records() {
        let record = record.map_err(read_err)?;
        let key = record[id_col].trim().to_string();
        let i = *index.entry(key.clone()).or_insert_with(|| {
            ids.push(key);
            observations.push((Vec::new(), Vec::new()));
            ids.len() - 1
        });
        observations[i].0.push(parse_cell(&record[t_col]));
        observations[i].1.push(parse_cell(&record[y_col]));
    }
    Ok((ids, observations))
}

/// Reads a long CSV (one observation `(id, t, y)` per row) as **sparse curves** on the public
/// `domain`: one record per id (the privacy unit), in order of first appearance, each keeping its own
/// observation times (nothing is interpolated); observations with a non-finite time or value or a
/// time outside the domain are dropped and counted in [`SparseCurves::repairs`]. Also returns each
/// record's id.
pub fn read_sparse_csv(
    path: &Path,
    id: &str,
    t: &str,
    y: &str,
    domain: (f64, f64),
) -> Result<(SparseCurves, Vec<String>)> {
    let (ids, observations) = read_long_records(path, id, t, y)?;
    Ok((SparseCurves::new(domain, &observations)?, ids))
}
