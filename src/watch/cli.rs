//! Arguments of `headroom watch`, their checks, and the output files, which
//! are all created before the job starts so a bad path fails first and
//! leaves nothing behind.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

pub use super::cli_parse::parse_interval;
use super::cli_parse::{parse_limit, parse_percent, parse_span};
use super::timeline::TimelineFormat;
use crate::error::{Error, Result};

/// Arguments of `headroom watch`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Time between samples: 100ms, 1s, 2.5s.
    #[arg(long, default_value = "100ms", value_parser = parse_interval)]
    pub interval: Duration,
    /// Write the timeline here, one row per sample, flushed as taken (with
    /// --probe: a directory for the whole probed run).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Run a Python job with headroom's probe: record its real loader,
    /// graph, model and phases, write the observed job spec (job.yaml) and
    /// the per-phase prediction against the measurement into --out DIR.
    #[arg(long, requires = "out")]
    pub probe: bool,
    /// Timeline format.
    #[arg(long, value_enum, default_value_t)]
    pub format: TimelineFormat,
    /// Draw the timeline as an SVG picture here.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Write the summary as JSON here.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Run the job in a new child memory cgroup with this hard limit (256G, 512M).
    #[arg(long, value_parser = parse_limit)]
    pub limit: Option<u64>,
    /// The job spec whose predicted peak is drawn beside the measurement.
    #[arg(long, add = crate::completion::job())]
    pub job: Option<PathBuf>,
    /// The predicted peak to draw, when known without a job spec (64G).
    #[arg(long, value_parser = parse_limit)]
    pub predicted_peak: Option<u64>,
    /// Read the cgroup's memory.stat (anon, shmem, file) every Nth sample;
    /// 1 gives exact anon and shmem at every sample, at more CPU (cgroup v1
    /// sums the hierarchy on each read). Usage is read every sample.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub stat_every: u64,
    /// After forwarding SIGTERM or SIGINT, wait this long for the job to
    /// end, then SIGKILL its process group (a job that ignores SIGTERM).
    #[arg(long, default_value = "10s", value_parser = parse_interval)]
    pub kill_after: Duration,
    /// Attach to a running process and its tree instead of starting one.
    #[arg(long, conflicts_with_all = ["cgroup", "slurm_job", "command", "limit", "probe"])]
    pub pid: Option<u32>,
    /// Attach to every process in a memory cgroup directory (v1 or v2),
    /// its sub-cgroups included, and read the limit from it.
    #[arg(long, conflicts_with_all = ["slurm_job", "command", "limit", "probe"])]
    pub cgroup: Option<PathBuf>,
    /// Attach to a Slurm job running on this node, found in the cgroup
    /// layouts Slurm uses (v1 `memory/slurm/uid_*/job_ID`, v2
    /// `system.slice/slurmstepd.scope/job_ID`).
    #[arg(long, conflicts_with_all = ["command", "limit", "probe"])]
    pub slurm_job: Option<u64>,
    /// Where cgroups are mounted (for --slurm-job).
    #[arg(long, default_value = "/sys/fs/cgroup", hide = true)]
    pub cgroup_root: PathBuf,
    /// Warn on stderr when the job's memory passes these percentages of its
    /// limit, with the growth rate and the projected time to the limit.
    #[arg(long, value_delimiter = ',', default_value = "80,90", value_parser = parse_percent)]
    pub alert_at: Vec<f64>,
    /// Run this shell command at each threshold crossing, with the figures in
    /// HEADROOM_* environment variables (a curl to a chat hook, scontrol hold).
    #[arg(long)]
    pub alert_cmd: Option<String>,
    /// Keep every sample for this long, then one row per --keep-every (the
    /// interval's peaks, exact) plus full resolution around peaks and events.
    #[arg(long, default_value = "10m", value_parser = parse_span)]
    pub full_resolution_for: Duration,
    /// After --full-resolution-for, one row per this much time.
    #[arg(long, default_value = "10s", value_parser = parse_interval)]
    pub keep_every: Duration,
    /// The command to run, after `--` (or --pid, --cgroup, --slurm-job).
    #[arg(required_unless_present_any = ["pid", "cgroup", "slurm_job"], trailing_var_arg = true, num_args = 1..)]
    pub command: Vec<String>,
}

impl WatchArgs {
    /// Whether headroom attaches to something already running.
    pub fn attaching(&self) -> bool {
        self.pid.is_some() || self.cgroup.is_some() || self.slurm_job.is_some()
    }
}

/// Output files created up front; removed again unless [`Outputs::keep`] is called.
#[derive(Debug, Default)]
pub struct Outputs {
    created: Vec<PathBuf>,
    kept: bool,
}

impl Outputs {
    /// Creates (truncates) `path` for writing, remembering it for cleanup.
    pub fn create(&mut self, path: &Path) -> Result<File> {
        if path.is_dir() {
            return Err(Error::bad(format!(
                "{} is a directory, not a file",
                path.display()
            )));
        }
        let existed = path.exists();
        let f = File::create(path).map_err(|e| Error::io(path, e))?;
        if !existed {
            self.created.push(path.to_path_buf());
        }
        Ok(f)
    }

    /// The run happened: keep what was written.
    pub fn keep(&mut self) {
        self.kept = true;
    }
}

impl Drop for Outputs {
    fn drop(&mut self) {
        if !self.kept {
            for p in &self.created {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// Runs `headroom watch`.
pub fn run(args: &WatchArgs) -> Result<ExitCode> {
    // A bad --job is refused before any output file exists.
    let predicted = super::run::predicted_peak(args)?;
    let mut outputs = Outputs::default();
    let probe_dir = match (&args.out, args.probe) {
        (Some(dir), true) => Some(probe_dir(dir)?),
        _ => None,
    };
    let timeline = match (&args.out, &probe_dir) {
        (Some(dir), Some(_)) => {
            let p = dir.join(crate::probe::TIMELINE_FILE);
            Some((p.clone(), outputs.create(&p)?))
        }
        (Some(p), None) => Some((p.clone(), outputs.create(p)?)),
        _ => None,
    };
    let summary = match (&args.summary, &probe_dir) {
        (None, Some(dir)) => Some(dir.join("summary.json")),
        (s, _) => s.clone(),
    };
    let summary_file = match &summary {
        Some(p) => Some((p.clone(), outputs.create(p)?)),
        None => None,
    };
    let plot_file = match &args.plot {
        Some(p) => Some((p.clone(), outputs.create(p)?)),
        None => None,
    };
    let installed = match &probe_dir {
        Some(dir) => {
            let events = dir.join(crate::probe::EVENTS_FILE);
            outputs.create(&events)?;
            outputs.create(&dir.join(crate::probe::RUN_FILE))?;
            Some(crate::probe::install(&events)?)
        }
        None => None,
    };
    let files = super::run::Files {
        timeline,
        summary: summary_file,
        plot: plot_file,
        env: installed
            .as_ref()
            .map(|i| i.env.clone())
            .unwrap_or_default(),
        probe_run: probe_dir.as_ref().map(|d| d.join(crate::probe::RUN_FILE)),
    };
    let code = if args.attaching() {
        super::attach::watch(args, predicted, files, &mut outputs)?
    } else {
        super::run::watch(args, predicted, files, &mut outputs)?
    };
    if let Some(dir) = &probe_dir {
        report_probe(dir);
    }
    Ok(code)
}

/// `--out DIR` for a probed run, created if missing.
fn probe_dir(dir: &Path) -> Result<PathBuf> {
    if dir.is_file() {
        return Err(Error::bad(format!(
            "--probe: --out {} is a file; give a directory for the probed run",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    Ok(dir.to_path_buf())
}

/// The probe's report after the job: job.yaml, phases.json and the table
/// on stderr. A job that never built a loader gets one line saying so; the
/// job's own exit code stands either way.
fn report_probe(dir: &Path) {
    let result = crate::estimate::load_coefficients(None).and_then(|c| {
        let r = crate::probe::report::load(dir, &c)?;
        crate::probe::report::write(dir, &r)?;
        Ok(r)
    });
    match result {
        Ok(r) => {
            let _ = crate::probe::report::print(&r, &mut std::io::stderr());
            eprintln!(
                "[headroom] probe: the observed job is {}",
                dir.join(crate::probe::JOB_FILE).display()
            );
        }
        Err(e) => eprintln!("[headroom] probe: no report: {e}"),
    }
}
