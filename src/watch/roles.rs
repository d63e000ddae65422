//! Who holds the memory: each process of a watched job gets a role, once,
//! when first seen, from its command line and its ancestry.
//!
//! - main: the processes the watch started from (the command, the attached
//!   pid, a cgroup's processes whose parent is outside it), and what a
//!   launcher among them execs (`bash` → `srun` → `python`).
//! - loader workers: children of a main process that are forks of it (the
//!   same command line: PyTorch's default `fork` start method) or spawned
//!   through `multiprocessing.spawn.spawn_main` (`spawn`, `forkserver`).
//!   Workers of one parent first seen within [`COHORT_GAP_S`] of each other
//!   are one loader's cohort. The first cohort trains. A cohort born while a
//!   training cohort is alive evaluates (persistent training workers stay
//!   alive through evaluation). A cohort born after every earlier one ended
//!   cannot be told apart by the process table alone (a non-persistent
//!   evaluation loader looks like the next epoch's training loader): it is
//!   counted as training. That is the one guess here, and it is named so.
//! - other: everything else (multiprocessing's resource tracker and fork
//!   server, `torch_shm_manager`, a shell-out).
//!
//! Pure: the caller reads command lines; this only decides.

use std::collections::HashMap;

use serde::Serialize;

/// How close in time the workers of one loader are first seen, seconds.
pub const COHORT_GAP_S: f64 = 2.0;

/// A process's part in the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The job's main process (and launchers before it).
    Main,
    /// Training DataLoader workers.
    TrainWorkers,
    /// Evaluation DataLoader workers.
    EvalWorkers,
    /// Any other child.
    Other,
}

impl Role {
    /// Every role, in display order.
    pub const ALL: [Role; 4] = [
        Role::Main,
        Role::TrainWorkers,
        Role::EvalWorkers,
        Role::Other,
    ];

    /// The name in tables and column prefixes.
    pub fn name(self) -> &'static str {
        match self {
            Role::Main => "main",
            Role::TrainWorkers => "train_workers",
            Role::EvalWorkers => "eval_workers",
            Role::Other => "other",
        }
    }
}

/// What the book needs to know about a process seen for the first time.
#[derive(Debug, Clone)]
pub struct NewProcess {
    /// Its pid.
    pub pid: u32,
    /// Its parent.
    pub ppid: u32,
    /// Its command name.
    pub comm: String,
    /// Its command line, arguments joined by spaces (empty: unreadable).
    pub cmdline: String,
}

struct Known {
    role: Role,
    comm: String,
    cmdline: String,
    cohort: Option<usize>,
}

struct Cohort {
    parent: u32,
    born_s: f64,
    role: Role,
}

/// Launchers whose child is still the main job.
const LAUNCHERS: [&str; 10] = [
    "bash", "sh", "dash", "zsh", "srun", "env", "timeout", "stdbuf", "mpirun", "torchrun",
];

/// The roles of a job's processes, decided once each.
#[derive(Default)]
pub struct RoleBook {
    known: HashMap<u32, Known>,
    cohorts: Vec<Cohort>,
}

impl RoleBook {
    /// The role of `pid`, if it was seen.
    pub fn role(&self, pid: u32) -> Option<Role> {
        self.known.get(&pid).map(|k| k.role)
    }

    /// Whether `pid` still needs a role.
    pub fn is_new(&self, pid: u32) -> bool {
        !self.known.contains_key(&pid)
    }

    /// Decides the roles of processes first seen at `t_s`. `root` says
    /// whether a process is one the watch started from. Parents must come
    /// before their children (the tree walk's order) or be known already.
    pub fn assign(&mut self, t_s: f64, new: Vec<NewProcess>, root: impl Fn(u32) -> bool) {
        for p in new {
            let role = self.decide(t_s, &p, root(p.pid));
            self.known.insert(p.pid, role);
        }
    }

    /// Forgets processes no longer alive (`alive` false).
    pub fn retain(&mut self, alive: impl Fn(u32) -> bool) {
        self.known.retain(|pid, _| alive(*pid));
    }

    fn decide(&mut self, t_s: f64, p: &NewProcess, is_root: bool) -> Known {
        let known = |role, cohort| Known {
            role,
            comm: p.comm.clone(),
            cmdline: p.cmdline.clone(),
            cohort,
        };
        if is_root {
            return known(Role::Main, None);
        }
        let helper = p.cmdline.contains("multiprocessing.resource_tracker")
            || p.cmdline.contains("multiprocessing.forkserver")
            || p.comm == "torch_shm_manager";
        let parent = self.known.get(&p.ppid);
        let parent_main = parent.is_some_and(|k| k.role == Role::Main);
        let forked = parent.is_some_and(|k| !k.cmdline.is_empty() && k.cmdline == p.cmdline);
        let spawned = p.cmdline.contains("spawn_main");
        if !helper && (spawned || (parent_main && forked)) {
            let cohort = self.cohort_for(t_s, p.ppid);
            return known(self.cohorts[cohort].role, Some(cohort));
        }
        if !helper && parent_main && parent.is_some_and(|k| LAUNCHERS.contains(&k.comm.as_str())) {
            return known(Role::Main, None);
        }
        known(Role::Other, None)
    }

    /// The cohort a worker of `parent` first seen at `t_s` belongs to.
    fn cohort_for(&mut self, t_s: f64, parent: u32) -> usize {
        if let Some(i) = self
            .cohorts
            .iter()
            .rposition(|c| c.parent == parent && t_s - c.born_s <= COHORT_GAP_S)
        {
            return i;
        }
        let train_alive = self
            .known
            .values()
            .any(|k| k.role == Role::TrainWorkers && k.cohort.is_some());
        let role = if train_alive {
            Role::EvalWorkers
        } else {
            Role::TrainWorkers
        };
        self.cohorts.push(Cohort {
            parent,
            born_s: t_s,
            role,
        });
        self.cohorts.len() - 1
    }
}

#[cfg(test)]
#[path = "roles_tests.rs"]
mod tests;
