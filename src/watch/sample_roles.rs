//! The roles' part of a sample: new processes get their role (`roles`),
//! then RSS, PSS and USS are summed per role, and every [`SHM_EVERY`]th
//! sample the /dev/shm files the loader workers hold open are counted, each
//! file once however many workers hold it.

use std::collections::{HashMap, HashSet};

use super::roles::{NewProcess, Role};
use super::sample::{Sample, Sampler};
use crate::collect::procfs::ProcessMemory;

/// The loader workers' /dev/shm files are read every this many samples
/// (a readlink per open fd: too costly for every sample of 100 processes).
pub const SHM_EVERY: u64 = 50;

impl Sampler {
    /// Gives new processes their role and sums RSS/PSS/USS per role.
    pub(super) fn add_roles(&mut self, t_s: f64, procs: &[ProcessMemory], s: &mut Sample) {
        let pids: HashSet<u32> = procs.iter().map(|p| p.pid).collect();
        let in_set = |pid: u32| pids.contains(&pid);
        let new: Vec<NewProcess> = procs
            .iter()
            .filter(|p| self.roles.is_new(p.pid))
            .map(|p| NewProcess {
                pid: p.pid,
                ppid: p.ppid,
                comm: p.comm.clone(),
                cmdline: self.proc.cmdline(p.pid).unwrap_or_default(),
            })
            .collect();
        if !new.is_empty() {
            let root = self.root_pid;
            let attached_cgroup = self.members.is_some();
            // In a cgroup, the job starts at processes whose parent is outside it.
            let is_root = |pid: u32| {
                let ppid = procs.iter().find(|p| p.pid == pid).map_or(0, |p| p.ppid);
                pid == root || (attached_cgroup && !in_set(ppid))
            };
            self.roles.assign(t_s, new, is_root);
            self.roles.retain(in_set);
        }
        let read_shm = self.taken.is_multiple_of(SHM_EVERY);
        let mut shm_files = HashMap::new();
        for p in procs {
            let role = self.roles.role(p.pid).unwrap_or(Role::Other);
            let (rss, pss, uss) = match role {
                Role::Main => (
                    &mut s.main_rss_bytes,
                    &mut s.main_pss_bytes,
                    &mut s.main_uss_bytes,
                ),
                Role::TrainWorkers => (
                    &mut s.train_workers_rss_bytes,
                    &mut s.train_workers_pss_bytes,
                    &mut s.train_workers_uss_bytes,
                ),
                Role::EvalWorkers => (
                    &mut s.eval_workers_rss_bytes,
                    &mut s.eval_workers_pss_bytes,
                    &mut s.eval_workers_uss_bytes,
                ),
                Role::Other => (
                    &mut s.other_rss_bytes,
                    &mut s.other_pss_bytes,
                    &mut s.other_uss_bytes,
                ),
            };
            *rss += p.rss.unwrap_or(0);
            *pss += p.pss.unwrap_or(0);
            *uss += p.uss.unwrap_or(0);
            let worker = matches!(role, Role::TrainWorkers | Role::EvalWorkers);
            if read_shm && worker {
                for (dev, ino, size) in self.proc.shm_files(p.pid) {
                    shm_files.insert((dev, ino), size);
                }
            }
        }
        if read_shm {
            self.last_shm = Some(shm_files.values().sum());
        }
        s.workers_dev_shm_bytes = self.last_shm;
    }
}
