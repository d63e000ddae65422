//! Arguments of `headroom plan` / `headroom check`: a job (file, profile or
//! dataset name) plus flags that override any field of it, and the entry
//! points that map the verdict to an exit code.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::error::{Error, Result};
use crate::estimate::Coefficients;
use crate::output::{Format, emit};
use crate::spec::{Accounting, DatasetRef, Device, EvalLoaders, Job, JobSpec, load};
use crate::units::{BareNumber, Bytes, parse_size};

/// The job and the overrides `plan` and `check` share.
#[derive(Debug, Clone, clap::Args)]
pub struct JobArgs {
    /// A job spec (YAML), an sbatch script, a job profile or a dataset profile name.
    #[arg(add = crate::completion::job())]
    pub job: String,
    /// Host memory per node, as Slurm's --mem reads it (256G and 256GB = 256 GiB; a bare number is MiB; 0 = the whole node, see --node-mem).
    #[arg(long, conflicts_with_all = ["mem_per_cpu", "mem_per_gpu"])]
    pub mem: Option<String>,
    /// Slurm's --mem-per-cpu: the host budget is this × --cpus × --ranks-per-node.
    #[arg(long, conflicts_with = "mem_per_gpu")]
    pub mem_per_cpu: Option<String>,
    /// Slurm's --mem-per-gpu: the host budget is this × --ranks-per-node (one GPU per rank).
    #[arg(long)]
    pub mem_per_gpu: Option<String>,
    /// The node's memory (Slurm units; `sinfo -N -o '%N %m'` prints it in MiB): what --mem=0 gives.
    #[arg(long)]
    pub node_mem: Option<String>,
    /// GPU: a profile name (a40, a100-80gb, h100...) or a size (44.53GiB).
    #[arg(long, add = crate::completion::gpu())]
    pub gpu: Option<String>,
    /// Use this dataset profile instead of the job's.
    #[arg(long, add = crate::completion::dataset(), conflicts_with = "nodes")]
    pub dataset: Option<String>,
    /// The dataset's node count, for a graph no profile and no file on disk
    /// gives (with --edges and --features).
    #[arg(long, requires_all = ["edges", "features"])]
    pub nodes: Option<u64>,
    /// The dataset's edges as edge_index stores them (with --nodes).
    #[arg(long, requires = "nodes")]
    pub edges: Option<u64>,
    /// The dataset's feature dimension (with --nodes).
    #[arg(long, requires = "nodes")]
    pub features: Option<u64>,
    /// Seed nodes per batch.
    #[arg(long)]
    pub batch_size: Option<u64>,
    /// Neighbors per hop, e.g. 15,10 (-1 takes all).
    #[arg(long, allow_hyphen_values = true)]
    pub fanout: Option<String>,
    /// DataLoader workers per loader.
    #[arg(long)]
    pub workers: Option<u32>,
    /// Keep workers alive across epochs (`--persistent-workers false` to turn off).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub persistent_workers: Option<bool>,
    /// Batches each worker prepares ahead.
    #[arg(long)]
    pub prefetch_factor: Option<u32>,
    /// Pin batches in page-locked memory.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub pin_memory: Option<bool>,
    /// One NeighborSampler shared by every loader (`neighbor_sampler=`).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub shared_sampler: Option<bool>,
    /// edge_index sorted by destination beforehand (`is_sorted=True`).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub is_sorted: Option<bool>,
    /// When the validation/test loaders exist.
    #[arg(long, value_enum)]
    pub eval_loaders: Option<EvalLoaders>,
    /// The script calls gc.collect() after deleting an on-demand loader
    /// (`del` alone leaves a NeighborLoader alive: it refers to itself).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub gc_collect: Option<bool>,
    /// How the host limit counts memory.
    #[arg(long, value_enum)]
    pub accounting: Option<Accounting>,
    /// PYTORCH_CUDA_ALLOC_CONF to plan with (e.g. expandable_segments:True).
    #[arg(long)]
    pub alloc_conf: Option<String>,
    /// Size of /dev/shm to check against (containers default to 64M).
    #[arg(long)]
    pub shm: Option<String>,
    /// Fraction of each budget kept free (default 0.1).
    #[arg(long)]
    pub margin: Option<f64>,
    /// Training processes per node.
    #[arg(long)]
    pub ranks_per_node: Option<u32>,
    /// CPU cores per rank (bounds the workers tried).
    #[arg(long)]
    pub cpus: Option<u32>,
    /// Where the model trains.
    #[arg(long, value_enum)]
    pub device: Option<Device>,
    /// The script calls to_undirected / T.ToUndirected() after loading.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub to_undirected: Option<bool>,
    /// The dataset is processed from the raw download in this run.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub first_processing: Option<bool>,
    /// Epochs in the run.
    #[arg(long)]
    pub epochs: Option<u32>,
    /// Calibration file from `headroom calibrate` (default: the one in the config directory, if any).
    #[arg(long)]
    pub calibration: Option<PathBuf>,
    /// A probed run of this job (`watch --probe --out DIR`): plan and advise
    /// with the terms measured there (the fit `calibrate --from DIR` makes),
    /// and say so.
    #[arg(long, value_name = "DIR", conflicts_with = "calibration")]
    pub probe: Option<PathBuf>,
    /// Plan with the defaults for what a script does not say (batch size,
    /// fanout, workers), listing them as assumed, instead of refusing.
    #[arg(long)]
    pub assume_defaults: bool,
    /// Arguments the training script gets: `plan train.py -- --batch_size 2048`.
    #[arg(last = true, value_name = "SCRIPT_ARGS")]
    pub script_args: Vec<String>,
}

/// Arguments of `headroom plan`.
#[derive(Debug, clap::Args)]
pub struct PlanArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// Arguments of `headroom check`.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub job: JobArgs,
    /// Output format (github prints ::error:: workflow commands).
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

fn size(flag: &str, text: &str, bare: BareNumber) -> Result<Bytes> {
    parse_size(text, bare)
        .map(Bytes)
        .map_err(|e| Error::bad(format!("{flag}: {e}")))
}

/// Parses `--fanout` (see [`crate::spec::parse_fanout`]).
pub fn parse_fanout(text: &str) -> Result<Vec<i64>> {
    crate::spec::parse_fanout(text).map_err(|e| Error::bad(format!("--{e}")))
}

impl JobArgs {
    /// Applies the flags on top of `spec`.
    pub fn apply(&self, spec: &mut JobSpec, notes: &mut Vec<String>) -> Result<()> {
        if let Some(r) = self.ranks_per_node {
            spec.ranks_per_node = r;
        }
        if let Some(c) = self.cpus {
            spec.cpus = Some(c);
        }
        self.apply_memory(spec, notes)?;
        if let Some(g) = &self.gpu {
            spec.budget.gpu = Some(g.clone());
        }
        if let Some(d) = &self.dataset {
            spec.dataset = DatasetRef::Name(d.clone());
        }
        if let Some(p) = self.sized_dataset()? {
            spec.dataset = DatasetRef::Inline(Box::new(p));
        }
        if let Some(b) = self.batch_size {
            spec.loader.batch_size = b;
        }
        if let Some(f) = &self.fanout {
            spec.loader.fanout = parse_fanout(f)?;
        }
        if let Some(w) = self.workers {
            spec.loader.num_workers = w;
        }
        if let Some(p) = self.persistent_workers {
            spec.loader.persistent_workers = p;
        }
        if let Some(p) = self.prefetch_factor {
            spec.loader.prefetch_factor = p;
        }
        if let Some(p) = self.pin_memory {
            spec.loader.pin_memory = p;
        }
        if let Some(v) = self.shared_sampler {
            spec.loader.shared_sampler = v;
        }
        if let Some(v) = self.is_sorted {
            spec.loader.is_sorted = v;
        }
        if let Some(e) = self.eval_loaders {
            spec.loader.eval_loaders = e;
        }
        if let Some(v) = self.gc_collect {
            spec.loader.gc_collect = v;
        }
        if let Some(a) = self.accounting {
            spec.budget.accounting = a;
        }
        if let Some(c) = &self.alloc_conf {
            spec.budget.alloc_conf = Some(c.clone());
        }
        if let Some(s) = &self.shm {
            spec.budget.shm = Some(size("--shm", s, BareNumber::Refuse)?);
        }
        if let Some(m) = self.margin {
            spec.budget.margin = m;
        }
        if let Some(d) = self.device {
            spec.device = d;
        }
        if let Some(v) = self.to_undirected {
            spec.load.to_undirected = v;
        }
        if let Some(v) = self.first_processing {
            spec.load.first_processing = v;
        }
        if let Some(e) = self.epochs {
            spec.epochs = e;
        }
        Ok(())
    }

    /// The dataset `--nodes --edges --features` describe, if given.
    fn sized_dataset(&self) -> Result<Option<crate::profiles::DatasetProfile>> {
        let (Some(n), Some(e), Some(f)) = (self.nodes, self.edges, self.features) else {
            return Ok(None);
        };
        let p: crate::profiles::DatasetProfile = crate::yaml::from_str(&format!(
            "{{name: the command line, nodes: {n}, edges: {e}, features: {f}}}"
        ))
        .map_err(|e| Error::bad(format!("--nodes/--edges/--features: {e}")))?;
        p.validate()?;
        Ok(Some(p))
    }

    /// Loads, overrides and resolves the job; returns it with its source and
    /// warnings. A job without budget is resolved: `plan` predicts it.
    pub fn resolve(&self) -> Result<(Job, String, Vec<String>)> {
        self.resolve_script()
            .map(|(job, source, warnings, _)| (job, source, warnings))
    }

    /// As [`JobArgs::resolve`], with what was read from a script, if the job
    /// is one. A launch file that runs Python several times (pretrain then
    /// finetune, a loop over batch sizes) gives one job per run: each is
    /// planned and the largest (host peak, then GPU peak; the first of
    /// equals) is the one reported, the others named in the warnings.
    pub fn resolve_script(&self) -> Result<(Job, String, Vec<String>, Option<Read>)> {
        let readings = match crate::script::load(&self.job, &self.script_args, self.cpus)? {
            crate::script::Input::Read(r) => r,
            crate::script::Input::NotScript => {
                let mut loaded = load(&self.job)?;
                self.apply(&mut loaded.spec, &mut loaded.warnings)?;
                // A calibration is its stack's: say so when the job's is
                // another, or (the job's unknown) which one the file is for.
                loaded.warnings.extend(crate::calibrate::file::stack_note(
                    self.calibration.as_deref(),
                    loaded.spec.stack.as_ref(),
                ));
                let job = Job::from_spec(&loaded.spec)?;
                return Ok((job, loaded.source, loaded.warnings, None));
            }
        };
        let mut planned = Vec::new();
        let mut first_err = None;
        for r in readings {
            match self.settle_one(r) {
                Ok(p) => planned.push(p),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if planned.is_empty() {
            return Err(
                first_err.unwrap_or_else(|| Error::bad(format!("{}: nothing to plan", self.job)))
            );
        }
        let largest = if planned.len() == 1 {
            0
        } else {
            self.largest(&mut planned)?
        };
        let (job, mut warnings, read) = planned.swap_remove(largest);
        if let Some(e) = first_err {
            warnings.push(format!("a run that could not be planned: {e}"));
        }
        Ok((job, self.job.clone(), warnings, Some(read)))
    }

    /// One reading settled (or refused), the flags applied, resolved.
    fn settle_one(&self, r: Read) -> Result<(Job, Vec<String>, Read)> {
        let given = |field: &str| match field {
            "dataset" => self.dataset.is_some() || self.nodes.is_some(),
            "loader.batch_size" => self.batch_size.is_some(),
            "loader.fanout" => self.fanout.is_some(),
            "loader.num_workers" => self.workers.is_some(),
            _ => false,
        };
        let mut r = r;
        crate::script::settle(
            &mut r,
            &self.job,
            given,
            self.assume_defaults,
            self.gpu.is_some(),
        )?;
        let mut spec = r.job.clone();
        let mut warnings = r.warnings.clone();
        self.apply(&mut spec, &mut warnings)?;
        if spec.device == crate::spec::Device::Cpu {
            // `data.to(device)` with the device decided at run time: on the
            // CPU it moves nothing.
            warnings.retain(|w| !w.contains(crate::script::GRAPH_TO_GPU));
        }
        warnings.extend(crate::calibrate::file::stack_note(
            self.calibration.as_deref(),
            spec.stack.as_ref(),
        ));
        r.job = spec.clone();
        let given_dataset = match (&self.dataset, self.sized_dataset()?) {
            (_, Some(p)) => Some(
                serde_json::json!({"nodes": p.nodes, "edges": p.edges, "features": p.features}),
            ),
            (Some(d), None) => Some(d.clone().into()),
            _ => None,
        };
        if let Some(value) = given_dataset {
            r.inferred.retain(|i| i.field != "dataset");
            r.inferred.push(crate::script::infer::Inferred {
                field: "dataset".into(),
                value,
                from: "the command line".into(),
            });
        }
        let job = Job::from_spec(&spec)?;
        Ok((job, warnings, r))
    }

    /// The index of the run with the largest planned peak; the others named in its warnings.
    fn largest(&self, planned: &mut [(Job, Vec<String>, Read)]) -> Result<usize> {
        let coeffs = self.coefficients()?;
        let peaks: Vec<(u64, u64, String)> = planned
            .iter()
            .map(|(job, _, r)| {
                let p = super::plan(job, &coeffs, &self.job, vec![]);
                (
                    p.peak_host_bytes,
                    p.peak_gpu_bytes,
                    r.launch.clone().unwrap_or_default(),
                )
            })
            .collect();
        let mut best = 0;
        for (i, p) in peaks.iter().enumerate() {
            if (p.0, p.1) > (peaks[best].0, peaks[best].1) {
                best = i;
            }
        }
        let others: Vec<String> = peaks
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != best)
            .map(|(_, (h, g, at))| {
                format!(
                    "{at}: host {}, GPU {}",
                    crate::units::fmt_bytes(*h),
                    crate::units::fmt_bytes(*g)
                )
            })
            .collect();
        planned[best].1.push(format!(
            "{} runs Python {} times: this plan is the largest ({}: host {}); the others: {}",
            crate::output::shown(&self.job),
            peaks.len(),
            peaks[best].2,
            crate::units::fmt_bytes(peaks[best].0),
            others.join("; ")
        ));
        Ok(best)
    }

    /// The job-spec fields a flag set (a file's line no longer decides them).
    fn flagged(&self) -> Vec<&'static str> {
        let host = self.mem.is_some() || self.mem_per_cpu.is_some() || self.mem_per_gpu.is_some();
        [
            ("budget.host", host),
            ("budget.gpu", self.gpu.is_some()),
            ("budget.shm", self.shm.is_some()),
            ("loader.batch_size", self.batch_size.is_some()),
            ("loader.fanout", self.fanout.is_some()),
            ("loader.num_workers", self.workers.is_some()),
            (
                "loader.persistent_workers",
                self.persistent_workers.is_some(),
            ),
            ("loader.prefetch_factor", self.prefetch_factor.is_some()),
            ("loader.pin_memory", self.pin_memory.is_some()),
            ("loader.shared_sampler", self.shared_sampler.is_some()),
            ("loader.is_sorted", self.is_sorted.is_some()),
            ("loader.eval_loaders", self.eval_loaders.is_some()),
        ]
        .into_iter()
        .filter_map(|(field, given)| given.then_some(field))
        .collect()
    }

    /// The coefficients to plan with: --probe's run fitted, else
    /// --calibration, else the default file, else defaults.
    pub fn coefficients(&self) -> Result<Coefficients> {
        if let Some(dir) = &self.probe {
            if !dir.join(crate::probe::EVENTS_FILE).is_file() {
                return Err(crate::error::Error::bad(format!(
                    "--probe {}: not a probed run (give the --out DIR of watch --probe)",
                    dir.display()
                )));
            }
            let run = crate::calibrate::from_run::load(dir, &Coefficients::default())?;
            let what = format!("watch --probe run {}", dir.display());
            let fitted = crate::calibrate::fit_runs::fit_runs(&[run], vec![None], &what, true);
            let mut c = fitted.coefficients;
            c.source = what;
            return Ok(c);
        }
        crate::estimate::load_coefficients(self.calibration.as_deref())
    }
}

/// Plans the resolved job and checks the /dev/shm its recommendation needs
/// against this machine's when `--shm` was not given.
fn plan_job(
    args: &JobArgs,
    job: &Job,
    source: &str,
    warnings: Vec<String>,
) -> Result<super::PlanReport> {
    let coeffs = args.coefficients()?;
    let mut r = super::plan(job, &coeffs, source, warnings);
    let machine = super::shm_check::fs_size(std::path::Path::new("/dev/shm"));
    super::shm_check::check(&mut r, machine);
    Ok(r)
}

/// What was read from a script.
pub type Read = crate::script::ScriptReading;

/// Plans the job and prints the report (with what was read, for a script;
/// `check`'s short text otherwise); a check without host budget is an error
/// (a guardrail that checks nothing must not pass).
fn report(args: &JobArgs, format: Format, check: bool) -> Result<super::PlanReport> {
    let (job, source, warnings, reading) = args.resolve_script()?;
    if check && job.host_budget.is_none() {
        return Err(Error::bad(format!(
            "{source}: no host budget to check against: give --mem (e.g. --mem 256G) or budget.host in the job spec"
        )));
    }
    let mut r = plan_job(args, &job, &source, warnings)?;
    if format == Format::Github {
        r.places = super::places_of(&args.job, reading.as_ref()).overridden_by(&args.flagged());
    }
    let out = &mut std::io::stdout().lock();
    match reading {
        Some(read) => {
            let spec = read.job.clone();
            emit(
                &crate::script::ScriptReport::new(read, spec, r.clone()),
                format,
                out,
            )?;
        }
        None if check => emit(&super::check_text::CheckReport(&r), format, out)?,
        None => emit(&r, format, out)?,
    }
    Ok(r)
}

/// Runs `headroom plan`: exit 0 whenever a plan was made, with or without a
/// budget (without one it predicts and says that nothing was checked).
pub fn run_plan(args: &PlanArgs) -> Result<ExitCode> {
    report(&args.job, args.format, false)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `headroom check`: exit 0 when the job fits with the margin, 1 when
/// not; a job with no host budget is an error (a guardrail that checks
/// nothing must not pass). The text is short; JSON is the whole plan.
pub fn run_check(args: &CheckArgs) -> Result<ExitCode> {
    let r = report(&args.job, args.format, true)?;
    Ok(if r.fits == Some(true) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
