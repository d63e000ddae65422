//! `headroom watch -- CMD`: runs a command, or attaches to one already
//! running (`--pid`, `--cgroup`, `--slurm-job`), records its whole process
//! tree's memory by role, its cgroup and GPU memory into a timeline, warns
//! before the limit, and explains its end.
//!
//! `cli` holds the arguments and output files (`cli_parse` their values),
//! `child` starts the job and forwards signals, `attach` watches one that
//! runs already, `sample` takes one row from the collectors (`roles` and
//! `sample_roles`: who holds the memory), `record` handles each row:
//! `alert` (thresholds), `compress` and `timeline` (the file), `thin` (the
//! plot's bounded rows), `summary` keeps the peaks; `verdict` names the
//! cause, `plot` draws the SVG, `run` is the loop and `finish` the end.

pub mod alert;
pub mod attach;
pub mod child;
pub mod cli;
mod cli_parse;
pub mod compress;
pub mod counters;
pub mod finish;
mod guard;
pub mod plot;
pub mod record;
pub mod roles;
pub mod run;
pub mod sample;
mod sample_roles;
pub mod summary;
pub mod summary_roles;
pub mod thin;
pub mod timeline;
pub mod verdict;

#[cfg(test)]
mod tests;
