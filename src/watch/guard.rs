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

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// headroom's end of the guardian's pipe; dropping it (or dying) sets the
/// guardian off.
pub struct Guard {
    write_fd: libc::c_int,
}

impl Guard {
    /// The run finished normally: the guardian must not delete the outputs.
    pub fn finished(&self) {
        // SAFETY: a one-byte write to a pipe fd this struct owns.
        unsafe { libc::write(self.write_fd, b"F".as_ptr().cast(), 1) };
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: closes the fd this struct owns, once.
        unsafe { libc::close(self.write_fd) };
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
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two fds; O_CLOEXEC keeps them out of the job.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let [read_fd, write_fd] = fds;
    // SAFETY: the child runs only async-signal-safe calls (guardian()) and
    // never returns into Rust code.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => unsafe { guardian(read_fd, pgid, cg_dir.as_ref(), cg_procs.as_ref(), &files) },
        _ => {
            // SAFETY: the parent keeps only the write end.
            unsafe { libc::close(read_fd) };
            Ok(Guard { write_fd })
        }
    }
}

/// The guardian's whole life. Never returns.
unsafe fn guardian(
    read_fd: libc::c_int,
    pgid: i32,
    cg_dir: Option<&CString>,
    cg_procs: Option<&CString>,
    files: &[CString],
) -> ! {
    unsafe {
        libc::setsid();
        // Hold nothing of headroom's open: no output file, no pipe a reader
        // waits on, no write end of our own pipe.
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        for fd in 3..4096 {
            if fd != read_fd {
                libc::close(fd);
            }
        }
        let mut finished = false;
        let mut b = [0u8; 16];
        loop {
            let n = libc::read(read_fd, b.as_mut_ptr().cast(), b.len());
            if n > 0 {
                finished |= b[..n as usize].contains(&b'F');
            } else if n == 0 || *libc::__errno_location() != libc::EINTR {
                break;
            }
        }
        libc::kill(-pgid, libc::SIGKILL);
        if let (Some(dir), Some(procs)) = (cg_dir, cg_procs) {
            // The kernel takes a moment to empty a cgroup of killed tasks.
            for _ in 0..100 {
                kill_listed(procs);
                if libc::rmdir(dir.as_ptr()) == 0 || *libc::__errno_location() == libc::ENOENT {
                    break;
                }
                let ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 50_000_000,
                };
                libc::nanosleep(&ts, std::ptr::null_mut());
            }
        }
        if !finished {
            for f in files {
                let mut st: libc::stat = std::mem::zeroed();
                if libc::stat(f.as_ptr(), &mut st) == 0 && st.st_size == 0 {
                    libc::unlink(f.as_ptr());
                }
            }
        }
        libc::_exit(0)
    }
}

/// SIGKILL to every pid listed in a `cgroup.procs` file (read with a stack
/// buffer: no allocation after fork).
unsafe fn kill_listed(procs: &CString) {
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_RDONLY);
        if fd < 0 {
            return;
        }
        let mut buf = [0u8; 4096];
        let mut pid: i32 = 0;
        loop {
            let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            if n <= 0 {
                break;
            }
            for &ch in &buf[..n as usize] {
                if ch.is_ascii_digit() {
                    pid = pid.saturating_mul(10).saturating_add((ch - b'0') as i32);
                } else {
                    if pid > 0 {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            libc::kill(pid, libc::SIGKILL);
        }
        libc::close(fd);
    }
}
