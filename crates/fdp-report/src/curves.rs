//! Curves on a grid: sample curves in light grey, then labelled series with a legend.

use std::path::Path;

use plotters::prelude::*;

use crate::canvas::{draw_legend, padded_range, titled_chart, white_canvas};
use crate::error::{ReportError, Result, draw_err};

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
    /// A pointwise band `(lower, upper)` drawn as a translucent ribbon under the line.
    pub band: Option<(Vec<f64>, Vec<f64>)>,
}

impl Series {
    /// A solid line of width 2.
    pub fn new(label: impl Into<String>, values: Vec<f64>, color: RGBColor) -> Self {
        Self { label: label.into(), values, color, width: 2, dashed: false, band: None }
    }

    /// The same line dashed.
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }

    /// The same line over a ribbon from `lower` to `upper` (pointwise, on the figure's grid).
    pub fn with_band(mut self, lower: Vec<f64>, upper: Vec<f64>) -> Self {
        self.band = Some((lower, upper));
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

impl CurveFigure {
    /// Writes the figure as an SVG of `width x height` pixels.
    pub fn write_svg(&self, path: &Path, width: u32, height: u32) -> Result<()> {
        let k = self.grid.len();
        let bands = self.series.iter().filter_map(|s| s.band.as_ref());
        if k < 2
            || self.series.iter().any(|s| s.values.len() != k)
            || self.background.iter().any(|b| b.len() != k)
            || bands.clone().any(|(lo, hi)| lo.len() != k || hi.len() != k)
        {
            return Err(ReportError::BadInput(format!("every curve and band needs {k} >= 2 values on the grid")));
        }
        let (x0, x1) = (self.grid[0], self.grid[k - 1]);
        let band_values = bands.flat_map(|(lo, hi)| lo.iter().chain(hi));
        let (y0, y1) = padded_range(
            self.series.iter().flat_map(|s| &s.values).chain(self.background.iter().flatten()).chain(band_values),
        )
        .ok_or_else(|| ReportError::BadInput("no finite value to draw".into()))?;
        // Headroom for the legend (upper right, about 6% of the height per entry), so that it never
        // covers the data.
        let entries = self.series.iter().filter(|s| !s.label.is_empty()).count() as f64;
        let y1 = y1 + (y1 - y0) * (0.04 + 0.07 * entries);
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
            if let Some((lower, upper)) = &s.band {
                let ribbon: Vec<(f64, f64)> = self
                    .grid
                    .iter()
                    .zip(upper)
                    .chain(self.grid.iter().zip(lower).rev())
                    .filter(|(_, y)| y.is_finite())
                    .map(|(x, y)| (*x, *y))
                    .collect();
                chart
                    .draw_series(std::iter::once(Polygon::new(ribbon, s.color.mix(0.18).filled())))
                    .map_err(|e| draw_err(path, e))?;
            }
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
