//! What every figure shares: the white canvas, the titled chart frame, the legend, axis ranges.

use std::path::Path;

use plotters::prelude::*;

use crate::error::{Result, draw_err};

/// A white SVG canvas of `size` pixels.
pub(crate) fn white_canvas(
    path: &Path,
    size: (u32, u32),
) -> Result<DrawingArea<SVGBackend<'_>, plotters::coord::Shift>> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(path, e))?;
    Ok(root)
}

/// The chart frame every line figure uses: a 20-point title, 12-pixel margins, room for axis labels.
pub(crate) fn titled_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: &str,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, ("sans-serif", 20)).margin(12).x_label_area_size(40).y_label_area_size(y_label_area);
    builder
}

/// The legend box of a chart, upper right, over a translucent white background.
pub(crate) fn draw_legend<'a, CT: plotters::coord::CoordTranslate>(
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
pub(crate) fn padded_range<'a>(values: impl Iterator<Item = &'a f64>) -> Option<(f64, f64)> {
    let (lo, hi) =
        values.filter(|v| v.is_finite()).fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(*v), h.max(*v)));
    if !lo.is_finite() {
        return None;
    }
    let pad = if hi > lo { 0.05 * (hi - lo) } else { 0.5 * lo.abs().max(1.0) };
    Some((lo - pad, hi + pad))
}
