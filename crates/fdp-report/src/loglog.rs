//! Error against n on log-log axes, one line per method, with error bars.

use std::path::Path;

use plotters::prelude::*;

use crate::canvas::{draw_legend, titled_chart, white_canvas};
use crate::error::{ReportError, Result, draw_err};

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
