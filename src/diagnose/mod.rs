//! `headroom diagnose` (work in progress).

pub mod category;
pub mod cli;
