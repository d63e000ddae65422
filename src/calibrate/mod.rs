//! `headroom calibrate` (work in progress).

pub mod cli;
