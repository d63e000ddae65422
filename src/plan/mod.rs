//! `headroom plan` and `headroom check` (work in progress).

pub mod cli;
