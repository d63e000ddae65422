//! `headroom watch` (work in progress).

pub mod cli;
