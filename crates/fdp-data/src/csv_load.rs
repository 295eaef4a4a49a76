//! Wide CSV files: one curve per row, value columns selected by a name prefix, optional id columns.

use std::path::Path;

use fdp_mercer::Grid;

use crate::curves::{CurveSet, RepairReport};
use crate::error::{DataError, Result};

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
    pub curves: CurveSet,
    /// One entry per record: the id columns' values.
    pub ids: Vec<Vec<String>>,
    /// The value column names, in order.
    pub columns: Vec<String>,
    /// How many records were complete, interpolated or replaced by the default curve.
    pub report: RepairReport,
}

/// Tokens read as missing. Any other non-numeric cell is missing too: a cell's content never
/// becomes an error.
fn parse_cell(cell: &str) -> f64 {
    cell.trim().parse::<f64>().unwrap_or(f64::NAN)
}

/// The grid implied by the value columns: the numbers after the prefix when they all parse and
/// increase (e.g. `age_1.25`, `nm_852.02`), with trapezoid weights; else the positions 1..K.
fn grid_from_columns(columns: &[String], prefix: &str) -> Result<Grid> {
    let parsed: Option<Vec<f64>> = columns.iter().map(|c| c[prefix.len()..].parse::<f64>().ok()).collect();
    match parsed {
        Some(points) if points.len() >= 2 && points.windows(2).all(|w| w[1] > w[0]) => {
            Ok(Grid::trapezoid_points(points)?)
        }
        _ if columns.len() >= 2 => Ok(Grid::trapezoid_points((1..=columns.len()).map(|i| i as f64).collect())?),
        _ => Ok(Grid::with_weights(vec![1.0], vec![1.0])?),
    }
}

/// Reads a wide CSV: header row, one record per line. Missing values (empty, `NA`, `NaN`, anything
/// non-numeric) are repaired per record; records that stay unusable become `default` (zero if `None`).
pub fn read_wide_csv(path: &Path, spec: &CsvSpec, default: Option<&[f64]>) -> Result<LoadedCurves> {
    let read_err = |e: csv::Error| DataError::Read { path: path.to_path_buf(), message: e.to_string() };
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_path(path).map_err(read_err)?;
    let headers = reader.headers().map_err(read_err)?.clone();
    let value_idx: Vec<usize> =
        headers.iter().enumerate().filter(|(_, h)| h.starts_with(&spec.value_prefix)).map(|(i, _)| i).collect();
    if value_idx.is_empty() {
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
    let columns: Vec<String> = value_idx.iter().map(|&i| headers[i].to_string()).collect();
    let grid = grid_from_columns(&columns, &spec.value_prefix)?;
    let mut values = Vec::new();
    let mut ids = Vec::new();
    for record in reader.records() {
        let record = record.map_err(read_err)?;
        values.extend(value_idx.iter().map(|&i| parse_cell(&record[i])));
        ids.push(id_idx.iter().map(|&i| record[i].to_string()).collect());
    }
    let (curves, report) = CurveSet::from_flat(grid, values, default)?;
    Ok(LoadedCurves { curves, ids, columns, report })
}
