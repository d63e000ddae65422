//! `headroom diagnose` (work in progress).

pub mod cli;
