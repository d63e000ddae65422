//! Arguments of `headroom calibrate` and its entry point. Without `--from`:
//! the machine's facts, then the designed PyG runs with the user's Python
//! (or, with no torch or PyG there, the machine alone), the fit, the GPU
//! step, the file. With `--from DIR...`: the fit of the user's own probed runs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use super::design::{DESIGN, GRAPH};
use super::from_run::{self, Probed};
use super::machine::{self, Machine};
use super::report::CalibrateReport;
use super::runner::{self, Script};
use crate::error::{Error, Result};
use crate::estimate::{Coefficients, default_calibration_path};
use crate::output::{Format, emit};

/// Arguments of `headroom calibrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct CalibrateArgs {
    /// The Python whose stack is calibrated: its torch, PyG and sampler
    /// (default: python3 on PATH).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Fit to probed runs of your own job instead: the --out DIRs of
    /// `watch --probe` (two batch sizes tell apart what one run cannot).
    #[arg(long, value_name = "DIR", num_args = 1..)]
    pub from: Vec<PathBuf>,
    /// Keep the designed runs' probe directories here (default: removed).
    #[arg(long, value_name = "DIR", conflicts_with = "from")]
    pub keep: Option<PathBuf>,
    /// Designed runs made at once (each in its own cgroup; default: 2, fewer
    /// where the cores or the available memory are fewer).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub jobs: Option<u32>,
    /// Skip the GPU step even where a GPU is found.
    #[arg(long)]
    pub no_gpu: bool,
    /// Where to write the calibration file (default: the config directory's).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Runs `headroom calibrate`.
pub fn run(args: &CalibrateArgs) -> Result<ExitCode> {
    if args.from.is_empty() {
        designed(args)
    } else {
        from_runs(args)
    }
}

fn progress(line: &str) {
    eprintln!("[headroom] calibrate: {line}");
}

/// No PyG runs: the machine's facts, and the GPU step where a GPU is found
/// (its driver side needs no Python; PyTorch's side runs when `torch_python`,
/// the Python and the script, has torch).
fn machine_only(
    args: &CalibrateArgs,
    note: String,
    machine: Machine,
    torch_python: Option<(&Path, &Path)>,
) -> Result<ExitCode> {
    progress(&note);
    let gpu = (!args.no_gpu).then(|| super::gpu::run(torch_python));
    let r = super::machine_text::MachineOnly { note, machine, gpu };
    emit(&r, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// The designed runs with the user's Python.
fn designed(args: &CalibrateArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let machine = machine::read(machine::probe_malloc());
    let script = Script::write()?;
    let python = args.python.clone().unwrap_or_else(|| "python3".into());
    let installed = match runner::installed(&python, &script) {
        Ok(i) => i,
        Err(e) if args.python.is_none() => {
            let note = format!(
                "no python3 to run ({e}): measured the machine only, no coefficient fitted"
            );
            return machine_only(args, note, machine, None);
        }
        Err(e) => return Err(e),
    };
    if let Some(why) = installed.missing() {
        let note = format!("{why}: measured the machine only, no coefficient fitted");
        let script_path = script.path();
        let torch = installed
            .torch
            .is_some()
            .then_some((python.as_path(), script_path.as_path()));
        return machine_only(args, note, machine, torch);
    }
    let out = args.out.clone().or_else(default_calibration_path);
    let temp;
    let root = match &args.keep {
        Some(d) => d.clone(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("headroom-calibrate-runs-")
                .tempdir()
                .map_err(|e| Error::io(Path::new("temporary directory"), e))?;
            temp.path().to_path_buf()
        }
    };
    progress(&format!(
        "{} PyG runs with {} (torch {}, PyG {}), each under the probe in its own cgroup, {} at a time",
        DESIGN.len(),
        installed.executable,
        installed.torch.as_deref().unwrap_or("?"),
        installed.torch_geometric.as_deref().unwrap_or("?"),
        parallel_runs(args.jobs)
    ));
    let planned: Vec<(PathBuf, String)> = DESIGN
        .iter()
        .map(|s| (root.join(s.name), s.script_args(&GRAPH, 1).to_string()))
        .collect();
    let jobs = parallel_runs(args.jobs);
    let mut finished = 0;
    let took = runner::run_all(&python, &script, &planned, jobs, &mut |i, secs| {
        finished += 1;
        progress(&format!(
            "{finished}/{} runs done ({} in {secs:.0} s)",
            DESIGN.len(),
            DESIGN[i].name
        ));
    })?;
    let mut runs = Vec::new();
    for (s, (dir, _)) in DESIGN.iter().zip(&planned) {
        let mut p = from_run::load(dir, &Coefficients::default())?;
        p.data.name = s.name.into();
        runs.push(p);
    }
    let seconds = took.into_iter().map(Some).collect();
    let provenance = format!(
        "headroom calibrate's {} designed runs with {} on {} ({})",
        DESIGN.len(),
        installed.executable,
        host(),
        crate::units::utc_date_now()
    );
    let gpu = if args.no_gpu {
        Some(super::gpu::skipped("GPU calibration skipped (--no-gpu)"))
    } else {
        Some(super::gpu::run(Some((&python, &script.path()))))
    };
    finish(
        args,
        &runs,
        seconds,
        Some(machine),
        gpu,
        &provenance,
        out,
        started,
    )
}

/// `calibrate --from DIR...`: the user's own probed runs.
fn from_runs(args: &CalibrateArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let runs: Vec<Probed> = args
        .from
        .iter()
        .map(|d| from_run::load(d, &Coefficients::default()))
        .collect::<Result<_>>()?;
    let what: Vec<String> = runs
        .iter()
        .map(|r| format!("`{}`", r.report.run.command.join(" ")))
        .collect();
    let first = &runs[0].report.run;
    let provenance = format!(
        "from watch --probe of {} on {} ({})",
        what.join(", "),
        first.host.as_deref().unwrap_or("?"),
        first.date
    );
    let out = args.out.clone().or_else(default_calibration_path);
    let seconds = vec![None; runs.len()];
    finish(args, &runs, seconds, None, None, &provenance, out, started)
}

/// A run peaks under 2 GiB: at most one per core and per 2.5 GiB available.
fn parallel_runs(asked: Option<u32>) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let memory = crate::collect::procfs::ProcReader::new()
        .meminfo("MemAvailable")
        .map_or(1, |m| (m / (5 << 29)).max(1) as usize);
    match asked {
        Some(n) => n as usize,
        None => 2.min(cores).min(memory),
    }
}

fn host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Fits `runs`, writes the file, prints the report.
#[allow(clippy::too_many_arguments)]
fn finish(
    args: &CalibrateArgs,
    runs: &[Probed],
    seconds: Vec<Option<f64>>,
    machine: Option<Machine>,
    gpu: Option<super::gpu::GpuOutcome>,
    provenance: &str,
    out: Option<PathBuf>,
    started: Instant,
) -> Result<ExitCode> {
    let stack = runs.iter().find_map(|r| r.stack.clone());
    for r in runs {
        if let (Some(a), Some(b)) = (&stack, &r.stack)
            && !a.differences(b).is_empty()
        {
            progress(&format!(
                "warning: {} ran on another stack ({}) than the first run ({}): fitted together anyway",
                r.dir.display(),
                b.line(),
                a.line()
            ));
        }
    }
    let fitted = super::fit_runs::fit_runs(runs, seconds, provenance, machine.is_none());
    let mut coefficients = fitted.coefficients;
    coefficients.source = format!("headroom calibrate ({provenance})");
    let mut gpu_prov = None;
    if let Some(f) = gpu.as_ref().and_then(|g| g.facts.as_ref()) {
        super::gpu::apply(f, &mut coefficients, provenance);
        gpu_prov = f.device.as_ref().map(|d| crate::estimate::GpuProvenance {
            device: d.device.clone(),
            driver_version: f.driver_version.clone(),
            total_bytes: d.total_bytes,
            nvml_peak_bytes: 0,
            predicted_peak_bytes: 0,
        });
    }
    let written_to = match &out {
        Some(p) => {
            super::file::write(
                p,
                &super::file::Written {
                    date: crate::units::utc_date_now(),
                    stack: stack.clone(),
                    machine: machine.clone(),
                    runs: runs.iter().map(|r| r.dir.display().to_string()).collect(),
                    coefficients: coefficients.clone(),
                    gpu: gpu_prov,
                    gpu_facts: gpu.as_ref().and_then(|g| g.facts.clone()),
                },
            )?;
            Some(p.display().to_string())
        }
        None => None,
    };
    let report = CalibrateReport {
        stack,
        machine,
        runs: fitted.runs,
        coverage: fitted.coverage,
        measured: fitted.measured,
        fitted: fitted.fit.moved,
        kept: fitted.fit.stayed,
        coefficients,
        gpu,
        written_to,
        seconds: started.elapsed().as_secs_f64(),
    };
    emit(&report, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
