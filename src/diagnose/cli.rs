//! Arguments of `headroom diagnose` and its entry point.

use std::path::PathBuf;
use std::process::ExitCode;

use super::exit::ExitStatus;
use super::{InputSource, Options, diagnose};
use crate::error::Result;
use crate::output::{Format, emit};

/// Arguments of `headroom diagnose`.
#[derive(Debug, clap::Args)]
pub struct DiagnoseArgs {
    /// Logs to read: Slurm output files, dmesg or `journalctl -k` output, seff
    /// output; `-` reads stdin.
    pub files: Vec<PathBuf>,
    /// The job's exit status: 137, -9 (Python returncode), or Slurm's
    /// exit:signal (0:125, 137:0).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub exit_code: Option<String>,
    /// `sacct -P` output (e.g. `-o JobID,State,ExitCode,MaxRSS,ReqMem`); `-` reads stdin.
    #[arg(long, value_name = "FILE|-")]
    pub sacct: Option<PathBuf>,
    /// A job spec or sbatch script: also recommend a configuration that fits.
    #[arg(long, value_name = "PATH", add = crate::completion::job())]
    pub job: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// Runs `headroom diagnose`: exit 0 whenever a verdict (even `unknown`) was made.
pub fn run(args: &DiagnoseArgs) -> Result<ExitCode> {
    let mut inputs: Vec<InputSource> = args
        .files
        .iter()
        .map(|f| InputSource::from_arg(f.clone(), false))
        .collect();
    if let Some(s) = &args.sacct {
        inputs.push(InputSource::from_arg(s.clone(), true));
    }
    let opts = Options {
        exit: args
            .exit_code
            .as_deref()
            .map(ExitStatus::parse)
            .transpose()?,
        job: args.job.clone(),
    };
    let mut diagnosis = diagnose(&inputs, &opts)?;
    if let Some(job) = &args.job {
        recommend(&mut diagnosis, job)?;
    }
    emit(&diagnosis, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

/// Fills in the planner's safe configuration for `job`. A CUDA OOM message's
/// total capacity stands in for the GPU when the job names none.
fn recommend(d: &mut super::Diagnosis, job: &std::path::Path) -> Result<()> {
    let mut loaded = crate::spec::load(&job.to_string_lossy())?;
    if loaded.spec.budget.gpu.is_none()
        && let Some(total) = d.cuda_oom.as_ref().and_then(|c| c.total_bytes)
    {
        loaded.spec.budget.gpu = Some(format!("{total}B"));
    }
    let job = crate::spec::Job::from_spec(&loaded.spec)?;
    if job.host_budget.is_none() {
        return Err(crate::error::Error::bad(format!(
            "{}: no host budget (--mem) to plan against",
            loaded.source
        )));
    }
    let coeffs = crate::estimate::load_coefficients(None)?;
    let plan = crate::plan::plan(&job, &coeffs, &loaded.source, loaded.warnings);
    d.recommendation = Some(match &plan.recommended {
        Some(r) => format!(
            "batch_size={} fanout={:?} num_workers={} persistent_workers={} eval_loaders={} shared_sampler={} is_sorted={} pin_memory={} \
             (planned peak {} host{}; `headroom plan {}` shows why)",
            r.batch_size,
            r.fanout,
            r.num_workers,
            r.persistent_workers,
            r.eval_loaders,
            r.shared_sampler,
            r.is_sorted,
            r.pin_memory,
            crate::units::fmt_bytes(r.peak_host_bytes),
            // A job on the CPU has no GPU figure to give (as `plan` shows it).
            match job.device {
                crate::spec::Device::Cuda =>
                    format!(", {} GPU", crate::units::fmt_bytes(r.peak_gpu_bytes)),
                crate::spec::Device::Cpu => String::new(),
            },
            loaded.source
        ),
        None => format!(
            "no batch, fanout, worker or loader setting fits; the job needs --mem={}G",
            plan.min_host_bytes >> 30
        ),
    });
    d.recommended = plan.recommended.map(|rec| crate::plan::Recommended {
        rec,
        device: job.device,
    });
    Ok(())
}
