//! Arguments of `headroom simulate-alloc` and its entry point: read the
//! snapshot, resolve the GPU, parse the allocator settings, replay, print.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::error::{Error, Result};
use crate::output::{Format, emit};
use crate::units::{BareNumber, parse_size};

use super::conf::{AllocConf, Backend};
use super::replay::replay;
use super::snapshot::parse_snapshot;
use super::state::DeviceMemory;

/// Arguments of `headroom simulate-alloc`.
#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// A `torch.cuda.memory._dump_snapshot()` pickle (recorded with `_record_memory_history()`); `-` reads standard input.
    pub snapshot: PathBuf,
    /// The GPU to simulate: a profile name (`a40`, `h100`) or its total memory (`80G`, `44.53GiB`).
    #[arg(long, add = crate::completion::gpu())]
    pub gpu: String,
    /// PYTORCH_CUDA_ALLOC_CONF to simulate, e.g. `expandable_segments:True`.
    #[arg(long, default_value = "")]
    pub alloc_conf: String,
    /// Multiply every request by this factor (a larger batch: 1.5).
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Memory on the card outside PyTorch's allocator: CUDA context and libraries.
    #[arg(long, default_value = "500M")]
    pub context: String,
    /// Memory other processes hold on the card.
    #[arg(long, default_value = "0")]
    pub other_processes: String,
    /// Print the OOM message in the form of PyTorch 1.x/2.0 ("... reserved in total by PyTorch").
    #[arg(long)]
    pub legacy_message: bool,
    /// Which device's trace to replay.
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

/// The memory of the GPU named on the command line: a profile name or alias
/// (PyTorch's total capacity where the profile knows it, else NVML's), or a size.
pub fn resolve_gpu(text: &str) -> Result<u64> {
    let gpu = crate::profiles::resolve_gpu(text)?;
    Ok(gpu.pytorch_total_bytes.unwrap_or(gpu.total_bytes()))
}

fn size_flag(flag: &str, text: &str) -> Result<u64> {
    parse_size(text, BareNumber::Bytes).map_err(|e| Error::bad(format!("{flag} '{text}': {e}")))
}

/// Runs `headroom simulate-alloc`.
pub fn run(args: &SimulateArgs) -> Result<ExitCode> {
    let total = resolve_gpu(&args.gpu)?;
    let context = size_flag("--context", &args.context)?;
    let other = size_flag("--other-processes", &args.other_processes)?;
    if total == 0 || context.saturating_add(other) >= total {
        return Err(Error::bad(format!(
            "--gpu {}: nothing left for PyTorch after --context {} and --other-processes {}",
            args.gpu, args.context, args.other_processes
        )));
    }
    if !(args.scale.is_finite() && args.scale > 0.0) {
        return Err(Error::bad(format!(
            "--scale {}: must be a positive number",
            args.scale
        )));
    }
    let conf = AllocConf::parse(&args.alloc_conf)
        .map_err(|e| Error::bad(format!("--alloc-conf '{}': {e}", args.alloc_conf)))?;
    if conf.backend == Backend::CudaMallocAsync {
        return Err(Error::Unsupported(
            "backend:cudaMallocAsync is CUDA's own allocator; only the native caching allocator is simulated".into(),
        ));
    }
    let bytes = crate::input::read_file(
        &args.snapshot,
        "a memory snapshot",
        crate::limits::MAX_FILE_BYTES,
        true,
    )?;
    let snap = parse_snapshot(&bytes).map_err(|e| {
        Error::bad(format!(
            "{}: {e}",
            crate::output::shown(&args.snapshot.display().to_string())
        ))
    })?;
    if args.device >= snap.device_traces.len() {
        return Err(Error::bad(format!(
            "{}: no trace for device {} (the snapshot has {})",
            args.snapshot.display(),
            args.device,
            snap.device_traces.len()
        )));
    }
    let device = DeviceMemory {
        total,
        context,
        other_processes: other,
        memory_fraction: None,
    };
    let report = replay(
        &snap,
        args.device,
        args.scale,
        &args.alloc_conf,
        &conf,
        &device,
        args.legacy_message,
    );
    emit(&report, args.format, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}
