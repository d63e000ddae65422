//! What `headroom calibrate` prints: every estimator compared with this
//! run's measurement, the fitted coefficients, the per-phase readings, the
//! check at a setting the fit did not see, and the GPU step's outcome.

use std::io::Write;

use serde::Serialize;
use tabled::settings::Style;
use tabled::settings::object::Columns;
use tabled::settings::{Alignment, Modify};

use super::fit::EstimatorRow;
use super::measure::PhasePeak;
use crate::estimate::Coefficients;
use crate::output::Report;
use crate::units::fmt_bytes;

/// The workload that ran.
#[derive(Debug, Clone, Serialize)]
pub struct Workload {
    /// Nodes of the synthetic graph.
    pub nodes: u64,
    /// Edges generated.
    pub edges: u64,
    /// Features per node (float32).
    pub features: u64,
    /// Worker processes.
    pub workers: u32,
    /// Seeds per batch.
    pub batch_size: u64,
    /// Neighbors per hop.
    pub fanout: Vec<i64>,
    /// Training batches.
    pub batches: u64,
    /// Seed.
    pub seed: u64,
}

/// The calibrated plan at a setting the fit did not measure, against a run there.
#[derive(Debug, Clone, Serialize)]
pub struct Generalisation {
    /// Seeds per batch of the check run.
    pub batch_size: u64,
    /// Workers of the check run.
    pub workers: u32,
    /// Peak host bytes the calibrated estimators predict there.
    pub predicted_bytes: u64,
    /// Peak PSS sum measured there.
    pub measured_bytes: u64,
    /// (predicted − measured) / measured.
    pub rel_error: f64,
}

/// `headroom calibrate`'s report.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrateReport {
    /// The workload measured.
    pub workload: Workload,
    /// Every estimator compared, with the fitted coefficients.
    pub estimators: Vec<EstimatorRow>,
    /// The coefficients written: the framework constants of real Python
    /// jobs (never this Rust workload's), with the GPU context where measured.
    pub coefficients: Coefficients,
    /// What this Rust workload measured for its own runtime, worker pages and
    /// sampler scratch: used to check the mechanisms on this run, not written.
    pub workload_coefficients: Coefficients,
    /// Per-phase peaks measured (load, build_loaders, train).
    pub phases: Vec<(String, PhasePeak)>,
    /// The check at another batch size and worker count; null when skipped.
    pub generalisation: Option<Generalisation>,
    /// The GPU step, in one line.
    pub gpu: String,
    /// What the GPU step measured; null when it did not run.
    pub gpu_measured: Option<crate::calibrate::gpu::GpuMeasured>,
    /// Where the calibration file was written; null when not written.
    pub written_to: Option<String>,
    /// Wall time of the whole calibration, seconds.
    pub seconds: f64,
}

fn pct(e: f64) -> String {
    format!("{:+.1}%", e * 100.0)
}

impl Report for CalibrateReport {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let wl = &self.workload;
        writeln!(
            w,
            "headroom calibrate: {} nodes, {} edges, {} features; batch {}, fanout {:?}, {} workers, {} batches, seed {}",
            wl.nodes,
            wl.edges,
            wl.features,
            wl.batch_size,
            wl.fanout,
            wl.workers,
            wl.batches,
            wl.seed
        )?;
        let rows: Vec<[String; 4]> = self
            .estimators
            .iter()
            .map(|r| {
                [
                    r.name.clone(),
                    fmt_bytes(r.predicted_bytes),
                    fmt_bytes(r.measured_bytes),
                    pct(r.rel_error),
                ]
            })
            .collect();
        let mut t = tabled::builder::Builder::default();
        t.push_record(["estimator", "predicted", "measured", "error"]);
        for r in rows {
            t.push_record(r);
        }
        let mut table = t.build();
        table
            .with(Style::rounded())
            .with(Modify::new(Columns::new(1..)).with(Alignment::right()));
        writeln!(w, "{table}")?;
        let mut t = tabled::builder::Builder::default();
        t.push_record([
            "measured",
            "RSS sum",
            "host (PSS)",
            "queued shm",
            "largest worker USS",
            "cgroup usage",
        ]);
        for (phase, p) in &self.phases {
            t.push_record([
                phase.clone(),
                fmt_bytes(p.rss_sum),
                fmt_bytes(p.pss_sum),
                fmt_bytes(p.unmapped_shm),
                p.worker_uss
                    .values()
                    .max()
                    .map_or("·".into(), |&u| fmt_bytes(u)),
                p.cgroup_usage.map_or("·".into(), fmt_bytes),
            ]);
        }
        let mut table = t.build();
        table
            .with(Style::rounded())
            .with(Modify::new(Columns::new(1..)).with(Alignment::right()));
        writeln!(w, "{table}")?;
        let m = &self.workload_coefficients;
        writeln!(
            w,
            "measured on this workload (a Rust process: checks the mechanisms above, not written):"
        )?;
        writeln!(
            w,
            "  runtime {}, worker private pages {}, sampler scratch {} B/node",
            fmt_bytes(m.runtime_bytes),
            fmt_bytes(m.worker_private_bytes),
            m.sampler_bytes_per_node
        )?;
        let c = &self.coefficients;
        writeln!(w, "coefficients written (Python jobs):")?;
        for (name, value) in [
            ("runtime_bytes", fmt_bytes(c.runtime_bytes)),
            ("worker_private_bytes", fmt_bytes(c.worker_private_bytes)),
            (
                "sampler_bytes_per_node",
                format!("{} B", c.sampler_bytes_per_node),
            ),
        ] {
            writeln!(w, "  {name:<23} {value} ({})", c.provenance_of(name))?;
        }
        writeln!(
            w,
            "  cuda_context_bytes      {} ({})",
            fmt_bytes(c.cuda_context_bytes),
            if c.cuda_context_measured {
                "measured: NVML less the live segments"
            } else {
                "not measured: default"
            }
        )?;
        writeln!(
            w,
            "  allocator_reserve_fraction {} (not measured: default)",
            c.allocator_reserve_fraction
        )?;
        if let Some(g) = &self.generalisation {
            writeln!(
                w,
                "check at batch {} with {} workers (not fitted on): predicted peak {}, measured {} ({})",
                g.batch_size,
                g.workers,
                fmt_bytes(g.predicted_bytes),
                fmt_bytes(g.measured_bytes),
                pct(g.rel_error)
            )?;
        }
        writeln!(w, "{}", self.gpu)?;
        if let Some(p) = &self.written_to {
            writeln!(w, "written to {p} (plan --calibration {p})")?;
        }
        writeln!(w, "took {:.1} s", self.seconds)
    }
}

/// What `calibrate --from DIR` did.
#[derive(Debug, Clone, Serialize)]
pub struct FromRunReport {
    /// The probed run directory.
    pub from: String,
    /// The job the probe saw, as a job spec.
    pub job: serde_json::Value,
    /// What the probe could not see, with the value taken.
    pub assumed: Vec<String>,
    /// The fit: coefficients, what moved, phases before and after.
    pub fit: super::from_run::FromRun,
    /// Where the calibration file was written.
    pub written_to: Option<String>,
}

impl Report for FromRunReport {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        writeln!(w, "calibrated from the probed run in {}", self.from)?;
        writeln!(
            w,
            "  {:<14} {:>11} {:>16} {:>16}",
            "phase", "measured", "before", "after"
        )?;
        let cell = |r: &crate::probe::phases::PhaseRow| match r.rel_error {
            Some(e) => format!("{} {:+.1}%", fmt_bytes(r.predicted_bytes), e * 100.0),
            None => fmt_bytes(r.predicted_bytes),
        };
        for (b, a) in self.fit.before.iter().zip(&self.fit.after) {
            let m = b
                .measured_bytes
                .map(fmt_bytes)
                .unwrap_or_else(|| "-".into());
            writeln!(
                w,
                "  {:<14} {:>11} {:>16} {:>16}",
                b.phase,
                m,
                cell(b),
                cell(a)
            )?;
        }
        let c = &self.fit.coefficients;
        writeln!(
            w,
            "runtime_bytes: {} ({})",
            fmt_bytes(c.runtime_bytes),
            c.provenance_of("runtime_bytes")
        )?;
        for m in &self.fit.moved {
            writeln!(w, "{}: {:.4} -> {:.4}", m.name, m.from, m.to)?;
        }
        match &self.written_to {
            Some(p) => writeln!(w, "written to {p}"),
            None => writeln!(w, "not written (no config directory; give --out)"),
        }
    }
}
