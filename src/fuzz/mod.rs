//! Fuzzing every parser of outside input on the stable toolchain: a
//! mutation fuzzer (mutate.rs) over seed files, run in-process with each
//! input behind `catch_unwind`. `examples/fuzz.rs` runs it for as long as
//! one likes; `tests/fuzz.rs` replays the crash corpus under tests/fuzz and
//! gives each target a short smoke run as part of `cargo test`. An input
//! that panics is written to the crash folder, named by target and hash, to
//! become a regression test; one that aborts (an allocation past the
//! harness's memory limit, a stack overflow) is written by a signal handler
//! from the copy kept for that purpose.

pub mod mutate;
mod output_target;
pub mod targets;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use targets::{TARGETS, Target};

/// What a run found.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Inputs run.
    pub inputs: u64,
    /// Inputs that panicked, as written to the crash folder.
    pub crashes: Vec<PathBuf>,
    /// The slowest input's time.
    pub slowest: Duration,
}

/// The seed inputs of `t`: every file under its seed paths (missing ones skipped).
pub fn seeds_of(t: &Target, root: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for rel in t.seeds {
        let p = root.join(rel);
        let files: Vec<PathBuf> = match std::fs::read_dir(&p) {
            Ok(rd) => rd.flatten().map(|e| e.path()).collect(),
            Err(_) => vec![p],
        };
        for f in files {
            if let Ok(b) = std::fs::read(&f) {
                out.push(b[..b.len().min(mutate::MAX_INPUT)].to_vec());
            }
        }
    }
    out
}

static CURRENT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static CURRENT_LEN: AtomicUsize = AtomicUsize::new(0);
static DUMP_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn dump(sig: libc::c_int) {
    let (fd, p) = (
        DUMP_FD.load(Ordering::SeqCst),
        CURRENT.load(Ordering::SeqCst),
    );
    // SAFETY: write(2) of the buffer the loop keeps alive while it runs.
    unsafe {
        if fd >= 0 && !p.is_null() {
            libc::write(fd, p.cast(), CURRENT_LEN.load(Ordering::SeqCst));
        }
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// On SIGABRT/SIGSEGV/SIGBUS, writes the input being run to `path` first.
pub fn dump_aborts_to(path: &Path) -> std::io::Result<()> {
    use std::os::fd::IntoRawFd;
    let f = std::fs::File::create(path)?;
    DUMP_FD.store(f.into_raw_fd(), Ordering::SeqCst);
    for sig in [libc::SIGABRT, libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: installs a handler that makes only write/signal/raise calls,
        // on the alternate stack Rust sets up (stack overflows land there).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = dump as *const () as usize;
            act.sa_flags = libc::SA_ONSTACK;
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    Ok(())
}

fn fnv(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| {
        (h ^ x as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Runs `t` on its seeds, then on mutated inputs until `max_inputs` or
/// `max_time`, writing panicking inputs under `crash_dir`.
pub fn fuzz(
    t: &Target,
    seeds: &[Vec<u8>],
    max_inputs: u64,
    max_time: Duration,
    seed: u64,
    crash_dir: &Path,
) -> Outcome {
    let mut out = Outcome::default();
    let mut rng = mutate::Rng::new(seed);
    let start = Instant::now();
    let mut buf = Vec::new();
    while out.inputs < max_inputs && (out.inputs & 255 != 0 || start.elapsed() < max_time) {
        buf.clear();
        let i = out.inputs as usize;
        if i < seeds.len() {
            buf.extend_from_slice(&seeds[i]);
        } else {
            if !seeds.is_empty() && rng.below(16) != 0 {
                buf.extend_from_slice(&seeds[rng.below(seeds.len())]);
            }
            mutate::mutate(&mut buf, &mut rng, t.dict, seeds);
        }
        CURRENT_LEN.store(buf.len(), Ordering::SeqCst);
        CURRENT.store(buf.as_mut_ptr(), Ordering::SeqCst);
        let began = Instant::now();
        let res = catch_unwind(AssertUnwindSafe(|| (t.run)(&buf)));
        out.slowest = out.slowest.max(began.elapsed());
        CURRENT.store(std::ptr::null_mut(), Ordering::SeqCst);
        if res.is_err() {
            let p = crash_dir.join(format!("{}-{:016x}", t.name, fnv(&buf)));
            let _ = std::fs::create_dir_all(crash_dir).and_then(|()| std::fs::write(&p, &buf));
            out.crashes.push(p);
        }
        out.inputs += 1;
    }
    out
}
