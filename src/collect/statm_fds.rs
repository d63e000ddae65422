//! Resident set sizes read through `statm` files kept open: a sampler that
//! reads 100 processes ten times a second spends most of its time opening
//! and closing procfs files (path lookup, permission checks, a new
//! seq_file), so each process's `statm` is opened once and re-read with
//! pread at offset 0, which makes the kernel generate it afresh. A process
//! that has exited reads as an error (its task is gone), so a reused pid
//! never inherits an old descriptor: the descriptor is dropped at the first
//! failed read.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use super::proc_text::page_size;

/// Open `statm` files by pid under one procfs root.
#[derive(Debug, Default)]
pub struct StatmFds {
    root: PathBuf,
    open: HashMap<u32, File>,
}

impl StatmFds {
    /// Reads `<root>/<pid>/statm` files (`/proc`, or a fake tree).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StatmFds {
            root: root.into(),
            open: HashMap::new(),
        }
    }

    /// The resident set of `pid` in bytes; `None` once it has gone.
    pub fn rss(&mut self, pid: u32) -> Option<u64> {
        if !self.open.contains_key(&pid) {
            let f = File::open(self.root.join(pid.to_string()).join("statm")).ok()?;
            self.open.insert(pid, f);
        }
        let mut buf = [0u8; 128];
        let n = match self.open.get(&pid)?.read_at(&mut buf, 0) {
            Ok(n) if n > 0 => n,
            _ => {
                self.open.remove(&pid);
                return None;
            }
        };
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * page_size())
    }

    /// Closes the files of processes for which `alive` is false.
    pub fn retain(&mut self, alive: impl Fn(u32) -> bool) {
        self.open.retain(|pid, _| alive(*pid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rereads_an_open_statm_and_forgets_a_gone_process() {
        let mut fds = StatmFds::new("/proc");
        let me = std::process::id();
        let before = fds.rss(me).unwrap();
        // 64 MiB touched: the same open file now reads a larger RSS.
        let block = std::hint::black_box(vec![1u8; 64 << 20]);
        let after = fds.rss(me).unwrap();
        assert!(after >= before + (60 << 20), "{before} -> {after}");
        drop(block);
        let mut child = std::process::Command::new("sleep")
            .arg("10")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(fds.rss(pid).is_some());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(fds.rss(pid), None, "a reaped process reads as gone");
        assert!(!fds.open.contains_key(&pid));
    }
}
