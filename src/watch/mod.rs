//! `headroom watch -- CMD`: runs a command, records its whole process tree's
//! memory, its cgroup and GPU memory into a timeline, and explains its end.
//!
//! `cli` holds the arguments and output files, `child` starts the job and
//! forwards signals, `sample` takes one row from the collectors, `timeline`
//! writes rows as they come, `summary` keeps the peaks, `verdict` names the
//! cause, `plot` draws the SVG, `run` is the loop and `finish` the end.

pub mod alert;
pub mod attach;
pub mod child;
pub mod cli;
pub mod compress;
pub mod finish;
mod guard;
pub mod plot;
pub mod record;
pub mod roles;
pub mod run;
pub mod sample;
pub mod summary;
pub mod summary_roles;
pub mod thin;
pub mod timeline;
pub mod verdict;

#[cfg(test)]
mod tests;
