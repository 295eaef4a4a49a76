//! Functions on a 2-D tensor grid, side by side on one colour scale.

use std::path::Path;

use plotters::prelude::*;

use crate::canvas::white_canvas;
use crate::error::{ReportError, Result, draw_err};

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
