//! Embedded profiles (work in progress).

pub mod cli;
