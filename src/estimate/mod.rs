//! The memory model: pure functions from a [`Job`](crate::spec::Job) and its
//! loader [`Settings`] to bytes per phase and per component. No I/O, no clock:
//! `plan`, `check`, `diagnose` and `calibrate` all call the same arithmetic.
//!
//! Peak memory is a maximum over phases (load, build loaders, train,
//! evaluate), never a sum of averages; see DESIGN.md for each mechanism.

mod batches;
mod builder;
mod coeff_bounds;
pub mod coeff_table;
mod coefficients;
mod dataset;
pub mod degree;
mod evaluate;
pub mod fanout;
pub mod frontier;
mod gpu;
mod heap_share;
mod host;
mod host_heap;
mod layerwise;
mod layerwise_heap;
#[cfg(test)]
mod layerwise_phases_tests;
mod lingering;
mod page_tables;
mod phase;
mod phases;
#[cfg(test)]
mod props;
mod regime;
mod step_parts;
mod step_shape;

pub use batches::{BatchModel, Prepared, batch_stats};
pub use coeff_bounds::{parse_calibration, validate as validate_coefficients};
pub use coefficients::{
    CalibrationFile, Coefficients, GpuProvenance, default_calibration_path, load_coefficients,
};
pub use dataset::DatasetBytes;
pub use fanout::SampleStats;
pub use gpu::{GpuBreakdown, cuda_context_bytes, gpu_breakdown};
pub use host::batch_tensors;
pub use layerwise_heap::{LAYERWISE_RISK_BELOW, layerwise_heap_risk};
pub use lingering::{
    LINGERING_EVALUATIONS_MAX, workers_per_loader as lingering_workers_per_loader,
};
pub use phase::{Component, Estimate, Phase, PhaseEstimate};
pub use phases::{estimate, estimate_with};
pub use regime::{FITTED, Regime};
pub use step_shape::step_shape;

use serde::{Deserialize, Serialize};

use crate::spec::EvalLoaders;

/// The loader settings the planner may change to make a job fit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Settings {
    /// Seed nodes per batch.
    pub batch_size: u64,
    /// Neighbors per hop; -1 takes all.
    pub fanout: Vec<i64>,
    /// DataLoader worker processes per loader.
    pub num_workers: u32,
    /// Workers survive across epochs.
    pub persistent_workers: bool,
    /// Batches each worker prepares ahead.
    pub prefetch_factor: u32,
    /// Batches are copied to page-locked memory.
    pub pin_memory: bool,
    /// When the evaluation loaders exist.
    pub eval_loaders: EvalLoaders,
    /// One NeighborSampler (one CSC) shared by every loader (`neighbor_sampler=`).
    pub shared_sampler: bool,
    /// edge_index sorted by destination beforehand (`is_sorted=True`: no `perm` kept).
    pub is_sorted: bool,
    /// gc.collect() after an on-demand loader is deleted (it is freed then,
    /// not at the next run of CPython's oldest generation).
    pub gc_collect: bool,
    /// PYTORCH_CUDA_ALLOC_CONF includes `expandable_segments:True`.
    pub expandable_segments: bool,
}
