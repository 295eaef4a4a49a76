//! # fdp-report: figures and report folders
//!
//! - [`CurveFigure`]: curves on a grid — sample curves in light grey, then labelled series (the
//!   non-private mean, private releases, the truth) with a legend — written as SVG (no system fonts
//!   needed: text is left to the viewer);
//! - [`LogLogFigure`]: error against n on log-log axes, one line per method, with error bars;
//! - [`HeatMaps`]: functions on a 2-D tensor grid, side by side on one colour scale;
//! - [`ReportDir`]: a report folder holding `report.md`, figures and `results.json`;
//! - [`release`]: a [`Release`](fdp_core::Release) drawn directly — its curve as a [`Series`], its
//!   metadata as a caption line and a markdown table;
//! - [`progress`]: a spinner or a step bar on stderr for long runs, hidden when piped or quiet.
//!
//! Reports print nothing themselves; examples print one-line records (docs/DESIGN.md section 8).

pub use plotters::style::RGBColor;

mod canvas;
pub mod curves;
pub mod dir;
mod error;
pub mod heatmap;
pub mod loglog;
pub mod progress;
pub mod release;

pub use curves::{CurveFigure, PALETTE, Series};
pub use dir::ReportDir;
pub use error::{ReportError, Result};
pub use heatmap::{HeatMaps, viridis};
pub use loglog::{ErrorSeries, LogLogFigure};
pub use release::{display_name, metadata_caption, metadata_table};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_figures_and_files_and_rejects_bad_input() {
        let dir = ReportDir::create(std::env::temp_dir().join(format!("fdp-report-{}", std::process::id()))).unwrap();
        let grid: Vec<f64> = (0..50).map(|i| i as f64 / 49.0).collect();
        let fig = CurveFigure {
            title: "test".into(),
            x_label: "t".into(),
            y_label: "x".into(),
            grid: grid.clone(),
            background: vec![grid.iter().map(|t| t * t).collect()],
            series: vec![
                Series::new("mean", grid.iter().map(|t| t.sin()).collect(), PALETTE[0]),
                Series::new("truth", grid.clone(), PALETTE[6]).dashed(),
            ],
        };
        let path = dir.file("curves.svg");
        fig.write_svg(&path, 640, 420).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("<svg") && svg.contains("mean") && svg.contains("truth"));
        let bad = CurveFigure { series: vec![Series::new("short", vec![1.0], PALETTE[1])], ..fig };
        assert!(matches!(bad.write_svg(&path, 640, 420), Err(ReportError::BadInput(_))));
        let loglog = LogLogFigure {
            title: "mse".into(),
            x_label: "n".into(),
            y_label: "MSE".into(),
            series: vec![ErrorSeries {
                label: "a".into(),
                n: vec![100.0, 1000.0],
                error: vec![1.0, 0.1],
                standard_error: vec![0.1, 0.01],
                color: PALETTE[2],
            }],
        };
        loglog.write_svg(&dir.file("mse.svg"), 640, 420).unwrap();
        let maps = HeatMaps {
            title: "maps".into(),
            x: vec![0.0, 1.0, 2.0],
            y: vec![0.0, 1.0],
            panels: vec![("a".into(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]), ("b".into(), vec![1.0; 6])],
        };
        maps.write_svg(&dir.file("maps.svg"), 300).unwrap();
        assert!(
            HeatMaps { panels: vec![("bad".into(), vec![1.0])], ..maps }.write_svg(&dir.file("x.svg"), 300).is_err()
        );
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        dir.write_json("results.json", &vec![1, 2]).unwrap();
        assert_eq!(std::fs::read_to_string(dir.file("results.json")).unwrap().replace([' ', '\n'], ""), "[1,2]");
        std::fs::remove_dir_all(dir.path()).ok();
    }
}
