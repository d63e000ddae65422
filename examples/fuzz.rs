//! The fuzzing harness: `cargo run --release --example fuzz -- TARGET|all
//! [INPUTS] [SECONDS] [SEED]` runs each parser on mutated inputs (default
//! 1,000,000 inputs, no time limit) and prints one line per target: inputs
//! run, inputs per second, the slowest input, and the crashes written to
//! tests/fuzz/crashes. An input that aborts the process (stack overflow,
//! allocation failure) is left in target/fuzz-abort-TARGET. The data
//! segment is limited to 2 GiB so a memory bomb aborts instead of swapping.

use std::path::Path;
use std::time::{Duration, Instant};

use headroom::fuzz::{TARGETS, dump_aborts_to, fuzz, seeds_of};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let which = args.first().map(String::as_str).unwrap_or("all");
    let num = |i: usize, d: u64| {
        args.get(i)
            .and_then(|s| s.replace('_', "").parse().ok())
            .unwrap_or(d)
    };
    let (inputs, seconds, seed) = (num(1, 1_000_000), num(2, u64::MAX / 2), num(3, 1));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let targets: Vec<_> = TARGETS
        .iter()
        .filter(|t| which == "all" || t.name == which)
        .collect();
    if targets.is_empty() {
        let names: Vec<&str> = TARGETS.iter().map(|t| t.name).collect();
        eprintln!(
            "fuzz: unknown target {which}; targets: all, {}",
            names.join(", ")
        );
        std::process::exit(2);
    }
    // SAFETY: setrlimit on this process only.
    unsafe {
        let lim = libc::rlimit {
            rlim_cur: 2 << 30,
            rlim_max: 2 << 30,
        };
        libc::setrlimit(libc::RLIMIT_DATA, &lim);
    }
    std::panic::set_hook(Box::new(|_| {}));
    let mut failed = false;
    for t in targets {
        let abort_file = root.join(format!("target/fuzz-abort-{}", t.name));
        if let Err(e) = dump_aborts_to(&abort_file) {
            eprintln!("fuzz: {}: {e}", abort_file.display());
        }
        let seeds = seeds_of(t, root);
        let began = Instant::now();
        let out = fuzz(
            t,
            &seeds,
            inputs,
            Duration::from_secs(seconds),
            seed,
            &root.join("tests/fuzz/crashes"),
        );
        let secs = began.elapsed().as_secs_f64();
        println!(
            "{:<12} {:>12} inputs {:>9.0}/s  {:>7.1} s  slowest {:>8.1} ms  seeds {:>3}  crashes {}",
            t.name,
            out.inputs,
            out.inputs as f64 / secs.max(1e-9),
            secs,
            out.slowest.as_secs_f64() * 1e3,
            seeds.len(),
            out.crashes.len()
        );
        for c in &out.crashes {
            println!("  crash: {}", c.display());
        }
        failed |= !out.crashes.is_empty();
        let _ = std::fs::remove_file(&abort_file);
    }
    std::process::exit(i32::from(failed));
}
