//! Running calibrate's own PyG job (`train.py`, embedded) with the user's
//! Python: what that Python has installed, read without importing torch,
//! then each designed run under `headroom watch --probe` (this binary
//! re-executed: the probe, a memory cgroup of the run's own where one can be
//! made, the timeline and the per-phase report, exactly as a user's job gets
//! them), its output kept in the run directory's `watch.log`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The training script's source.
pub const TRAIN_PY: &str = include_str!("train.py");

/// A run that takes longer than this is stopped (its process group gets
/// SIGTERM through watch): the design's runs take seconds.
const RUN_TIMEOUT: Duration = Duration::from_secs(600);

/// What the Python has installed (`train.py stack`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Installed {
    /// CPython's version.
    pub python: String,
    /// `sys.executable`.
    pub executable: String,
    /// torch, when installed.
    pub torch: Option<String>,
    /// torch_geometric, when installed.
    pub torch_geometric: Option<String>,
    /// pyg-lib, when installed.
    pub pyg_lib: Option<String>,
    /// torch-sparse, when installed.
    pub torch_sparse: Option<String>,
    /// The kernel's release.
    pub kernel: Option<String>,
    /// The C library.
    pub glibc: Option<String>,
}

impl Installed {
    /// Why calibrate's runs cannot be made with it, in one line; None when they can.
    pub fn missing(&self) -> Option<String> {
        let no = match (&self.torch, &self.torch_geometric) {
            (None, None) => "neither torch nor torch_geometric",
            (None, _) => "no torch",
            (_, None) => "no torch_geometric",
            _ if self.pyg_lib.is_none() && self.torch_sparse.is_none() => {
                "no neighbor sampler (PyG's NeighborLoader needs pyg-lib or torch-sparse)"
            }
            _ => return None,
        };
        Some(format!(
            "{} (Python {}) has {no}",
            self.executable, self.python
        ))
    }
}

/// The training script written to a private directory, removed on drop.
pub struct Script {
    dir: tempfile::TempDir,
}

impl Script {
    /// Writes `train.py`.
    pub fn write() -> Result<Script> {
        let dir = tempfile::Builder::new()
            .prefix("headroom-calibrate-")
            .tempdir()
            .map_err(|e| Error::io(Path::new("temporary directory"), e))?;
        let p = dir.path().join("train.py");
        std::fs::write(&p, TRAIN_PY).map_err(|e| Error::io(&p, e))?;
        Ok(Script { dir })
    }

    /// Its path.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("train.py")
    }
}

/// What `python` has installed; an error when it cannot be run at all.
pub fn installed(python: &Path, script: &Script) -> Result<Installed> {
    let out = Command::new(python)
        .arg(script.path())
        .arg("stack")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::bad(format!("--python {}: cannot run it: {e}", python.display())))?;
    serde_json::from_slice(&out.stdout).map_err(|_| {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or("no output").trim().to_string();
        Error::bad(format!(
            "--python {}: not a Python 3 that runs calibrate's script ({})",
            python.display(),
            crate::output::shown_within(&last, 200)
        ))
    })
}

/// A probed run in progress: `train.py run ARGS` under `watch --probe
/// --out dir`, its output in `dir/watch.log`.
pub struct Running {
    child: std::process::Child,
    started: Instant,
    log: PathBuf,
}

impl Running {
    /// Starts the run.
    pub fn start(python: &Path, script: &Script, args: &str, dir: &Path) -> Result<Running> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let log_path = dir.join("watch.log");
        let log = std::fs::File::create(&log_path).map_err(|e| Error::io(&log_path, e))?;
        let err = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
        let exe = std::env::current_exe().map_err(|e| Error::io(Path::new("headroom"), e))?;
        let child = Command::new(exe)
            .args(["watch", "--probe", "--interval", "50ms", "--out"])
            .arg(dir)
            .arg("--")
            .arg(python)
            .args(["-W", "ignore"])
            .arg(script.path())
            .args(["run", args])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .map_err(|e| Error::io(Path::new("headroom watch"), e))?;
        Ok(Running {
            child,
            started: Instant::now(),
            log: log_path,
        })
    }

    /// None while it runs; then the seconds it took, or why it failed.
    pub fn poll(&mut self) -> Option<Result<f64>> {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => s,
            Ok(None) if self.started.elapsed() > RUN_TIMEOUT => {
                // watch forwards SIGTERM to the job's process group.
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(self.child.id() as i32),
                    nix::sys::signal::Signal::SIGTERM,
                );
                let _ = self.child.wait();
                return Some(Err(Error::bad(format!(
                    "a calibration run took over {} s and was stopped: {}",
                    RUN_TIMEOUT.as_secs(),
                    self.log.display()
                ))));
            }
            Ok(None) => return None,
            Err(e) => return Some(Err(Error::io(Path::new("headroom watch"), e))),
        };
        if status.success() {
            return Some(Ok(self.started.elapsed().as_secs_f64()));
        }
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let last = text
            .lines()
            .rfind(|l| !l.trim().is_empty() && !l.starts_with("[headroom]"))
            .unwrap_or("no output");
        Some(Err(Error::bad(format!(
            "a calibration run failed (exit {}): {} (whole output: {})",
            status.code().map_or("by signal".into(), |c| c.to_string()),
            crate::output::shown_within(last.trim(), 300),
            self.log.display()
        ))))
    }
}

impl Drop for Running {
    /// A run left behind (another failed first) is stopped, not orphaned.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.child.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = self.child.wait();
        }
    }
}

/// Runs every `(name, args)` with at most `jobs` at once (each in its own
/// cgroup, so they do not see each other's memory); `done` is told each
/// finished run's index and seconds. Returns the seconds per run.
pub fn run_all(
    python: &Path,
    script: &Script,
    runs: &[(PathBuf, String)],
    jobs: usize,
    done: &mut dyn FnMut(usize, f64),
) -> Result<Vec<f64>> {
    let mut seconds = vec![0.0; runs.len()];
    let mut active: Vec<(usize, Running)> = Vec::new();
    let mut next = 0;
    while next < runs.len() || !active.is_empty() {
        while active.len() < jobs.max(1) && next < runs.len() {
            let (dir, args) = &runs[next];
            active.push((next, Running::start(python, script, args, dir)?));
            next += 1;
        }
        let mut i = 0;
        while i < active.len() {
            match active[i].1.poll() {
                None => i += 1,
                Some(r) => {
                    let (idx, _) = active.remove(i);
                    seconds[idx] = r?;
                    done(idx, seconds[idx]);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_missing_is_said_in_one_line() {
        let mut i = Installed {
            python: "3.11.7".into(),
            executable: "/usr/bin/python3".into(),
            ..Installed::default()
        };
        assert_eq!(
            i.missing().as_deref(),
            Some("/usr/bin/python3 (Python 3.11.7) has neither torch nor torch_geometric")
        );
        i.torch = Some("2.15.0".into());
        i.torch_geometric = Some("2.8.1".into());
        assert!(i.missing().unwrap().contains("pyg-lib or torch-sparse"));
        i.pyg_lib = Some("0.4.0".into());
        assert_eq!(i.missing(), None);
    }
}
