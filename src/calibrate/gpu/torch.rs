//! PyTorch's side of the card, from the user's own Python (`train.py gpu`):
//! the script stops after each step and prints what PyTorch says, headroom
//! reads NVML for that process meanwhile and compares with its simulator:
//! the context (NVML less PyTorch's reserve once CUDA ran a matrix
//! product), the host bytes CUDA's initialisation added, what the caching
//! allocator reserved for each request beside what `src/alloc`'s rules
//! reserve for the same sequence, and one real GraphSAGE step's allocated
//! and reserved peaks beside the simulator's replay of its recorded history.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::meter::Meter;
use crate::alloc::{AllocConf, Allocator, DeviceMemory};

/// A step of the script may take this long (CUDA's initialisation, the JIT).
const STEP_TIMEOUT: Duration = Duration::from_secs(300);

/// The requests whose reserve is compared: each side of the allocator's
/// rounding (512 B), its small/large pools (1 MiB), its 2 MiB and 20 MiB
/// segments and its 10 MiB large-segment boundary, kept alive in order.
pub const SIZES: [u64; 10] = [
    1,
    511,
    513,
    1 << 20,
    (1 << 20) + 1,
    3 << 20,
    (10 << 20) - 1,
    (10 << 20) + 1,
    (25 << 20) + 3,
    (100 << 20) + 5,
];

/// One request: PyTorch's counters and NVML after it, and the simulator's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rounding {
    /// Bytes asked for.
    pub request: u64,
    /// `memory_allocated()` after it (every request so far alive).
    pub allocated: u64,
    /// `memory_reserved()` after it.
    pub reserved: u64,
    /// NVML's figure for the process after it.
    pub nvml: Option<u64>,
    /// The simulator's allocated and reserved after the same sequence.
    pub simulated: (u64, u64),
}

/// What PyTorch's side measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TorchFacts {
    /// torch's version and the CUDA it was built with.
    pub torch: String,
    /// What the process holds outside its tensors, as plan counts it: NVML
    /// less `memory_reserved()` after the real training step (CUDA loads
    /// kernels lazily, so after a matrix product alone it reads less: 682
    /// against 742 MiB on an H200 with torch 2.11), plus cuBLAS's workspace
    /// in the allocator (`baseline`).
    pub context_bytes: Option<u64>,
    /// NVML less `memory_reserved()` after one matrix product.
    #[serde(default)]
    pub context_after_matmul_bytes: Option<u64>,
    /// RssAnon + RssShmem that CUDA's initialisation and a matrix product added.
    pub cuda_host_bytes: u64,
    /// (allocated, reserved) left after `empty_cache()` before the first
    /// request: cuBLAS's workspace, which PyTorch takes from its own caching
    /// allocator and keeps (32 MiB on an H200 with torch 2.11). The
    /// simulator's figures below start from it.
    #[serde(default)]
    pub baseline: (u64, u64),
    /// The allocator's rounding, request by request.
    pub rounding: Vec<Rounding>,
    /// The step's model: PyG's GraphSAGE, or the same layers in plain
    /// torch where torch_geometric is not installed.
    pub step_model: Option<String>,
    /// A real GraphSAGE step: measured (allocated, reserved) peaks.
    pub step_peaks: Option<(u64, u64)>,
    /// The simulator's replay of the step's recorded history: (allocated, reserved) peaks.
    pub step_simulated: Option<(u64, u64)>,
    /// Why the step did not run, when it did not.
    pub step_skipped: Option<String>,
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64().unwrap_or(0)
}

/// Runs `train.py gpu` with `python` and measures; `total` is the card's memory.
pub fn measure(python: &Path, script: &Path, total: u64) -> Result<TorchFacts, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("temporary directory: {e}"))?;
    let snapshot = dir.path().join("step.pickle");
    let sizes: Vec<String> = SIZES.iter().map(u64::to_string).collect();
    let mut child = Command::new(python)
        .args(["-W", "ignore"])
        .arg(script)
        .args(["gpu", &sizes.join(",")])
        .arg(&snapshot)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let mut meter = Meter::open(child.id())?;
    let (tx, rx) = mpsc::channel();
    let out = child.stdout.take().ok_or("no stdout")?;
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut said = Vec::new();
    while let Ok(line) = rx.recv_timeout(STEP_TIMEOUT) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        said.push((v, meter.read()));
        if stdin.write_all(b"\n").and_then(|()| stdin.flush()).is_err() {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let at = |name: &str| said.iter().find(|(v, _)| v["at"] == name);
    let (ctx, nvml) = at("context").ok_or("PyTorch could not initialise CUDA")?;
    let conf = AllocConf::parse(&std::env::var("PYTORCH_CUDA_ALLOC_CONF").unwrap_or_default())
        .unwrap_or_default();
    let after_matmul = nvml.map(|n| n.saturating_sub(u(ctx, "reserved")));
    let device = DeviceMemory::new(total, after_matmul.unwrap_or(0));
    let mut sim = Allocator::new(conf.clone(), device);
    let baseline = at("baseline").map_or((0, 0), |(v, _)| (u(v, "allocated"), u(v, "reserved")));
    let rounding = said
        .iter()
        .filter(|(v, _)| v["at"] == "alloc")
        .map(|(v, nvml)| {
            let _ = sim.malloc(u(v, "request"));
            Rounding {
                request: u(v, "request"),
                allocated: u(v, "allocated"),
                reserved: u(v, "reserved"),
                nvml: *nvml,
                simulated: (
                    baseline.0 + sim.stats().allocated.current,
                    baseline.1 + sim.stats().reserved.current,
                ),
            }
        })
        .collect();
    let (step, after_step) = match at("step") {
        Some((v, n)) => (v.clone(), n.map(|n| n.saturating_sub(u(v, "reserved")))),
        None => (Value::default(), None),
    };
    let context = after_matmul.max(after_step).map(|c| c + baseline.1);
    let step_peaks = step["reserved_peak"]
        .as_u64()
        .map(|r| (u(&step, "allocated_peak"), r));
    let replayed = step_peaks.map(|_| {
        let bytes =
            std::fs::read(&snapshot).map_err(|e| format!("its snapshot could not be read: {e}"))?;
        let snap = crate::alloc::snapshot::parse_snapshot(&bytes)
            .map_err(|e| format!("its snapshot could not be replayed: {e}"))?;
        let r = crate::alloc::replay::replay(&snap, 0, 1.0, "", &conf, &device, false);
        Ok::<_, String>((r.peak_allocated_bytes, r.peak_reserved_bytes))
    });
    let step_simulated = replayed.as_ref().and_then(|r| r.as_ref().ok().copied());
    // A step that ran but could not be replayed says why (before, silently none).
    let step_skipped = step["skipped"]
        .as_str()
        .map(str::to_string)
        .or_else(|| replayed.and_then(Result::err));
    Ok(TorchFacts {
        torch: format!(
            "{} (CUDA {})",
            ctx["torch"].as_str().unwrap_or("?"),
            ctx["cuda"].as_str().unwrap_or("?")
        ),
        context_bytes: context,
        context_after_matmul_bytes: after_matmul,
        cuda_host_bytes: u(ctx, "host_cuda"),
        baseline,
        rounding,
        step_model: step["model"].as_str().map(str::to_string),
        step_peaks,
        step_simulated,
        step_skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rounding rows an H100 gave (torch 2.11, calibrate's own record):
    /// from the workspace PyTorch keeps, the simulator reserves what PyTorch
    /// reserved after every request, and allocates what it allocated.
    #[test]
    fn the_simulator_reserves_what_a_real_h100_reserved_for_each_request() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/gpu/calibrate-h100-2611261.json"
        );
        let j: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let t: TorchFacts = serde_json::from_value(j["gpu"]["facts"]["torch"].clone()).unwrap();
        assert_eq!(t.rounding.len(), SIZES.len());
        let mut sim = Allocator::new(AllocConf::default(), DeviceMemory::new(80 << 30, 0));
        for r in &t.rounding {
            sim.malloc(r.request).unwrap();
            let s = sim.stats();
            assert_eq!(
                (
                    t.baseline.0 + s.allocated.current,
                    t.baseline.1 + s.reserved.current
                ),
                (r.allocated, r.reserved),
                "after a request of {} B",
                r.request
            );
        }
    }
}
