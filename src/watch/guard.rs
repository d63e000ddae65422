//! What keeps a `kill -9` of headroom from leaving the job behind. The job
//! itself gets PR_SET_PDEATHSIG (child.rs), but its DataLoader workers do
//! not inherit it, and nothing in headroom runs after SIGKILL to remove the
//! `--limit` cgroup or the summary and plot files created empty up front.
//! So a guardian is forked before the job matters: it sits in its own
//! session holding the read end of a pipe whose only write end headroom
//! holds. When headroom exits, however it exits, the pipe reads EOF and the
//! guardian kills the job's process group and every process left in the
//! limit cgroup, removes the cgroup, deletes output files still empty (only
//! when headroom did not finish), and exits. Between fork and exit it makes
//! only async-signal-safe system calls on memory prepared before the fork.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, open};
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::stat::{Mode, stat};
use nix::unistd::{ForkResult, Pid, UnlinkatFlags, close, dup2_stderr, dup2_stdin, dup2_stdout};
use nix::unistd::{fork, pipe2, read, setsid, unlink, unlinkat, write};

/// headroom's end of the guardian's pipe; dropping it (or dying) sets the
/// guardian off.
pub struct Guard {
    write_fd: OwnedFd,
}

impl Guard {
    /// The run finished normally: the guardian must not delete the outputs.
    pub fn finished(&self) {
        let _ = write(&self.write_fd, b"F");
    }
}

fn c(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}

/// Forks the guardian for the job in process group `pgid`, the limit cgroup
/// `cgroup` (its directory) and the output files `outputs`.
pub fn start(pgid: i32, cgroup: Option<&Path>, outputs: &[PathBuf]) -> std::io::Result<Guard> {
    let cg_dir = cgroup.and_then(c);
    let cg_procs = cgroup.and_then(|d| c(&d.join("cgroup.procs")));
    let files: Vec<CString> = outputs.iter().filter_map(|p| c(p)).collect();
    // O_CLOEXEC keeps both ends out of the job.
    let (read_fd, write_fd) = pipe2(OFlag::O_CLOEXEC)?;
    // SAFETY: the child runs only async-signal-safe calls (guardian()) and
    // never returns into Rust code.
    match unsafe { fork() }? {
        ForkResult::Child => guardian(
            read_fd,
            pgid,
            cg_dir.as_deref(),
            cg_procs.as_deref(),
            &files,
        ),
        // The parent keeps only the write end (the read end drops here).
        ForkResult::Parent { .. } => Ok(Guard { write_fd }),
    }
}

/// The guardian's whole life. Never returns.
fn guardian(
    read_fd: OwnedFd,
    pgid: i32,
    cg_dir: Option<&CStr>,
    cg_procs: Option<&CStr>,
    files: &[CString],
) -> ! {
    let _ = setsid();
    // Hold nothing of headroom's open: no output file, no pipe a reader
    // waits on, no write end of our own pipe.
    if let Ok(null) = open(c"/dev/null", OFlag::O_RDWR, Mode::empty()) {
        let _ = dup2_stdin(&null);
        let _ = dup2_stdout(&null);
        let _ = dup2_stderr(&null);
    }
    let keep = read_fd.as_raw_fd();
    for fd in 3..4096 {
        if fd != keep {
            let _ = close(fd);
        }
    }
    let mut finished = false;
    let mut b = [0u8; 16];
    loop {
        match read(&read_fd, &mut b) {
            Ok(0) => break,
            Ok(n) => finished |= b[..n].contains(&b'F'),
            Err(Errno::EINTR) => continue,
            Err(_) => break,
        }
    }
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    if let (Some(dir), Some(procs)) = (cg_dir, cg_procs) {
        // The kernel takes a moment to empty a cgroup of killed tasks.
        for _ in 0..100 {
            kill_listed(procs);
            match unlinkat(AT_FDCWD, dir, UnlinkatFlags::RemoveDir) {
                Ok(()) | Err(Errno::ENOENT) => break,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
    }
    if !finished {
        for f in files {
            if stat(f.as_c_str()).is_ok_and(|st| st.st_size == 0) {
                let _ = unlink(f.as_c_str());
            }
        }
    }
    // SAFETY: _exit(2) ends the forked guardian without running Rust or C
    // exit handlers that belong to headroom (nix offers no _exit).
    unsafe { libc::_exit(0) }
}

/// SIGKILL to every pid listed in a `cgroup.procs` file (read with a stack
/// buffer: no allocation after fork).
fn kill_listed(procs: &CStr) {
    let Ok(fd) = open(procs, OFlag::O_RDONLY, Mode::empty()) else {
        return;
    };
    let mut buf = [0u8; 4096];
    let mut pid: i32 = 0;
    while let Ok(n) = read(&fd, &mut buf) {
        if n == 0 {
            break;
        }
        for &ch in &buf[..n] {
            if ch.is_ascii_digit() {
                pid = pid.saturating_mul(10).saturating_add((ch - b'0') as i32);
            } else {
                if pid > 0 {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
                pid = 0;
            }
        }
    }
    if pid > 0 {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}
