//! Arguments of `headroom calibrate` and its entry point: validate the sizes,
//! refuse what would not fit in memory before allocating anything, run the
//! workload, fit, compare, check at another setting, write the file.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use super::fit::{compare, fit, job_for, predicted_peak};
use super::report::{CalibrateReport, Generalisation, Workload};
use super::workload::{self, Config};
use crate::error::{Error, Result};
use crate::estimate::{CalibrationFile, Coefficients, default_calibration_path};
use crate::output::{Format, emit};
use crate::profiles::DegreeShape;
use crate::units::fmt_bytes;

/// Arguments of `headroom calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct CalibrateArgs {
    /// Nodes of the synthetic graph.
    #[arg(long, default_value_t = 300_000)]
    pub nodes: usize,
    /// Mean in-degree.
    #[arg(long, default_value_t = 15.0)]
    pub avg_degree: f64,
    /// Features per node (float32).
    #[arg(long, default_value_t = 128)]
    pub features: usize,
    /// DataLoader worker processes.
    #[arg(long, default_value_t = 2)]
    pub workers: u32,
    /// Seeds per batch.
    #[arg(long, default_value_t = 512)]
    pub batch_size: usize,
    /// Neighbors per hop, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "10,5")]
    pub fanout: Vec<i64>,
    /// Training batches.
    #[arg(long, default_value_t = 24)]
    pub batches: usize,
    /// Seed of the graph, the features and the sampling.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Batch size of the check run (default: half the batch size).
    #[arg(long)]
    pub check_batch_size: Option<usize>,
    /// Workers of the check run (default: one more worker).
    #[arg(long)]
    pub check_workers: Option<u32>,
    /// Skip the check run at another setting.
    #[arg(long)]
    pub no_check: bool,
    /// Skip the GPU step even where a GPU is found.
    #[arg(long)]
    pub no_gpu: bool,
    /// Fit from a real job instead: the directory `watch --probe --out DIR`
    /// wrote (the workload flags are then ignored).
    #[arg(long, value_name = "DIR")]
    pub from: Option<PathBuf>,
    /// Where to write the calibration file (default: the config directory's).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

fn range<T: PartialOrd + std::fmt::Display + Copy>(flag: &str, v: T, lo: T, hi: T) -> Result<()> {
    if v < lo || v > hi {
        return Err(Error::bad(format!(
            "{flag}: {v} is out of range ({lo} to {hi})"
        )));
    }
    Ok(())
}

impl CalibrateArgs {
    /// The workload these flags describe, validated.
    pub fn config(&self) -> Result<Config> {
        range("--nodes", self.nodes, 1_000, 1 << 31)?;
        range("--avg-degree", self.avg_degree, 1.0, 1_000.0)?;
        range("--features", self.features, 1, 4_096)?;
        range("--workers", self.workers, 1, 64)?;
        range("--batch-size", self.batch_size, 1, self.nodes)?;
        range("--batches", self.batches, 2, 1_000_000)?;
        if self.fanout.is_empty() || self.fanout.len() > 5 {
            return Err(Error::bad("--fanout: give 1 to 5 hops, e.g. --fanout 10,5"));
        }
        for &f in &self.fanout {
            range("--fanout", f, 1, 1_000)?;
        }
        let batches = self.batches.min(self.nodes / self.batch_size).max(1);
        Ok(Config {
            nodes: self.nodes,
            avg_degree: self.avg_degree,
            shape: DegreeShape {
                exponent: 2.3,
                zero_fraction: 0.3,
                max: (self.avg_degree * 200.0) as u64,
            },
            features: self.features,
            classes: 16,
            hidden: 32,
            workers: self.workers,
            prefetch: 2,
            batch_size: self.batch_size,
            fanout: self.fanout.clone(),
            batches,
            seed: self.seed,
        })
    }
}

/// Refuses a workload whose predicted peak (default coefficients, plus the
/// generator's own arrays: weights, alias tables, COO and CSC, about 40 bytes
/// a node and 24 an edge) exceeds MemAvailable.
pub fn check_fits(cfg: &Config, available: Option<u64>) -> Result<()> {
    let edges = (cfg.nodes as f64 * cfg.avg_degree) as u64;
    let job = job_for(cfg, edges)?;
    let generator = 40 * cfg.nodes as u64 + 24 * edges;
    let need = predicted_peak(&job, &Coefficients::default()) + generator;
    match available {
        Some(a) if need > a => Err(Error::bad(format!(
            "this calibration needs about {} of memory but only {} is available (MemAvailable): lower --nodes, --avg-degree or --features",
            fmt_bytes(need),
            fmt_bytes(a)
        ))),
        _ => Ok(()),
    }
}

fn progress_bar() -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = indicatif::ProgressBar::new(1000);
    let style = indicatif::ProgressStyle::with_template(
        "{msg:>14} [{bar:30}] {percent:>3}% {elapsed} (about {eta} left)",
    )
    .map(|s| s.progress_chars("=> "));
    if let Ok(s) = style {
        pb.set_style(s);
    }
    Some(pb)
}

/// Runs `headroom calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<ExitCode> {
    if let Some(dir) = &args.from {
        return from_run(args, dir);
    }
    let cfg = args.config()?;
    let check = if args.no_check {
        None
    } else {
        let mut c = cfg.clone();
        c.batch_size = args.check_batch_size.unwrap_or((cfg.batch_size / 2).max(1));
        c.workers = args.check_workers.unwrap_or(cfg.workers + 1);
        range("--check-batch-size", c.batch_size, 1, cfg.nodes)?;
        range("--check-workers", c.workers, 1, 64)?;
        c.batches = (cfg.batches * cfg.batch_size / c.batch_size)
            .min(cfg.nodes / c.batch_size)
            .max(1);
        c.seed = cfg.seed.wrapping_add(1000);
        Some(c)
    };
    let available = crate::collect::procfs::ProcReader::new().meminfo("MemAvailable");
    check_fits(&cfg, available)?;
    if let Some(c) = &check {
        check_fits(c, available)?;
    }
    let out = match &args.out {
        Some(p) => Some(p.clone()),
        None => default_calibration_path(),
    };
    let started = std::time::Instant::now();
    let pb = progress_bar();
    let runs = if check.is_some() { 2.0 } else { 1.0 };
    let tick = |offset: f64| {
        let pb = pb.clone();
        move |phase: &str, done: f64| {
            if let Some(pb) = &pb {
                pb.set_message(phase.to_string());
                pb.set_position(((offset + done) / runs * 1000.0) as u64);
            }
        }
    };
    let measured = workload::run(&cfg, &mut tick(0.0))?;
    let job = job_for(&cfg, measured.edges)?;
    // The Rust workload's own runtime, worker pages and sampler scratch
    // predict this run; they say nothing about a Python job, so the file
    // keeps the framework constants measured on real PyTorch + PyG.
    let workload_coeffs = fit(&measured, &Coefficients::default());
    let coeffs = &workload_coeffs;
    let estimators = compare(&job, coeffs, &measured);
    let generalisation = match &check {
        Some(c) => {
            let m = workload::run(c, &mut tick(1.0))?;
            let job = job_for(c, m.edges)?;
            let measured_peak = m.phases.iter().map(|(_, p)| p.pss_sum).max().unwrap_or(0);
            let predicted = predicted_peak(&job, coeffs);
            Some(Generalisation {
                batch_size: c.batch_size as u64,
                workers: c.workers,
                predicted_bytes: predicted,
                measured_bytes: measured_peak,
                rel_error: (predicted as f64 - measured_peak as f64) / measured_peak.max(1) as f64,
            })
        }
        None => None,
    };
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    let gpu = if args.no_gpu {
        super::gpu::skipped("GPU calibration skipped (--no-gpu)")
    } else {
        super::gpu::run(&cfg)
    };
    let mut written = Coefficients {
        source: "headroom calibrate".into(),
        ..Coefficients::default()
    };
    let (mut estimators, mut provenance) = (estimators, None);
    if let Some(g) = &gpu.measured {
        let job = super::fit::job_on(&cfg, g.edges, Some(g.total_bytes))?;
        let fitted = super::fit_gpu::fit_gpu(coeffs, g);
        let rows = super::fit_gpu::gpu_rows(&job, coeffs, &fitted, g);
        provenance = Some(crate::estimate::GpuProvenance {
            device: g.device.clone(),
            driver_version: g.driver_version.clone(),
            total_bytes: g.total_bytes,
            nvml_peak_bytes: g.nvml_peak_bytes,
            predicted_peak_bytes: rows.last().map_or(0, |r| r.predicted_bytes),
        });
        estimators.extend(rows);
        written = super::fit_gpu::fit_gpu(&written, g);
    }
    let written_to = match &out {
        Some(p) => {
            write_file(p, &written, provenance.clone())?;
            Some(p.display().to_string())
        }
        None => None,
    };
    let report = CalibrateReport {
        workload: Workload {
            nodes: cfg.nodes as u64,
            edges: measured.edges,
            features: cfg.features as u64,
            workers: cfg.workers,
            batch_size: cfg.batch_size as u64,
            fanout: cfg.fanout.clone(),
            batches: cfg.batches as u64,
            seed: cfg.seed,
        },
        estimators,
        coefficients: written,
        workload_coefficients: workload_coeffs,
        phases: measured
            .phases
            .iter()
            .map(|(n, p)| (n.to_string(), p.clone()))
            .collect(),
        generalisation,
        gpu: gpu.note,
        gpu_measured: gpu.measured,
        written_to,
        seconds: started.elapsed().as_secs_f64(),
    };
    emit(&report, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// `calibrate --from DIR`: fit the framework coefficients to a probed run
/// of the user's own job and write them with their provenance.
fn from_run(args: &CalibrateArgs, dir: &std::path::Path) -> Result<ExitCode> {
    if !dir.is_dir() {
        return Err(Error::bad(format!(
            "--from {}: not a directory (give the --out DIR of watch --probe)",
            dir.display()
        )));
    }
    let base = Coefficients::default();
    let report = crate::probe::report::load(dir, &base)?;
    let provenance = format!(
        "from watch --probe of `{}` on {} ({})",
        report.run.command.join(" "),
        report.run.host.as_deref().unwrap_or("?"),
        report.run.date
    );
    let fitted = super::from_run::fit_from(&report, &base, &provenance)?;
    let out = args.out.clone().or_else(default_calibration_path);
    if let Some(p) = &out {
        write_file(p, &fitted.coefficients, None)?;
    }
    let r = super::report::FromRunReport {
        from: dir.display().to_string(),
        job: report.observed.spec.clone(),
        assumed: report.observed.assumed.clone(),
        fit: fitted,
        written_to: out.map(|p| p.display().to_string()),
    };
    emit(&r, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// Writes the calibration file `plan --calibration` reads.
pub fn write_file(
    path: &std::path::Path,
    coeffs: &Coefficients,
    gpu: Option<crate::estimate::GpuProvenance>,
) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let file = CalibrationFile {
        coefficients: coeffs.clone(),
        gpu,
    };
    let text = crate::yaml::to_string(&file)
        .map_err(|e| Error::Internal(format!("calibration file: {e}")))?;
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Config {
        CalibrateArgs {
            nodes: 10_000,
            avg_degree: 10.0,
            features: 16,
            workers: 1,
            batch_size: 100,
            fanout: vec![5, 5],
            batches: 4,
            seed: 1,
            check_batch_size: None,
            check_workers: None,
            no_check: true,
            no_gpu: true,
            from: None,
            out: None,
            format: Format::Table,
        }
        .config()
        .unwrap()
    }

    #[test]
    fn the_memory_check_refuses_only_what_does_not_fit() {
        // 10,000 nodes × 16 float32 = 640 kB of features, 100,000 edges: a few MiB
        // plus the 10 MiB default runtime; 1 MiB available cannot hold it, 1 GiB can.
        let cfg = small();
        let err = check_fits(&cfg, Some(1 << 20)).unwrap_err().to_string();
        assert!(
            err.contains("needs about") && err.contains("1.00 MiB"),
            "{err}"
        );
        assert!(check_fits(&cfg, Some(1 << 30)).is_ok());
        assert!(check_fits(&cfg, None).is_ok());
    }

    #[test]
    fn the_train_split_is_whole_batches() {
        // 4 batches of 100 seeds: 400 train nodes.
        assert_eq!(small().train_nodes(), 400);
    }
}
