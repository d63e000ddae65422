//! Starting the job and living beside it: its own process group (so Ctrl-C
//! and SIGTERM reach every worker through headroom), a raised oom_score_adj
//! (so the kernel picks the job, not the watcher), an optional cgroup joined
//! before exec, and its stderr passed through while the last 64 KiB are kept.
//! System calls go through `nix` (signals, prctl, open/write between fork
//! and exec) and std's `CommandExt::process_group`; the only `libc` names
//! left are the C types of the SA_SIGINFO handler's signature, which nix
//! itself takes.

use std::collections::VecDeque;
use std::ffi::{CStr, CString};

use nix::fcntl::{OFlag, open};
use nix::sys::prctl::set_pdeathsig;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, killpg, sigaction};
use nix::sys::stat::Mode;
use nix::unistd::{Pid, getppid, write};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::verdict::ExitKind;

/// How much of the job's stderr is kept for the verdict.
pub const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// The job's process group, for the signal handler (0: none yet).
static CHILD_PGID: AtomicI32 = AtomicI32::new(0);
/// The last signal forwarded to the job (0: none).
static FORWARDED: AtomicI32 = AtomicI32::new(0);
/// The pid that sent headroom that signal (0: the kernel or the terminal).
static SENDER: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    let pgid = CHILD_PGID.load(Ordering::SeqCst);
    // SAFETY: the kernel passes a valid siginfo with SA_SIGINFO.
    let sender = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_pid() }
    };
    SENDER.store(sender, Ordering::SeqCst);
    FORWARDED.store(sig, Ordering::SeqCst);
    if pgid > 0
        && let Ok(signal) = Signal::try_from(sig)
    {
        // killpg(2) is async-signal-safe; try_from only compares numbers.
        let _ = killpg(Pid::from_raw(pgid), signal);
    }
}

/// Sends SIGINT and SIGTERM that reach headroom on to the job's process
/// group (`pgid` 0: to no one, only noted; an attached watch then stops).
pub fn forward_signals_to(pgid: i32) {
    CHILD_PGID.store(pgid, Ordering::SeqCst);
    let act = SigAction::new(
        SigHandler::SigAction(forward),
        SaFlags::SA_RESTART | SaFlags::SA_SIGINFO,
        SigSet::empty(),
    );
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only touches atomics and calls killpg.
        let _ = unsafe { sigaction(sig, &act) };
    }
}

/// The signal headroom forwarded to the job, if any.
pub fn forwarded_signal() -> Option<i32> {
    Some(FORWARDED.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Who sent headroom the forwarded signal, in words: `pid 4242 (slurmstepd)`,
/// or the terminal/kernel when no process did (Ctrl-C). Read while the
/// sender may still be alive, so call it as soon as the signal is seen.
pub fn signal_sender() -> String {
    match SENDER.load(Ordering::SeqCst) {
        0 => "the terminal or the kernel".to_string(),
        pid => match std::fs::read_to_string(format!("/proc/{pid}/comm")) {
            Ok(comm) => format!("pid {pid} ({})", crate::output::shown(comm.trim())),
            Err(_) => format!("pid {pid}"),
        },
    }
}

/// SIGKILL to the job's whole process group: the end of the grace period.
pub fn kill_group(pgid: i32) {
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
}

/// Starts `argv` in its own process group with oom_score_adj 1000, joining
/// the cgroup whose `cgroup.procs` is given before exec, with `env` added to
/// its environment; stderr is piped.
pub fn spawn(
    argv: &[String],
    cgroup_procs: Option<&Path>,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
) -> std::io::Result<Child> {
    let procs = cgroup_procs
        .map(|p| CString::new(p.as_os_str().as_bytes()))
        .transpose()
        .map_err(std::io::Error::other)?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stderr(Stdio::piped())
        // Its own process group, so a signal reaches every worker at once.
        .process_group(0);
    let parent = Pid::this();
    // SAFETY: between fork and exec only async-signal-safe calls are made
    // (prctl, getppid, open, write, close) on memory prepared before the fork.
    unsafe {
        cmd.pre_exec(move || {
            // Should headroom die (even by SIGKILL), the job dies with it;
            // if it already has, the job must not start as an orphan.
            set_pdeathsig(Signal::SIGKILL)?;
            if getppid() != parent {
                return Err(std::io::Error::other("headroom is gone"));
            }
            write_c(c"/proc/self/oom_score_adj", b"1000");
            if let Some(p) = &procs
                && !write_c(p, b"0")
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn()
}

/// Writes `data` to the file at `path` (no allocation); true on success.
fn write_c(path: &CStr, data: &[u8]) -> bool {
    match open(path, OFlag::O_WRONLY | OFlag::O_CLOEXEC, Mode::empty()) {
        // The fd closes when dropped.
        Ok(fd) => write(&fd, data) == Ok(data.len()),
        Err(_) => false,
    }
}

/// The decoded end of a child from its wait status.
pub fn exit_kind(status: std::process::ExitStatus) -> ExitKind {
    match (status.code(), status.signal()) {
        (Some(c), _) => ExitKind::Code(c),
        (None, Some(s)) => ExitKind::Signal(s),
        (None, None) => ExitKind::Code(1),
    }
}

/// The kept end of the job's stderr, filled by the tee thread.
pub type StderrTail = Arc<Mutex<VecDeque<u8>>>;

/// Copies the child's stderr to ours as it comes and keeps the last
/// [`STDERR_TAIL_BYTES`]. The thread ends when every writer has closed it.
pub fn tee_stderr(mut from: impl Read + Send + 'static) -> (StderrTail, JoinHandle<()>) {
    let tail: StderrTail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_BYTES)));
    let keep = Arc::clone(&tail);
    let handle = std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        let mut out = std::io::stderr();
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            let _ = out.write_all(&buf[..n]);
            let _ = out.flush();
            if let Ok(mut t) = keep.lock() {
                t.extend(&buf[..n]);
                let excess = t.len().saturating_sub(STDERR_TAIL_BYTES);
                t.drain(..excess);
            }
        }
    });
    (tail, handle)
}

/// The kept tail as text (lossy: a cut may split a character).
pub fn tail_text(tail: &StderrTail) -> String {
    tail.lock()
        .map(|t| String::from_utf8_lossy(&t.iter().copied().collect::<Vec<u8>>()).into_owned())
        .unwrap_or_default()
}
