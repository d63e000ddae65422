//! The kernel log from a point on: how an attached watcher learns that the
//! OOM killer took a process it could not wait for (not its child, so no
//! exit status). [`KernelLog::open_at_end`] opens `/dev/kmsg` (or a file in
//! tests) positioned after the last record; [`KernelLog::read_new`] returns
//! the records written since, one message each. Reading `/dev/kmsg` needs
//! root or `kernel.dmesg_restrict=0`; without it there is simply no log.
//!
//! Record format (Documentation/ABI/testing/dev-kmsg):
//! `prio,seq,usec,flags[,more];message`, continuation lines start with a
//! space. [`about_pids`] keeps the lines that name one of the watched pids
//! in the forms the OOM killer prints (`Killed process 1234 (python)`,
//! `oom-kill:...,task=python,pid=1234,uid=0`).

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// An open kernel log.
pub struct KernelLog {
    file: File,
    regular: bool,
}

impl KernelLog {
    /// Opens `path` (`/dev/kmsg`) without blocking, after its last record.
    pub fn open_at_end(path: &Path) -> std::io::Result<Self> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(path)?;
        // On /dev/kmsg SEEK_END means "after the last record"; on a file, its end.
        file.seek(SeekFrom::End(0))?;
        let regular = file.metadata()?.is_file();
        Ok(KernelLog { file, regular })
    }

    /// The messages logged since the last call (or since opening).
    pub fn read_new(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if self.regular {
            let mut text = String::new();
            let _ = self.file.read_to_string(&mut text);
            out.extend(text.lines().filter_map(message));
            return out;
        }
        // One read returns one record; a record is at most 8 KiB (LOG_LINE_MAX + prefix).
        let mut buf = vec![0u8; 16 * 1024];
        for _ in 0..100_000 {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]);
                    out.extend(text.lines().filter_map(message));
                }
                // EPIPE: records were overwritten before we read them; go on.
                Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EPIPE as i32) => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        out
    }
}

/// The message of one record line; continuation lines (` KEY=value`) are
/// dropped.
fn message(line: &str) -> Option<String> {
    if line.starts_with(' ') {
        return None;
    }
    let (_, msg) = line.split_once(';')?;
    Some(msg.to_string())
}

/// The messages that name one of `pids` the way the OOM killer does.
pub fn about_pids(messages: &[String], pids: &[u32]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| {
            pids.iter().any(|p| {
                m.contains(&format!("Killed process {p} "))
                    || m.contains(&format!(",pid={p},"))
                    || m.contains(&format!("process {p} ("))
            })
        })
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_what_is_logged_after_opening_and_keeps_the_pids_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("kmsg");
        std::fs::write(&log, "6,1,10,-;Killed process 7 (old) total-vm:1kB\n").unwrap();
        let mut k = KernelLog::open_at_end(&log).unwrap();
        assert!(k.read_new().is_empty());
        // Real kernel 5.x lines (see src/diagnose/parse/kernel.rs).
        let later = "6,2,20,-;python invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=1000\n \
                     SUBSYSTEM=memory\n\
                     6,3,21,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/job_1,task_memcg=/job_1,task=python,pid=4242,uid=0\n\
                     3,4,22,-;Memory cgroup out of memory: Killed process 4242 (python) total-vm:1250264kB, anon-rss:96484kB, file-rss:5120kB, shmem-rss:0kB, UID:0 pgtables:400kB oom_score_adj:1000\n\
                     3,5,23,-;Memory cgroup out of memory: Killed process 42420 (other) total-vm:1kB\n";
        std::fs::OpenOptions::new()
            .append(true)
            .open(&log)
            .and_then(|mut f| std::io::Write::write_all(&mut f, later.as_bytes()))
            .unwrap();
        let msgs = k.read_new();
        assert_eq!(msgs.len(), 4, "{msgs:?}");
        let mine = about_pids(&msgs, &[4242]);
        assert_eq!(mine.len(), 2, "{mine:?}");
        assert!(mine[1].starts_with("Memory cgroup out of memory: Killed process 4242"));
    }

    #[test]
    fn the_real_kernel_log_opens_at_its_end_when_readable() {
        let Ok(mut k) = KernelLog::open_at_end(Path::new("/dev/kmsg")) else {
            eprintln!("SKIPPED: /dev/kmsg is not readable here");
            return;
        };
        // Whatever is logged meanwhile, nothing from before opening comes back
        // in bulk: the boot log alone is hundreds of records.
        assert!(k.read_new().len() < 50);
    }
}
