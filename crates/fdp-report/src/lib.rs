//! # fdp-report: figures and report folders
//!
//! - [`CurveFigure`]: curves on a grid — sample curves in light grey, then labelled series (the
//!   non-private mean, private releases, the truth) with a legend — written as SVG (no system fonts
//!   needed: text is left to the viewer);
//! - [`LogLogFigure`]: error against n on log-log axes, one line per method, with error bars;
//! - [`HeatMaps`]: functions on a 2-D tensor grid, side by side on one colour scale;
//! - [`ReportDir`]: a report folder holding `report.md`, figures and `results.json`.
//!
//! Reports print nothing themselves; examples print one-line records (DESIGN section 8).

use std::path::{Path, PathBuf};

use plotters::prelude::*;
pub use plotters::style::RGBColor;
use serde::Serialize;
use thiserror::Error;

/// Errors writing reports.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ReportError {
    /// File system.
    #[error("writing {path}: {message}")]
    Io { path: PathBuf, message: String },
    /// Drawing.
    #[error("drawing {path}: {message}")]
    Draw { path: PathBuf, message: String },
    /// Inputs that cannot be drawn (empty, mismatched lengths, nothing finite).
    #[error("cannot draw: {0}")]
    BadInput(String),
}

/// Result alias of this crate.
pub type Result<T, E = ReportError> = std::result::Result<T, E>;

/// Colours for series, chosen to stay distinct for colour-blind readers (Okabe-Ito).
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

/// One labelled line.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub values: Vec<f64>,
    pub color: RGBColor,
    /// Line width in pixels.
    pub width: u32,
    /// Dashed (drawn as dots), e.g. for the truth.
    pub dashed: bool,
}

impl Series {
    /// A solid line of width 2.
    pub fn new(label: impl Into<String>, values: Vec<f64>, color: RGBColor) -> Self {
        Self { label: label.into(), values, color, width: 2, dashed: false }
    }

    /// The same line dashed.
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }
}

/// Curves on a common grid.
///
/// ```
/// use fdp_report::{CurveFigure, PALETTE, Series};
/// let grid: Vec<f64> = (0..100).map(|i| i as f64 / 99.0).collect();
/// let figure = CurveFigure {
///     title: "A private mean".into(),
///     x_label: "t".into(),
///     y_label: "value".into(),
///     background: vec![grid.iter().map(|t| t.cos()).collect()],
///     series: vec![Series::new("mean", grid.iter().map(|t| t.sin()).collect(), PALETTE[0])],
///     grid,
/// };
/// let path = std::env::temp_dir().join("fdp-doc-figure.svg");
/// figure.write_svg(&path, 640, 400)?;
/// # Ok::<(), fdp_report::ReportError>(())
/// ```
#[derive(Debug, Clone)]
pub struct CurveFigure {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub grid: Vec<f64>,
    /// Drawn first, thin and light grey, unlabelled (e.g. a sample of the data curves).
    pub background: Vec<Vec<f64>>,
    /// Drawn on top, with a legend entry each.
    pub series: Vec<Series>,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Io { path: path.to_path_buf(), message: e.to_string() }
}

fn draw_err(path: &Path, e: impl std::fmt::Display) -> ReportError {
    ReportError::Draw { path: path.to_path_buf(), message: e.to_string() }
}

/// A white SVG canvas of `size` pixels.
fn white_canvas(path: &Path, size: (u32, u32)) -> Result<DrawingArea<SVGBackend<'_>, plotters::coord::Shift>> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(path, e))?;
    Ok(root)
}

/// The chart frame every line figure uses: a 20-point title, 12-pixel margins, room for axis labels.
fn titled_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, ("sans-serif", 20)).margin(12).x_label_area_size(40).y_label_area_size(y_label_area);
    builder
}

/// The legend box of a chart, upper right, over a translucent white background.
fn draw_legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    path: &Path,
) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(120, 120, 120))
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| draw_err(path, e))
}

/// The finite range of some values, padded by 5%.
fn padded_range<'a>(values: impl Iterator<Item = &'a f64>) -> Option<(f64, f64)> {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
    if !lo.is_finite() {
        return None;
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 * lo.abs().max(1.0) };
    Some((lo - pad, hi + pad))
}

impl CurveFigure {
    /// Writes the figure as an SVG of `width x height` pixels.
    pub fn write_svg(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        let k = self.grid.len();
        if k < 2 || self.series.iter().any(|s| s.values.len() != k) || self.background.iter().any(|b| b.len() != k) {
            return Err(ReportError::BadInput(format!("every curve needs {k} >= 2 values on the grid")));
        }
        let (x0, x1) = (self.grid[0], self.grid[k - 1]);
        let (y0, y1) = padded_range(self.series.iter().flat_map(|s| &s.values).chain(self.background.iter().flatten()))
            .ok_or_else(|| ReportError::BadInput("no finite value to draw".into()))?;
        let root = white_canvas(path, (width, height))?;
        let mut chart =
            titled_chart(&root, &self.title, 60).build_cartesian_2d(x0..x1, y0..y1).map_err(|e| draw_err(path, e))?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(|e| draw_err(path, e))?;
        let grey = RGBColor(200, 200, 200);
        for curve in &self.background {
            let points = self.grid.iter().copied().zip(curve.iter().copied()).filter(|(_, y)| y.is_finite());
            chart.draw_series(LineSeries::new(points, grey.stroke_width(1))).map_err(|e| draw_err(path, e))?;
        }
        for s in &self.series {
            let style = s.color.stroke_width(s.width);
            let points: Vec<(f64, f64)> =
                self.grid.iter().copied().zip(s.values.iter().copied()).filter(|(_, y)| y.is_finite()).collect();
            let drawn = if s.dashed {
                chart.draw_series(DashedLineSeries::new(points, 6, 4, style))
            } else {
                chart.draw_series(LineSeries::new(points, style))
            };
            let drawn = drawn.map_err(|e| draw_err(path, e))?;
            // Unlabelled series (e.g. repeated draws after the first) stay out of the legend.
            if !s.label.is_empty() {
                let color = s.color;
                drawn
                    .label(&s.label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3)));
            }
        }
        draw_legend(&mut chart, path)?;
        root.present().map_err(|e| draw_err(path, e))
    }
}

/// One method's error curve against n, with standard errors.
#[derive(Debug, Clone)]
pub struct ErrorSeries {
    pub label: String,
    pub n: Vec<f64>,
    pub error: Vec<f64>,
    pub standard_error: Vec<f64>,
    pub color: RGBColor,
}

/// Ticks of a log axis: `{1, 2, 5} x 10^k` inside `[lo, hi]`, thinned to powers of ten when the
/// range spans more than three decades (so labels never crowd).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mantissas: &[f64] = if last - first > 3 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    (first..=last)
        .flat_map(|k| mantissas.iter().map(move |m| m * 10f64.powi(k)))
        .filter(|v| (lo..=hi).contains(v))
        .collect()
}

/// A tick label for a log axis: plain numbers from 0.01 to 10⁵, powers of ten beyond.
fn log_tick(v: f64) -> String {
    if (0.01..1e5).contains(&v.abs()) {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:.0e}")
    }
}

/// Error against n on log-log axes.
#[derive(Debug, Clone)]
pub struct LogLogFigure {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<ErrorSeries>,
}

impl LogLogFigure {
    /// Writes the figure as an SVG.
    pub fn write_svg(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        let xs = self.series.iter().flat_map(|s| &s.n).filter(|v| **v > 0.0);
        let ys =
            self.series.iter().flat_map(|s| s.error.iter().zip(&s.standard_error).flat_map(|(e, se)| [e - se, e + se]));
        let ys: Vec<f64> = ys.filter(|v| *v > 0.0 && v.is_finite()).collect();
        let (x0, x1) = xs.fold((f64::INFINITY, 0.0_f64), |(l, h), v| (l.min(*v), h.max(*v)));
        let (y0, y1) = ys.iter().fold((f64::INFINITY, 0.0_f64), |(l, h), v| (l.min(*v), h.max(*v)));
        if !(x0.is_finite() && y0.is_finite() && x1 > x0) {
            return Err(ReportError::BadInput("log-log figure needs positive n and errors".into()));
        }
        let root = white_canvas(path, (width, height))?;
        let mut chart = titled_chart(&root, &self.title, 70)
            .build_cartesian_2d(
                (x0 * 0.8..x1 * 1.25).log_scale().with_key_points(log_ticks(x0 * 0.8, x1 * 1.25)),
                (y0 * 0.7..y1 * 1.4).log_scale().with_key_points(log_ticks(y0 * 0.7, y1 * 1.4)),
            )
            .map_err(|e| draw_err(path, e))?;
        chart
            .configure_mesh()
            .x_desc(&self.x_label)
            .y_desc(&self.y_label)
            .x_label_formatter(&|v| log_tick(*v))
            .y_label_formatter(&|v| log_tick(*v))
            .draw()
            .map_err(|e| draw_err(path, e))?;
        for s in &self.series {
            let color = s.color;
            let points: Vec<(f64, f64)> =
                s.n.iter().copied().zip(s.error.iter().copied()).filter(|(_, e)| *e > 0.0).collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| draw_err(path, e))?
                .label(&s.label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(3)));
            chart
                .draw_series(points.iter().map(|&(x, y)| Circle::new((x, y), 3, color.filled())))
                .map_err(|e| draw_err(path, e))?;
            let bars = s.n.iter().zip(&s.error).zip(&s.standard_error).filter(|((_, e), se)| *e - *se > 0.0);
            for ((&x, &e), &se) in bars {
                chart
                    .draw_series(LineSeries::new([(x, e - se), (x, e + se)], color.stroke_width(1)))
                    .map_err(|e| draw_err(path, e))?;
            }
        }
        draw_legend(&mut chart, path)?;
        root.present().map_err(|e| draw_err(path, e))
    }
}

/// A perceptually uniform colour map (viridis, 5 stops, linear in between) for `u ∈ [0, 1]`.
pub fn viridis(u: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] =
        [(68.0, 1.0, 84.0), (59.0, 82.0, 139.0), (33.0, 145.0, 140.0), (94.0, 201.0, 98.0), (253.0, 231.0, 37.0)];
    let x = if u.is_finite() { u.clamp(0.0, 1.0) * 4.0 } else { 0.0 };
    let i = (x.floor() as usize).min(3);
    let f = x - i as f64;
    let mix = |a: f64, b: f64| (a + f * (b - a)).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Side-by-side heat maps of functions on one tensor grid, on a shared colour scale with a colour bar.
#[derive(Debug, Clone)]
pub struct HeatMaps {
    pub title: String,
    /// Axis points (the tensor grid's x and y axes); value `(i, j)` is at index `i * ny + j`.
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// `(caption, values)` per panel.
    pub panels: Vec<(String, Vec<f64>)>,
}

impl HeatMaps {
    /// Writes the panels as one SVG, each panel `panel` pixels square.
    pub fn write_svg(&self, path: &Path, panel: u32) -> Result<()> {
        let (nx, ny) = (self.x.len(), self.y.len());
        if nx < 2 || ny < 2 || self.panels.is_empty() || self.panels.iter().any(|(_, v)| v.len() != nx * ny) {
            return Err(ReportError::BadInput("heat maps need nx, ny >= 2 and nx * ny values per panel".into()));
        }
        let (lo, hi) = self
            .panels
            .iter()
            .flat_map(|(_, v)| v)
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
        if !lo.is_finite() {
            return Err(ReportError::BadInput("no finite value to draw".into()));
        }
        let span = if hi > lo { hi - lo } else { 1.0 };
        let count = self.panels.len() as u32;
        let width = count * panel + 150;
        let root = white_canvas(path, (width, panel + 60))?;
        let root = root.titled(&self.title, ("sans-serif", 20)).map_err(|e| draw_err(path, e))?;
        let (maps, bar) = root.split_horizontally(count * panel);
        let cells = maps.split_evenly((1, count as usize));
        let half =
            |v: &[f64], i: usize| if i + 1 < v.len() { 0.5 * (v[i + 1] - v[i]) } else { 0.5 * (v[i] - v[i - 1]) };
        for (area, (caption, values)) in cells.iter().zip(&self.panels) {
            let mut chart = ChartBuilder::on(area)
                .caption(caption, ("sans-serif", 15))
                .margin(8)
                .x_label_area_size(28)
                .y_label_area_size(36)
                .build_cartesian_2d(self.x[0]..self.x[nx - 1], self.y[0]..self.y[ny - 1])
                .map_err(|e| draw_err(path, e))?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_labels(5)
                .y_labels(5)
                .label_style(("sans-serif", 12))
                .draw()
                .map_err(|e| draw_err(path, e))?;
            let rects = (0..nx).flat_map(|i| (0..ny).map(move |j| (i, j))).map(|(i, j)| {
                let (hx, hy) = (half(&self.x, i), half(&self.y, j));
                let color = viridis((values[i * ny + j] - lo) / span);
                Rectangle::new([(self.x[i] - hx, self.y[j] - hy), (self.x[i] + hx, self.y[j] + hy)], color.filled())
            });
            chart.draw_series(rects).map_err(|e| draw_err(path, e))?;
        }
        let mut scale = ChartBuilder::on(&bar)
            .margin(20)
            .margin_left(10)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..1.0, lo..lo + span)
            .map_err(|e| draw_err(path, e))?;
        scale
            .configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .y_labels(6)
            .label_style(("sans-serif", 12))
            .y_label_formatter(&|v| format!("{v:.3}"))
            .draw()
            .map_err(|e| draw_err(path, e))?;
        let steps = 64;
        scale
            .draw_series((0..steps).map(|s| {
                let (a, b) = (lo + span * s as f64 / steps as f64, lo + span * (s + 1) as f64 / steps as f64);
                Rectangle::new([(0.0, a), (1.0, b)], viridis((s as f64 + 0.5) / steps as f64).filled())
            }))
            .map_err(|e| draw_err(path, e))?;
        root.present().map_err(|e| draw_err(path, e))
    }
}

/// A report folder: `report.md`, figures and `results.json`.
#[derive(Debug, Clone)]
pub struct ReportDir {
    path: PathBuf,
}

impl ReportDir {
    /// Creates (or reuses) the folder.
    pub fn create(path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        std::fs::create_dir_all(&path).map_err(|e| io_err(&path, e))?;
        Ok(Self { path })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of a file in the folder.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Writes a text file (e.g. `report.md`).
    pub fn write_text(&self, name: &str, text: &str) -> Result<PathBuf> {
        let path = self.file(name);
        std::fs::write(&path, text).map_err(|e| io_err(&path, e))?;
        Ok(path)
    }

    /// Writes a serialisable value as pretty JSON (e.g. `results.json`).
    pub fn write_json(&self, name: &str, value: &impl Serialize) -> Result<PathBuf> {
        let text = serde_json::to_string_pretty(value).map_err(|e| io_err(&self.file(name), e))?;
        self.write_text(name, &text)
    }
}

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
