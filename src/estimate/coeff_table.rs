//! Every coefficient of the memory model in one table: its name as a
//! calibration file spells it, its unit and physical bounds, its default and
//! where that came from, and the mechanism it sizes. The defaults, the
//! bounds check of a calibration file, the provenance a plan prints and the
//! knobs `calibrate --from` may fit are all read from here, so a coefficient
//! is named once. Which coefficients a plan used is not listed by hand: it is
//! what moves the plan's own estimate (`used_by`).

use serde::Serialize;

use super::Coefficients;
use crate::limits::MAX_MEMORY_BYTES;

/// What a coefficient counts, which sets its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    /// Bytes (at most 1 PiB).
    Bytes,
    /// Bytes per sampled node or per sorted element.
    BytesPer,
    /// A ratio of bytes to bytes.
    Ratio,
}

/// One coefficient of the model.
pub struct Coefficient {
    /// Its name in a calibration file.
    pub name: &'static str,
    /// What it counts.
    pub unit: Unit,
    /// The built-in value.
    pub default: f64,
    /// The smallest and largest values a calibration file may give.
    pub bounds: (f64, f64),
    /// The mechanism it sizes, in one sentence.
    pub mechanism: &'static str,
    /// Where the built-in value came from.
    pub provenance: &'static str,
    /// `calibrate --from` may fit it to a probed run's phase peaks.
    pub fitted: bool,
    /// Reads it from a set of coefficients.
    pub get: fn(&Coefficients) -> f64,
    /// Writes it (rounded for byte counts, never below the lower bound).
    pub set: fn(&mut Coefficients, f64),
}

impl Coefficient {
    /// `v` in its unit, for reports (`signed`: a change, with its sign).
    pub fn amount(&self, v: f64, signed: bool) -> String {
        let sign = if v < 0.0 {
            "-"
        } else if signed {
            "+"
        } else {
            ""
        };
        match self.unit {
            Unit::Bytes => format!("{sign}{}", crate::units::fmt_bytes(v.abs() as u64)),
            Unit::BytesPer => format!("{sign}{:.0} B", v.abs()),
            Unit::Ratio if signed => format!("{v:+.4}"),
            Unit::Ratio => format!("{v:.4}"),
        }
    }
}

/// Where the host defaults were measured.
pub const PYTHON_CORPUS: &str =
    "measured on real CPython 3.11 + torch 2.15 + PyG 2.8.1 runs (benches/pyg corpus, 2026-11-23)";

macro_rules! coefficient {
    ($f:ident, u64, $unit:expr, $default:expr, $bounds:expr, $fitted:expr, $prov:expr, $mech:expr) => {
        Coefficient {
            name: stringify!($f),
            unit: $unit,
            default: $default as f64,
            bounds: $bounds,
            mechanism: $mech,
            provenance: $prov,
            fitted: $fitted,
            get: |c| c.$f as f64,
            set: |c, v| c.$f = v.max(0.0).round() as u64,
        }
    };
    ($f:ident, f64, $unit:expr, $default:expr, $bounds:expr, $fitted:expr, $prov:expr, $mech:expr) => {
        Coefficient {
            name: stringify!($f),
            unit: $unit,
            default: $default,
            bounds: $bounds,
            mechanism: $mech,
            provenance: $prov,
            fitted: $fitted,
            get: |c| c.$f,
            set: |c, v| c.$f = v.max(0.0),
        }
    };
}

const BYTES: (f64, f64) = (0.0, MAX_MEMORY_BYTES as f64);
const RATIO: (f64, f64) = (0.0, 100.0);
const MIB: u64 = 1 << 20;

/// Every coefficient, in the order a calibration file and a plan list them.
pub static TABLE: &[Coefficient] = &[
    coefficient!(
        runtime_bytes,
        u64,
        Unit::Bytes,
        402 * MIB,
        BYTES,
        false,
        PYTHON_CORPUS,
        "resident bytes of one training process once torch and PyG are imported, before data"
    ),
    coefficient!(
        runtime_file_bytes,
        u64,
        Unit::Bytes,
        520 * MIB,
        BYTES,
        false,
        PYTHON_CORPUS,
        "library pages (torch's shared objects) in the main process's RSS: counted only where the limit sums RSS"
    ),
    coefficient!(
        worker_file_bytes,
        u64,
        Unit::Bytes,
        72 * MIB,
        BYTES,
        false,
        PYTHON_CORPUS,
        "library pages a DataLoader worker maps (RSS-sum accounting only)"
    ),
    coefficient!(
        cuda_host_bytes,
        u64,
        Unit::Bytes,
        1200 * MIB,
        BYTES,
        false,
        "default: typical PyTorch CUDA initialisation (not measured here)",
        "host bytes CUDA's initialisation adds (driver, cuBLAS/cuDNN pages touched)"
    ),
    coefficient!(
        worker_private_bytes,
        u64,
        Unit::Bytes,
        44 * MIB,
        BYTES,
        true,
        PYTHON_CORPUS,
        "pages a forked DataLoader worker writes itself: objects copied by reference counting, its allocator arenas, sampler buffers"
    ),
    coefficient!(
        idle_worker_private_bytes,
        u64,
        Unit::Bytes,
        20 * MIB,
        BYTES,
        true,
        PYTHON_CORPUS,
        "pages a persistent worker keeps private while it idles between iterations"
    ),
    coefficient!(
        sampler_bytes_per_node,
        u64,
        Unit::BytesPer,
        64,
        (0.0, (1u64 << 20) as f64),
        true,
        "default: an estimate (not measured on its own; the corpus runs include it)",
        "sampler scratch per sampled node while a batch is built (hash map, buffers)"
    ),
    coefficient!(
        sort_bytes_per_element,
        u64,
        Unit::BytesPer,
        32,
        (8.0, 256.0),
        false,
        PYTHON_CORPUS,
        "bytes per element alive at the worst moment of sorting int64 keys with their indices (the CSC build, a sort in the script, to_undirected's coalesce)"
    ),
    coefficient!(
        build_heap_retained,
        f64,
        Unit::Ratio,
        0.0,
        RATIO,
        true,
        "default: 0 (the corpus graphs' build arrays are mmapped and given back); calibrate --from fits it where a small graph's are kept",
        "share of the CSC build's transient that glibc keeps after the build (arrays under its 32 MiB mmap threshold)"
    ),
    coefficient!(
        cpu_heap_small_tensors,
        f64,
        Unit::Ratio,
        1.5,
        RATIO,
        true,
        PYTHON_CORPUS,
        "CPU training, first epoch: heap glibc keeps beyond the live step, per heap-resident byte, when the step's largest tensor is under the mmap threshold"
    ),
    coefficient!(
        cpu_heap_large_tensors,
        f64,
        Unit::Ratio,
        1.0,
        RATIO,
        true,
        PYTHON_CORPUS,
        "the same when the step's largest tensors are mmapped (freed exactly)"
    ),
    coefficient!(
        cpu_heap_small_eval_forked,
        f64,
        Unit::Ratio,
        3.6,
        RATIO,
        true,
        PYTHON_CORPUS,
        "evaluation whose workers are forked from the grown heap: pages they and the main process rewrite are copied, per heap-resident byte, small tensors"
    ),
    coefficient!(
        cpu_heap_large_eval_forked,
        f64,
        Unit::Ratio,
        4.4,
        RATIO,
        true,
        PYTHON_CORPUS,
        "the same, large tensors"
    ),
    coefficient!(
        cpu_heap_small_shared,
        f64,
        Unit::Ratio,
        5.3,
        RATIO,
        true,
        PYTHON_CORPUS,
        "later epochs while workers forked from the grown heap share its pages (the parent's rewrites copy them), small tensors"
    ),
    coefficient!(
        cpu_heap_large_shared,
        f64,
        Unit::Ratio,
        1.2,
        RATIO,
        true,
        PYTHON_CORPUS,
        "the same, large tensors, per live byte of the step: the most the kept heap reaches"
    ),
    coefficient!(
        cpu_heap_large_shared_resident,
        f64,
        Unit::Ratio,
        30.0,
        RATIO,
        true,
        "default: the least value that leaves none of the 45 development runs of this regime (the spent random sets, 2026-11-27) more than 5 % low; glibc's mallinfo2 read by benches/pyg/case.py --mallinfo shows the mechanism's two ends",
        "the same, large tensors, per byte of the step's heap-resident tensors: a step whose tensors glibc nearly all mmaps keeps next to nothing"
    ),
    coefficient!(
        cuda_context_bytes,
        u64,
        Unit::Bytes,
        500 * MIB,
        BYTES,
        false,
        "default: the GPU profile's context, else 500 MiB (not measured here)",
        "the CUDA context as NVML sees it, when the GPU profile does not say"
    ),
    coefficient!(
        allocator_reserve_fraction,
        f64,
        Unit::Ratio,
        0.25,
        RATIO,
        false,
        "default: replaced by the allocator simulation where a GPU budget is given",
        "the caching allocator's reserve as a fraction of a step's GPU allocations, where it is not simulated"
    ),
];

/// The coefficient called `name`.
pub fn find(name: &str) -> Option<&'static Coefficient> {
    TABLE.iter().find(|c| c.name == name)
}

/// Checks every coefficient of `c` against its bounds; the error names the
/// first one outside, its value and the range.
pub fn check_bounds(c: &Coefficients) -> std::result::Result<(), String> {
    for k in TABLE {
        let v = (k.get)(c);
        let (lo, hi) = k.bounds;
        let ok = v.is_finite() && (lo..=hi).contains(&v);
        if ok {
            continue;
        }
        return Err(match k.unit {
            Unit::Bytes => format!("{} = {v} bytes is over 1 PiB", k.name),
            Unit::BytesPer => format!("{} = {v} is outside {lo}..={hi}", k.name),
            Unit::Ratio => format!("{} = {v} is not a number in {lo}..={hi}", k.name),
        });
    }
    Ok(())
}

/// The coefficients an estimate by `estimate` reads: those whose 20 % rise
/// changes some phase's host or GPU bytes. Derived, not listed, so a new
/// mechanism's coefficient is named wherever it is used.
pub fn used_by(
    base: &Coefficients,
    estimate: impl Fn(&Coefficients) -> Vec<u64>,
) -> Vec<&'static Coefficient> {
    let before = estimate(base);
    TABLE
        .iter()
        .filter(|k| {
            let v = (k.get)(base);
            let mut moved = base.clone();
            (k.set)(&mut moved, if v == 0.0 { 1.0 } else { v * 1.2 });
            estimate(&moved) != before
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{Device, Job, JobSpec};

    fn phases(job: &Job) -> impl Fn(&Coefficients) -> Vec<u64> + '_ {
        move |c| {
            crate::estimate::estimate(job, &job.settings, c)
                .phases
                .iter()
                .flat_map(|p| [p.host_bytes, p.gpu_bytes])
                .collect()
        }
    }

    #[test]
    fn names_are_unique_and_the_defaults_lie_inside_their_bounds() {
        let mut names: Vec<&str> = TABLE.iter().map(|k| k.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TABLE.len());
        let c = Coefficients::default();
        assert_eq!(check_bounds(&c), Ok(()));
        for k in TABLE {
            assert_eq!((k.get)(&c), k.default, "{}", k.name);
        }
    }

    #[test]
    fn a_cpu_plan_names_the_heap_ratios_it_used_and_a_gpu_plan_does_not() {
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.device = Device::Cpu;
        let cpu = Job::from_spec(&spec).unwrap();
        let used: Vec<&str> = used_by(&Coefficients::default(), phases(&cpu))
            .iter()
            .map(|k| k.name)
            .collect();
        assert!(used.contains(&"runtime_bytes"), "{used:?}");
        assert!(used.iter().any(|n| n.starts_with("cpu_heap_")), "{used:?}");
        assert!(!used.contains(&"cuda_host_bytes"), "{used:?}");
        spec.device = Device::Cuda;
        let gpu = Job::from_spec(&spec).unwrap();
        let used: Vec<&str> = used_by(&Coefficients::default(), phases(&gpu))
            .iter()
            .map(|k| k.name)
            .collect();
        assert!(used.contains(&"cuda_host_bytes"), "{used:?}");
        assert!(!used.iter().any(|n| n.starts_with("cpu_heap_")), "{used:?}");
    }
}
