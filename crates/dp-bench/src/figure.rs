//! Figures: the data behind a plot, written as long-format CSV and drawn as SVG.

use std::path::Path;

use crate::error::{Error, Result};
use crate::format::{check_id, csv_field, csv_number};

/// How a series is drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Style {
    /// A polyline through the points (broken at non-finite points).
    #[default]
    Line,
    /// A marker at each point, no line.
    Points,
    /// A polyline with a marker at each point.
    LineWithPoints,
}

/// Where the legend goes inside the plotting area.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Legend {
    /// The corner where the legend covers the least data (the default).
    #[default]
    Auto,
    /// Top left corner.
    UpperLeft,
    /// Top right corner.
    UpperRight,
    /// Bottom left corner.
    LowerLeft,
    /// Bottom right corner.
    LowerRight,
    /// No legend.
    Hidden,
}

/// One labelled set of `(x, y)` points in a [`Figure`].
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label; also the `series` column of the CSV.
    pub label: String,
    /// The points, in drawing order. Non-finite values are kept in the CSV and skipped in plots.
    pub points: Vec<(f64, f64)>,
    /// Line, markers or both.
    pub style: Style,
    /// Draw the line dashed (ignored for [`Style::Points`]).
    pub dashed: bool,
}

impl Series {
    /// A solid line through `points`.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            style: Style::Line,
            dashed: false,
        }
    }

    /// Markers only.
    pub fn points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            style: Style::Points,
            ..Self::line(label, points)
        }
    }

    /// A solid line with a marker at each point.
    pub fn line_with_points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            style: Style::LineWithPoints,
            ..Self::line(label, points)
        }
    }

    /// The same series drawn dashed.
    #[must_use]
    pub fn dashed(mut self) -> Self {
        self.dashed = true;
        self
    }
}

/// A horizontal reference line (a bound, a non-private baseline, ...).
#[derive(Clone, Debug, PartialEq)]
pub struct RefLine {
    /// Height of the line.
    pub y: f64,
    /// Legend label; `None` draws the line without a legend entry.
    pub label: Option<String>,
}

/// The data and presentation of one plot.
///
/// Build one with [`Figure::new`] and the chained setters, then hand it to the runner as an
/// [`Artifact`](crate::Artifact); the runner writes `<id>.csv` and `<id>.svg`.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// File stem of the outputs: ASCII letters, digits, `-`, `_` and `.`.
    pub id: String,
    /// Title drawn above the plot.
    pub title: String,
    /// Label of the horizontal axis.
    pub x_label: String,
    /// Label of the vertical axis.
    pub y_label: String,
    /// Logarithmic horizontal axis (non-positive x values are then skipped in the plot).
    pub x_log: bool,
    /// Logarithmic vertical axis (non-positive y values are then skipped in the plot).
    pub y_log: bool,
    /// Fixed horizontal range; `None` fits the data.
    pub x_range: Option<(f64, f64)>,
    /// Fixed vertical range; `None` fits the data and reference lines.
    pub y_range: Option<(f64, f64)>,
    /// Legend position.
    pub legend: Legend,
    /// Horizontal reference lines.
    pub ref_lines: Vec<RefLine>,
    /// The data, drawn in order with distinct colours.
    pub series: Vec<Series>,
}

impl Figure {
    /// An empty figure with linear axes and an automatically placed legend.
    pub fn new(
        id: impl Into<String>,
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: false,
            y_log: false,
            x_range: None,
            y_range: None,
            legend: Legend::default(),
            ref_lines: Vec::new(),
            series: Vec::new(),
        }
    }

    /// Use a logarithmic x axis.
    #[must_use]
    pub fn log_x(mut self) -> Self {
        self.x_log = true;
        self
    }

    /// Use a logarithmic y axis.
    #[must_use]
    pub fn log_y(mut self) -> Self {
        self.y_log = true;
        self
    }

    /// Fix the x range to `lo..hi`.
    #[must_use]
    pub fn with_x_range(mut self, lo: f64, hi: f64) -> Self {
        self.x_range = Some((lo, hi));
        self
    }

    /// Fix the y range to `lo..hi`.
    #[must_use]
    pub fn with_y_range(mut self, lo: f64, hi: f64) -> Self {
        self.y_range = Some((lo, hi));
        self
    }

    /// Place (or hide) the legend.
    #[must_use]
    pub fn with_legend(mut self, legend: Legend) -> Self {
        self.legend = legend;
        self
    }

    /// Add a horizontal reference line at `y`, with an optional legend label.
    #[must_use]
    pub fn with_ref_line(mut self, y: f64, label: Option<&str>) -> Self {
        self.ref_lines.push(RefLine {
            y,
            label: label.map(str::to_owned),
        });
        self
    }

    /// Append a series.
    #[must_use]
    pub fn with_series(mut self, series: Series) -> Self {
        self.series.push(series);
        self
    }

    /// Check the id and the fixed ranges.
    pub fn validate(&self) -> Result<()> {
        check_id(&self.id)?;
        let bad = |reason: String| Error::InvalidArtifact {
            id: self.id.clone(),
            reason,
        };
        for (name, range, log) in [
            ("x", self.x_range, self.x_log),
            ("y", self.y_range, self.y_log),
        ] {
            if let Some((lo, hi)) = range {
                if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                    return Err(bad(format!(
                        "{name} range {lo}..{hi} is not increasing and finite"
                    )));
                }
                if log && lo <= 0.0 {
                    return Err(bad(format!(
                        "{name} range {lo}..{hi} must be positive on a log axis"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The figure's data in long format: header `series,x,y`, one row per point, numbers in
    /// full (round-trip) precision, non-finite values as `inf`, `-inf`, `nan`.
    ///
    /// A labelled reference line appears as a two-point series at the ends of the data's finite
    /// x range (at `x = nan` if there is none).
    pub fn to_csv(&self) -> String {
        let mut out = String::from("series,x,y\n");
        for s in &self.series {
            let label = csv_field(&s.label);
            for &(x, y) in &s.points {
                out.push_str(&format!("{label},{},{}\n", csv_number(x), csv_number(y)));
            }
        }
        let finite_x = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .filter(|x| x.is_finite());
        let (lo, hi) = finite_x.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
            (lo.min(x), hi.max(x))
        });
        let ends = if lo <= hi {
            vec![lo, hi]
        } else {
            vec![f64::NAN]
        };
        for line in &self.ref_lines {
            if let Some(label) = &line.label {
                let label = csv_field(label);
                for &x in &ends {
                    out.push_str(&format!(
                        "{label},{},{}\n",
                        csv_number(x),
                        csv_number(line.y)
                    ));
                }
            }
        }
        out
    }

    /// Write [`Figure::to_csv`] to `path`.
    pub fn write_csv(&self, path: &Path) -> Result<()> {
        std::fs::write(path, self.to_csv()).map_err(|e| Error::io(path, e))
    }

    /// Draw the figure as an SVG document.
    pub fn to_svg(&self) -> Result<String> {
        self.validate()?;
        crate::plot::render_svg(self).map_err(|message| Error::Plot {
            path: format!("{}.svg", self.id).into(),
            message,
        })
    }

    /// Draw the figure and write the SVG to `path`.
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        self.validate()?;
        let svg = crate::plot::render_svg(self).map_err(|message| Error::Plot {
            path: path.to_owned(),
            message,
        })?;
        std::fs::write(path, svg).map_err(|e| Error::io(path, e))
    }
}
