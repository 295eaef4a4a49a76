//! # fdp-data: curves in, with nothing about a record able to raise an error
//!
//! - [`curves`]: [`CurveSet`] — n curves on a shared grid, n x K contiguous, with per-record repair
//!   of missing values (interpolation along the grid, else the public default curve; n never changes);
//! - [`csv_load`]: wide CSV files (value columns by prefix, id columns) and long ones put on a
//!   public grid;
//! - [`CurveSet::per_person`]: rows grouped by a public id, one record per person (the privacy unit);
//! - [`sparse`]: [`SparseCurves`] — irregular and sparse records, each observed at its own times on a
//!   public domain (long tables, per-record lists, subsamples of dense curves for studies);
//! - [`simulate`](mod@simulate): the ICLP paper's scenarios S-1 to S-4, reproducible from a seed;
//! - [`datasets`]: loaders for the real curve datasets in `../shared/data`.
//!
//! Its [`DataError`] converts into the release path's error (`fdp_core::Error::Layer`, layer
//! `data`), so mechanisms that read curves use `?` on it.

pub mod csv_load;
pub mod curves;
pub mod datasets;
mod error;
pub mod simulate;
pub mod sparse;

pub use csv_load::{CsvSpec, LoadedCurves, read_long_csv, read_sparse_csv, read_wide_csv};
pub use curves::{CurveSet, PersonCurves, Repair, RepairReport, onto_grid, repair_record};
pub use datasets::{Dataset, data_dir};
pub use error::{DataError, Result};
pub use simulate::{DesignBounds, Scenario, Simulation, example_curves, simulate};
pub use sparse::{SparseCurves, SparseRepairs};
