//! The SVG picture of a run: memory over time (PSS stacked by role: main,
//! training workers, evaluation workers, other; RSS summed, cgroup usage,
//! GPU memory; the limit, the predicted peak; the probe's phases as shaded
//! spans; the end or the kill with its cause) above the number of live
//! processes.

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::sample::Sample;
use crate::error::{Error, Result};

/// What to draw besides the samples.
#[derive(Debug, Clone, Default)]
pub struct PlotMarks {
    /// The cgroup limit, bytes.
    pub limit: Option<u64>,
    /// The predicted peak, bytes (from `--job` or `--predicted-peak`).
    pub predicted_peak: Option<u64>,
    /// The chart's title.
    pub title: String,
    /// When the job ended (seconds) and how, in words (`killed: host_oom_cgroup`).
    pub end: Option<(f64, String)>,
    /// Phases the probe reported: (from, to, name), seconds after the start.
    pub phases: Vec<(f64, f64, String)>,
}

/// One stacked role: its legend, its colour, its PSS in a sample.
type Band = (&'static str, RGBColor, fn(&Sample) -> u64);

/// The stacked roles, bottom to top.
const BANDS: [Band; 4] = [
    ("PSS: main", RGBColor(70, 110, 200), |s| s.main_pss_bytes),
    ("PSS: training workers", RGBColor(120, 180, 240), |s| {
        s.train_workers_pss_bytes
    }),
    ("PSS: evaluation workers", RGBColor(240, 190, 90), |s| {
        s.eval_workers_pss_bytes
    }),
    ("PSS: other children", RGBColor(190, 190, 190), |s| {
        s.other_pss_bytes
    }),
];

/// Draws the roles' PSS stacked, bottom to top, as filled bands.
fn draw_bands<DB: DrawingBackend>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    samples: &[Sample],
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let mut below: Vec<f64> = vec![0.0; samples.len()];
    for (name, color, get) in BANDS {
        if samples.iter().all(|s| get(s) == 0) {
            continue;
        }
        let above: Vec<f64> = samples
            .iter()
            .zip(&below)
            .map(|(s, b)| b + get(s) as f64 / GIB)
            .collect();
        let mut outline: Vec<(f64, f64)> = samples
            .iter()
            .map(|s| s.t_s)
            .zip(above.iter().copied())
            .collect();
        outline.extend(
            samples
                .iter()
                .map(|s| s.t_s)
                .zip(below.iter().copied())
                .rev(),
        );
        chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                color.mix(0.6).filled(),
            )))?
            .label(name)
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 4), (x + 20, y + 4)], color.mix(0.6).filled())
            });
        below = above;
    }
    Ok(())
}

const GIB: f64 = (1u64 << 30) as f64;

/// Renders the timeline to an SVG document.
pub fn render_svg(samples: &[Sample], marks: &PlotMarks) -> Result<String> {
    let mut svg = String::new();
    draw(&mut svg, samples, marks).map_err(|e| Error::Internal(format!("plot: {e}")))?;
    Ok(svg)
}

/// Reads one measure of a sample.
type Measure = Box<dyn Fn(&Sample) -> Option<u64>>;

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

fn draw(svg: &mut String, samples: &[Sample], marks: &PlotMarks) -> DrawResult {
    let root = SVGBackend::with_string(svg, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(430);
    let t_max = samples.last().map(|s| s.t_s).unwrap_or(1.0).max(0.1);
    let series: [(&str, RGBColor, Measure); 4] = [
        (
            "PSS, summed over processes",
            BLUE,
            Box::new(|s| Some(s.pss_sum_bytes)),
        ),
        (
            "RSS, summed over processes",
            RGBColor(230, 140, 0),
            Box::new(|s| Some(s.rss_sum_bytes)),
        ),
        (
            "cgroup usage",
            RGBColor(0, 150, 0),
            Box::new(|s| s.cgroup_usage_bytes),
        ),
        ("GPU memory (NVML)", MAGENTA, Box::new(|s| s.gpu_used_bytes)),
    ];
    let mut y_max = marks
        .limit
        .unwrap_or(0)
        .max(marks.predicted_peak.unwrap_or(0));
    for s in samples {
        for (_, _, get) in &series {
            y_max = y_max.max(get(s).unwrap_or(0));
        }
    }
    let y_max = (y_max as f64 / GIB * 1.1).max(0.01);
    let mut chart = ChartBuilder::on(&top)
        .caption(&marks.title, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
    chart
        .configure_mesh()
        .y_desc("GiB")
        .x_desc("seconds")
        .draw()?;
    for (i, (from, to, name)) in marks.phases.iter().enumerate() {
        // Neighbouring phases alternate shades; evaluation stands out.
        let shade = match (name.as_str(), i % 2) {
            ("evaluate", _) => RGBColor(255, 230, 200),
            (_, 0) => RGBColor(235, 235, 245),
            _ => RGBColor(245, 245, 250),
        };
        chart.draw_series(std::iter::once(Rectangle::new(
            [(*from, 0.0), (*to, y_max)],
            shade.filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            name.clone(),
            (*from, y_max * 0.97),
            ("sans-serif", 12),
        )))?;
    }
    draw_bands(&mut chart, samples)?;
    for (name, color, get) in &series {
        let points: Vec<(f64, f64)> = samples
            .iter()
            .filter_map(|s| Some((s.t_s, get(s)? as f64 / GIB)))
            .collect();
        if points.is_empty() {
            continue;
        }
        let c = *color;
        chart
            .draw_series(LineSeries::new(points, c.stroke_width(2)))?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    let hlines = [
        ("limit", marks.limit, RED),
        ("predicted peak", marks.predicted_peak, BLACK),
    ];
    for (name, value, color) in hlines {
        let Some(v) = value else { continue };
        let y = v as f64 / GIB;
        chart
            .draw_series(LineSeries::new(
                vec![(0.0, y), (t_max, y)],
                color.stroke_width(1),
            ))?
            .label(format!("{name} {}", crate::units::fmt_bytes(v)))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    if let Some((t, why)) = &marks.end {
        chart.draw_series(LineSeries::new(
            vec![(*t, 0.0), (*t, y_max)],
            RED.stroke_width(2),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            why.clone(),
            (*t, y_max * 0.5),
            ("sans-serif", 13)
                .into_font()
                .color(&RED)
                .pos(Pos::new(HPos::Right, VPos::Center)),
        )))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;

    let p_max = samples
        .iter()
        .map(|s| s.processes)
        .max()
        .unwrap_or(1)
        .max(1) as f64
        + 1.0;
    let mut procs = ChartBuilder::on(&bottom)
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..t_max, 0.0..p_max)?;
    procs
        .configure_mesh()
        .y_desc("processes")
        .x_desc("seconds")
        .draw()?;
    procs.draw_series(LineSeries::new(
        samples.iter().map(|s| (s.t_s, s.processes as f64)),
        BLACK.stroke_width(2),
    ))?;
    root.present()?;
    Ok(())
}
