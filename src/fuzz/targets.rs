//! The parsers (and the output writers) fuzzed, each as a function from bytes to nothing that must
//! not panic, abort or run away, with the seed files it starts from and the
//! tokens its mutations splice in.

use std::path::Path;

/// One parser under fuzzing.
pub struct Target {
    /// Its name on the harness's command line.
    pub name: &'static str,
    /// Seed files and folders, relative to the crate root.
    pub seeds: &'static [&'static str],
    /// Tokens the mutator inserts (keywords, numbers at the edges).
    pub dict: &'static [&'static [u8]],
    /// Runs the parser on one input.
    pub run: fn(&[u8]),
}

fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn snapshot(b: &[u8]) {
    if let Ok(s) = crate::alloc::snapshot::parse_snapshot(b) {
        for (dev, events) in s.device_traces.iter().enumerate() {
            let active = s.active_blocks.get(dev).map_or(&[][..], |v| v);
            let _ = crate::alloc::snapshot::snapshot_trace(events, active, 1.5);
        }
    }
}

fn log(b: &[u8], sacct: bool) {
    let mut scanner = crate::diagnose::LogScanner::new();
    if scanner.scan_reader("fuzz", b, sacct).is_ok() {
        let _ = crate::diagnose::verdict_from_evidence(scanner.finish(), &Default::default());
    }
}

fn job_yaml(b: &[u8]) {
    if let Ok(l) = crate::spec::from_text(&text(b), "fuzz")
        && let Ok(job) = crate::spec::Job::from_spec(&l.spec)
    {
        let c = crate::estimate::Coefficients::default();
        let _ = crate::estimate::estimate(&job, &job.settings, &c);
    }
}

fn sbatch(b: &[u8]) {
    let _ = crate::spec::sbatch::parse(&text(b), "fuzz");
}

fn sizes(b: &[u8]) {
    use crate::units::{BareNumber, parse_size};
    let t = text(b);
    for bare in [BareNumber::Bytes, BareNumber::Refuse] {
        let _ = parse_size(&t, bare);
    }
    let _ = crate::units::parse_slurm_mem(&t);
    let _ = crate::diagnose::exit::ExitStatus::parse(&t);
}

fn alloc_conf(b: &[u8]) {
    let _ = crate::alloc::AllocConf::parse(&text(b));
}

fn calibration(b: &[u8]) {
    let _ = crate::estimate::parse_calibration(&text(b), Path::new("fuzz.yaml"));
}

const NUMBERS: &[&[u8]] = &[
    b"0",
    b"-1",
    b"1e308",
    b"nan",
    b".nan",
    b"-.inf",
    b"18446744073709551615",
    b"9223372036854775807",
    b"4294967296",
    b"0.0000001",
    b"1125899906842625",
];

/// Every target, in the order `all` runs them.
pub const TARGETS: &[Target] = &[
    Target {
        name: "snapshot",
        seeds: &[
            "tests/fixtures/alloc",
            "tests/regressions",
            "tests/fuzz/snapshot",
        ],
        dict: &[
            b"segments",
            b"device_traces",
            b"device",
            b"blocks",
            b"action",
            b"alloc",
            b"free_completed",
            b"active_allocated",
            b"frames",
            b"\x94",
            b"h\x00",
            b"G",
            b"\x8f",
            b"\x90",
            b"(",
            b"e",
            b"u",
            b"s",
            b".",
            b"G\x7f\xf8\x00\x00\x00\x00\x00\x00",
            b"\x8f(",
            b"J\xff\xff\xff\x7f",
            b"]",
            b"}",
            b"K\x05",
            b"\x8a\x08\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x8c\x06device",
            b"\x91",
            b"\x85",
        ],
        run: snapshot,
    },
    Target {
        name: "logs",
        seeds: &["tests/fixtures/diagnose", "tests/fuzz/logs"],
        dict: &[
            b"Killed process",
            b"oom_kill",
            b"CUDA out of memory",
            b"Tried to allocate",
            b"GiB",
            b"exit code",
            b"137",
            b"Bus error",
            b"Traceback",
            b"\n",
            b"\r",
            b"\x1b[",
            b"DUE TO TIME LIMIT",
        ],
        run: |b| log(b, false),
    },
    Target {
        name: "sacct",
        seeds: &["tests/fixtures/diagnose/sacct_oom.txt", "tests/fuzz/sacct"],
        dict: &[
            b"|",
            b"OUT_OF_MEMORY",
            b"0:125",
            b"COMPLETED",
            b"FAILED",
            b"MaxRSS",
            b"State",
            b"ExitCode",
            b"K",
            b"G",
        ],
        run: |b| log(b, true),
    },
    Target {
        name: "seff",
        seeds: &["tests/fixtures/diagnose/seff_oom.txt", "tests/fuzz/seff"],
        dict: &[
            b"Memory Utilized:",
            b"Memory Efficiency:",
            b"State: OUT_OF_MEMORY",
            b"(exit code",
            b"% of",
            b"GB",
            b"MB",
            b"Job ID:",
            b"\n",
        ],
        run: |b| log(b, false),
    },
    Target {
        name: "job_yaml",
        seeds: &[
            "tests/fixtures/plan",
            "examples/job.yaml",
            "profiles/jobs",
            "tests/fuzz/job_yaml",
        ],
        dict: &[
            b"dataset:",
            b"batch_size:",
            b"fanout:",
            b"num_workers:",
            b"hidden:",
            b"layers:",
            b"budget:",
            b"host:",
            b"{",
            b"[",
            b"-1",
            b"1P",
            b"ogbn-papers100m",
            b"&a",
            b"*a",
            b"<<:",
        ],
        run: job_yaml,
    },
    Target {
        name: "sbatch",
        seeds: &[
            "tests/fixtures/plan/train_mismatch.sbatch",
            "examples/train.sbatch",
            "tests/fuzz/sbatch",
        ],
        dict: &[
            b"#SBATCH --mem=",
            b"$A",
            b"${A}",
            b"A=$A$A\n",
            b"python",
            b"--batch_size",
            b"--num_neighbors",
            b"\\\n",
            b"export ",
            b"--gres=gpu:",
            b"=",
        ],
        run: sbatch,
    },
    Target {
        name: "sizes",
        seeds: &["tests/fuzz/sizes"],
        dict: &[
            b"G", b"GiB", b"MB", b"P", b"PB", b"k", b".", b"e", b"256", b"0:125", b"137", b"-",
        ],
        run: sizes,
    },
    Target {
        name: "alloc_conf",
        seeds: &["tests/fuzz/alloc_conf"],
        dict: &[
            b"expandable_segments:True",
            b"max_split_size_mb:",
            b"garbage_collection_threshold:",
            b"backend:cudaMallocAsync",
            b"roundup_power2_divisions:",
            b"[",
            b"]",
            b",",
            b":",
        ],
        run: alloc_conf,
    },
    Target {
        name: "calibration",
        seeds: &["tests/regressions", "tests/fuzz/calibration"],
        dict: &[
            b"coefficients:\n  ",
            b"runtime_bytes: ",
            b"sort_bytes_per_element: ",
            b"cpu_heap_small_tensors: ",
            b"allocator_reserve_fraction: ",
            b"gpu:\n  total_bytes: ",
            b"provenance:",
            b"{",
            b"[",
        ],
        run: calibration,
    },
    Target {
        name: "output",
        seeds: &["tests/fixtures/diagnose", "tests/fuzz/output"],
        dict: &[
            b"\x1b]0;",
            b"\x07",
            b"\x7f",
            b"\xc2\x9b",
            b"\x9b",
            b"\r",
            b"\n",
            b"%",
            b":",
            b",",
            b"::error file=",
            b"\"",
            b"\\",
            b"- ",
            b"&a *a",
            b"null",
            b"1e5",
            b"Killed process",
            b"oom_kill event",
        ],
        run: super::output_target::output,
    },
];

/// Numbers at the edges, shared by every target's mutations.
pub fn numbers() -> &'static [&'static [u8]] {
    NUMBERS
}
