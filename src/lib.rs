//! headroom: a memory-budget planner and OOM diagnostician for GNN training
//! jobs on Slurm clusters. The binary's verbs live in their own modules; the
//! memory model underneath (`estimate`) is pure and shared by all of them.

pub mod alloc;
pub mod calibrate;
pub mod cli;
pub mod collect;
pub mod completion;
pub mod diagnose;
pub mod error;
pub mod estimate;
#[doc(hidden)]
pub mod fuzz;
pub mod input;
pub mod limits;
pub mod manpage;
pub mod output;
pub mod plan;
pub mod probe;
pub mod profiles;
pub mod script;
pub mod spec;
pub mod units;
pub mod watch;
pub mod yaml;
