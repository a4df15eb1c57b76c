//! SVG rendering of a [`Figure`] with plotters.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::figure::{Figure, Legend, Series, Style};
use crate::format::human_number;

/// Size of every figure, in pixels.
const SIZE: (u32, u32) = (820, 560);

/// Okabe–Ito colour-blind-safe palette (black moved last), then a few extra distinct colours.
const PALETTE: [RGBColor; 10] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(120, 94, 60),   // brown
    RGBColor(100, 100, 100), // grey
    RGBColor(170, 170, 0),   // olive
    RGBColor(0, 0, 0),       // black
];

const REF_COLOR: RGBColor = RGBColor(90, 90, 90);

/// One axis: whether it is logarithmic and its drawn range.
#[derive(Clone, Copy)]
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Axis {
    fn plottable(&self, v: f64) -> bool {
        v.is_finite() && (!self.log || v > 0.0)
    }

    /// Map to the space where the axis is linear.
    fn fwd(&self, v: f64) -> f64 {
        if self.log { v.log10() } else { v }
    }

    fn inv(&self, v: f64) -> f64 {
        if self.log { 10f64.powf(v) } else { v }
    }

    /// Fit an axis to `values` (already filtered to plottable ones), padding by `pad` of the span.
    fn fit(log: bool, fixed: Option<(f64, f64)>, values: &[f64], pad: f64) -> Self {
        if let Some((lo, hi)) = fixed {
            return Self { log, lo, hi };
        }
        let probe = Self {
            log,
            lo: 0.0,
            hi: 0.0,
        };
        let t: Vec<f64> = values.iter().map(|&v| probe.fwd(v)).collect();
        let (mut lo, mut hi) = t
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        if lo > hi {
            (lo, hi) = (0.0, 1.0);
        } else if lo == hi {
            let half = if log { 0.5 } else { (lo.abs() * 0.1).max(0.5) };
            (lo, hi) = (lo - half, hi + half);
        } else {
            let span = hi - lo;
            (lo, hi) = (lo - pad * span, hi + pad * span);
        }
        Self {
            log,
            lo: probe.inv(lo),
            hi: probe.inv(hi),
        }
    }
}

/// Clip the segment `a`–`b` (in linear-space coordinates) to the box; Liang–Barsky.
fn clip(
    a: (f64, f64),
    b: (f64, f64),
    lo: (f64, f64),
    hi: (f64, f64),
) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [
        (-dx, a.0 - lo.0),
        (dx, hi.0 - a.0),
        (-dy, a.1 - lo.1),
        (dy, hi.1 - a.1),
    ] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let r = q / p;
            if p < 0.0 {
                t0 = t0.max(r);
            } else {
                t1 = t1.min(r);
            }
        }
    }
    (t0 <= t1).then_some({
        (
            (a.0 + t0 * dx, a.1 + t0 * dy),
            (a.0 + t1 * dx, a.1 + t1 * dy),
        )
    })
}

/// The visible pieces of a series' polyline: broken at unplottable points and clipped to the
/// axes' box.
fn polylines(points: &[(f64, f64)], x: Axis, y: Axis) -> Vec<Vec<(f64, f64)>> {
    let lo = (x.fwd(x.lo), y.fwd(y.lo));
    let hi = (x.fwd(x.hi), y.fwd(y.hi));
    let mut out: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let mut flush = |current: &mut Vec<(f64, f64)>| {
        if current.len() > 1 {
            out.push(std::mem::take(current));
        }
        current.clear();
    };
    let mut prev: Option<(f64, f64)> = None;
    for &(px, py) in points {
        if !(x.plottable(px) && y.plottable(py)) {
            flush(&mut current);
            prev = None;
            continue;
        }
        let p = (x.fwd(px), y.fwd(py));
        if let Some(a) = prev {
            match clip(a, p, lo, hi) {
                Some((c0, c1)) => {
                    // A segment entering the box starts a new piece.
                    if current.last() != Some(&c0) {
                        flush(&mut current);
                        current.push(c0);
                    }
                    current.push(c1);
                }
                None => flush(&mut current),
            }
        }
        prev = Some(p);
    }
    flush(&mut current);
    out.into_iter()
        .map(|line| {
            line.into_iter()
                .map(|(u, v)| (x.inv(u), y.inv(v)))
                .collect()
        })
        .collect()
}

/// Labelled (bold) and grid-only (light) ticks of a log axis over `lo..hi` (`0 < lo < hi`):
/// powers of ten when the range spans enough decades, else 1-2-5 or 1..9 times powers of ten,
/// so that there are at least four labels and at most about ten.
fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return (Vec::new(), Vec::new());
    }
    let e0 = lo.log10().floor() as i32;
    let e1 = hi.log10().ceil() as i32;
    // Slightly widened bounds so that ticks at the exact ends survive rounding.
    let inside = |v: f64| v >= lo * (1.0 - 1e-9) && v <= hi * (1.0 + 1e-9);
    let ticks = |mantissas: &[f64], stride: i32| -> Vec<f64> {
        (e0..=e1)
            .filter(|e| (e - e0) % stride == 0)
            .flat_map(|e| mantissas.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|&v| inside(v))
            .collect()
    };
    let decades = ticks(&[1.0], 1);
    if decades.len() >= 4 {
        let stride = decades.len().div_ceil(10) as i32;
        let bold = ticks(&[1.0], stride);
        let light = if stride == 1 && decades.len() <= 8 {
            ticks(&[2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0], 1)
        } else {
            decades.into_iter().filter(|v| !bold.contains(v)).collect()
        };
        return (bold, light);
    }
    let all: [f64; 9] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    for mantissas in [&[1.0, 3.0][..], &[1.0, 2.0, 5.0][..]] {
        let bold = ticks(mantissas, 1);
        if bold.len() >= 4 {
            let light = ticks(&all, 1)
                .into_iter()
                .filter(|v| !bold.contains(v))
                .collect();
            return (bold, light);
        }
    }
    let bold = ticks(&all, 1);
    if bold.len() >= 3 {
        return (bold, Vec::new());
    }
    // Less than a factor of ~3: ten evenly spaced (in log) ticks.
    let (a, b) = (lo.ln(), hi.ln());
    (
        (0..=5)
            .map(|i| (a + (b - a) * f64::from(i) / 5.0).exp())
            .collect(),
        Vec::new(),
    )
}

/// Draw `fig` into an SVG string. Errors are plotters' messages.
pub(crate) fn render_svg(fig: &Figure) -> Result<String, String> {
    let plottable = |s: &Series, x_log: bool, y_log: bool| -> Vec<(f64, f64)> {
        s.points
            .iter()
            .copied()
            .filter(|&(x, y)| {
                x.is_finite() && y.is_finite() && (!x_log || x > 0.0) && (!y_log || y > 0.0)
            })
            .collect()
    };
    let pts: Vec<(f64, f64)> = fig
        .series
        .iter()
        .flat_map(|s| plottable(s, fig.x_log, fig.y_log))
        .collect();
    let xs: Vec<f64> = pts.iter().map(|p| p.0).collect();
    let mut ys: Vec<f64> = pts.iter().map(|p| p.1).collect();
    ys.extend(
        fig.ref_lines
            .iter()
            .map(|l| l.y)
            .filter(|&y| y.is_finite() && (!fig.y_log || y > 0.0)),
    );
    let x = Axis::fit(fig.x_log, fig.x_range, &xs, 0.0);
    let y = Axis::fit(fig.y_log, fig.y_range, &ys, 0.05);

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        // plotters' own log key points duplicate decade labels and crowd narrow ranges, so
        // log axes get ticks from `log_ticks`.
        let log_axis = |a: Axis| {
            let (bold, light) = log_ticks(a.lo, a.hi);
            (a.lo..a.hi)
                .log_scale()
                .with_key_points(bold)
                .with_light_points(light)
        };
        match (x.log, y.log) {
            (false, false) => draw(&root, fig, x, y, x.lo..x.hi, y.lo..y.hi),
            (true, false) => draw(&root, fig, x, y, log_axis(x), y.lo..y.hi),
            (false, true) => draw(&root, fig, x, y, x.lo..x.hi, log_axis(y)),
            (true, true) => draw(&root, fig, x, y, log_axis(x), log_axis(y)),
        }?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

fn draw<XS, YS>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    fig: &Figure,
    x: Axis,
    y: Axis,
    x_spec: XS,
    y_spec: YS,
) -> Result<(), String>
where
    XS: AsRangedCoord<Value = f64>,
    YS: AsRangedCoord<Value = f64>,
    XS::CoordDescType: ValueFormatter<f64>,
    YS::CoordDescType: ValueFormatter<f64>,
{
    let err = |e: DrawingAreaErrorKind<_>| e.to_string();
    let mut chart = ChartBuilder::on(root)
        .caption(&fig.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(52)
        .y_label_area_size(76)
        .build_cartesian_2d(x_spec, y_spec)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .axis_desc_style(("sans-serif", 17))
        .label_style(("sans-serif", 14))
        .x_label_formatter(&|v| human_number(*v, 3))
        .y_label_formatter(&|v| human_number(*v, 3))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(215, 215, 215))
        .draw()
        .map_err(err)?;

    let mut any_label = false;
    for (i, s) in fig.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let line_style = color.stroke_width(2);
        let lines = matches!(s.style, Style::Line | Style::LineWithPoints);
        let markers = matches!(s.style, Style::Points | Style::LineWithPoints);

        if lines {
            for piece in polylines(&s.points, x, y) {
                if s.dashed {
                    chart
                        .draw_series(DashedLineSeries::new(piece, 8, 5, line_style))
                        .map_err(err)?;
                } else {
                    chart
                        .draw_series(LineSeries::new(piece, line_style))
                        .map_err(err)?;
                }
            }
        }
        if markers {
            let inside = |&(px, py): &(f64, f64)| {
                x.plottable(px)
                    && y.plottable(py)
                    && (x.lo..=x.hi).contains(&px)
                    && (y.lo..=y.hi).contains(&py)
            };
            chart
                .draw_series(
                    s.points
                        .iter()
                        .copied()
                        .filter(inside)
                        .map(|p| Circle::new(p, 3, color.filled())),
                )
                .map_err(err)?;
        }

        // The legend entry is attached to an empty element so that empty series still get one.
        if !s.label.is_empty() {
            any_label = true;
            let anno = chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(err)?;
            anno.label(s.label.as_str());
            let dashed = s.dashed;
            match (lines, markers) {
                (true, true) => anno.legend(move |(lx, ly)| {
                    EmptyElement::at((lx, ly))
                        + legend_line(0, 0, dashed, line_style)
                        + Circle::new((10, 0), 3, color.filled())
                }),
                (true, false) => {
                    anno.legend(move |(lx, ly)| legend_line(lx, ly, dashed, line_style))
                }
                _ => anno.legend(move |(lx, ly)| Circle::new((lx + 10, ly), 3, color.filled())),
            };
        }
    }

    for line in &fig.ref_lines {
        if !(y.plottable(line.y) && (y.lo..=y.hi).contains(&line.y)) {
            continue;
        }
        let style = REF_COLOR.stroke_width(1);
        let anno = chart
            .draw_series(DashedLineSeries::new(
                vec![(x.lo, line.y), (x.hi, line.y)],
                4,
                4,
                style,
            ))
            .map_err(err)?;
        if let Some(label) = &line.label {
            any_label = true;
            anno.label(label.as_str())
                .legend(move |(lx, ly)| legend_line(lx, ly, true, style));
        }
    }

    let position = match fig.legend {
        Legend::Auto => Some(emptiest_corner(fig, x, y)),
        Legend::UpperLeft => Some(SeriesLabelPosition::UpperLeft),
        Legend::UpperRight => Some(SeriesLabelPosition::UpperRight),
        Legend::LowerLeft => Some(SeriesLabelPosition::LowerLeft),
        Legend::LowerRight => Some(SeriesLabelPosition::LowerRight),
        Legend::Hidden => None,
    };
    if let (Some(position), true) = (position, any_label) {
        chart
            .configure_series_labels()
            .position(position)
            .margin(12)
            .label_font(("sans-serif", 15))
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(160, 160, 160))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// Approximate size of the plotting area in pixels (figure minus margins, captions, labels).
const PLOT_AREA: (f64, f64) = (710.0, 440.0);

/// The legend corner that hides the least data: counts points (and points interpolated along
/// lines) inside a legend-sized box at each corner, in the axes' linear space.
fn emptiest_corner(fig: &Figure, x: Axis, y: Axis) -> SeriesLabelPosition {
    let labels: Vec<&str> = fig
        .series
        .iter()
        .map(|s| s.label.as_str())
        .chain(fig.ref_lines.iter().filter_map(|l| l.label.as_deref()))
        .filter(|l| !l.is_empty())
        .collect();
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
    // Box size as fractions of the plotting area, from the legend's font and layout.
    let w = ((longest * 8.0 + 60.0) / PLOT_AREA.0).min(1.0);
    let h = ((labels.len() as f64 * 20.0 + 24.0) / PLOT_AREA.1).min(1.0);
    let norm = |a: Axis, v: f64| {
        let (lo, hi) = (a.fwd(a.lo), a.fwd(a.hi));
        (a.fwd(v) - lo) / (hi - lo)
    };
    let mut samples: Vec<(f64, f64)> = Vec::new();
    for s in &fig.series {
        if matches!(s.style, Style::Points) {
            samples.extend(
                s.points
                    .iter()
                    .filter(|&&(px, py)| x.plottable(px) && y.plottable(py))
                    .map(|&(px, py)| (norm(x, px), norm(y, py))),
            );
        } else {
            for piece in polylines(&s.points, x, y) {
                let piece: Vec<(f64, f64)> = piece
                    .iter()
                    .map(|&(px, py)| (norm(x, px), norm(y, py)))
                    .collect();
                for seg in piece.windows(2) {
                    for k in 0..8 {
                        let t = f64::from(k) / 8.0;
                        samples.push((
                            seg[0].0 + t * (seg[1].0 - seg[0].0),
                            seg[0].1 + t * (seg[1].1 - seg[0].1),
                        ));
                    }
                }
                samples.extend(piece.last().copied());
            }
        }
    }
    for line in &fig.ref_lines {
        if y.plottable(line.y) {
            let v = norm(y, line.y);
            samples.extend((0..=16).map(|k| (f64::from(k) / 16.0, v)));
        }
    }
    let corners = [
        (SeriesLabelPosition::UpperLeft, 0.0, 1.0 - h),
        (SeriesLabelPosition::UpperRight, 1.0 - w, 1.0 - h),
        (SeriesLabelPosition::LowerLeft, 0.0, 0.0),
        (SeriesLabelPosition::LowerRight, 1.0 - w, 0.0),
    ];
    let covered = |x0: f64, y0: f64| {
        samples
            .iter()
            .filter(|&&(u, v)| (x0..=x0 + w).contains(&u) && (y0..=y0 + h).contains(&v))
            .count()
    };
    corners
        .into_iter()
        .map(|(pos, x0, y0)| (covered(x0, y0), pos))
        .min_by_key(|(n, _)| *n)
        .map_or(SeriesLabelPosition::UpperLeft, |(_, pos)| pos)
}

/// A 20-pixel legend sample of a (possibly dashed) line.
fn legend_line(
    x: i32,
    y: i32,
    dashed: bool,
    style: ShapeStyle,
) -> DashedPathElement<std::vec::IntoIter<(i32, i32)>, i32> {
    // A solid line is a dashed line with one dash as long as the sample.
    let (dash, gap) = if dashed { (5, 3) } else { (20, 0) };
    DashedPathElement::new(vec![(x, y), (x + 20, y)], dash, gap, style)
}

#[cfg(test)]
mod tests {
    use super::log_ticks;

    #[test]
    fn log_ticks_are_readable() {
        let (bold, light) = log_ticks(1.01, 256.0);
        assert_eq!(bold, [3.0, 10.0, 30.0, 100.0]);
        assert!(light.contains(&2.0) && !light.contains(&3.0));
        let (bold, _) = log_ticks(1e-10, 1.0);
        assert_eq!(bold.len(), 6, "{bold:?}");
        assert_eq!(bold.first(), Some(&1e-10));
        let (bold, light) = log_ticks(0.5, 25.0);
        assert_eq!(bold, [0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
        assert!(!light.is_empty());
        let (bold, _) = log_ticks(1e-300, 1e300);
        assert!(bold.len() <= 11, "{}", bold.len());
        let (bold, _) = log_ticks(1.0, 1.5);
        assert!(bold.len() >= 3);
        assert_eq!(log_ticks(0.0, 1.0), (vec![], vec![]));
    }
}
