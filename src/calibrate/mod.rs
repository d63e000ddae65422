//! `headroom calibrate` (work in progress): a real calibration workload —
//! synthetic power-law graph, PyG-style neighbor sampler — whose measurements
//! check and fit the estimators.

pub mod cli;
pub mod graph;
pub mod rng;
pub mod sampler;
