//! Replaying a recorded snapshot under another card, batch scale or
//! allocator setting, and the report `headroom simulate-alloc` prints.

use std::io::Write;

use serde::Serialize;

use super::conf::AllocConf;
use super::snapshot::{Snapshot, snapshot_trace};
use super::state::DeviceMemory;
use super::trace::run_trace;
use crate::output::Report;
use crate::units::fmt_bytes;

/// Where the replay would raise a CUDA OOM.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayOom {
    /// Index of the failing `alloc` in the device's trace (`device_traces[d][i]`);
    /// null when a tensor alive before recording began already does not fit.
    pub event_index: Option<usize>,
    /// Bytes that request asked for (after `--scale`).
    pub requested_bytes: u64,
    /// The innermost recorded Python frame of that request, if any.
    pub frame: Option<String>,
    /// The message PyTorch would print.
    pub message: String,
}

/// The result of `headroom simulate-alloc`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Device index replayed from the snapshot.
    pub device_index: usize,
    /// Factor applied to every request size.
    pub scale: f64,
    /// The allocator settings replayed (PYTORCH_CUDA_ALLOC_CONF).
    pub alloc_conf: String,
    /// Total memory of the simulated card.
    pub gpu_total_bytes: u64,
    /// Memory outside PyTorch assumed (CUDA context, other processes).
    pub context_bytes: u64,
    /// alloc and free_completed events replayed.
    pub events_replayed: usize,
    /// Tensors alive before recording began, allocated first (freed in the
    /// trace without an alloc, or in use at the snapshot and never in the trace).
    pub preexisting_allocations: usize,
    /// `oom` events in the recording itself.
    pub recorded_ooms: usize,
    /// Highest bytes allocated to tensors.
    pub peak_allocated_bytes: u64,
    /// Highest bytes reserved by the allocator.
    pub peak_reserved_bytes: u64,
    /// Most free bytes ever held inside partly used segments (`inactive_split_bytes` peak): reserved but unusable for larger requests.
    pub peak_unusable_free_bytes: u64,
    /// Largest single free cached block at the end (or at the OOM).
    pub largest_free_block_bytes: u64,
    /// Reserved but unallocated at the end (or at the OOM).
    pub reserved_unallocated_bytes: u64,
    /// null, or where and how the replay runs out of memory.
    pub oom: Option<ReplayOom>,
}

/// Replays device `device_index` of `snap` with request sizes times `scale`.
pub fn replay(
    snap: &Snapshot,
    device_index: usize,
    scale: f64,
    conf_text: &str,
    conf: &AllocConf,
    device: &DeviceMemory,
    legacy_message: bool,
) -> ReplayReport {
    let events = snap
        .device_traces
        .get(device_index)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let active = snap
        .active_blocks
        .get(device_index)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let (trace, index, preexisting) = snapshot_trace(events, active, scale);
    let out = run_trace(trace.iter().copied(), conf, device);
    let oom = out.oom.as_ref().map(|o| {
        let i = index[o.event_index];
        ReplayOom {
            event_index: i,
            requested_bytes: o.state.requested_bytes,
            frame: i.and_then(|i| events[i].frame.clone()),
            message: if legacy_message {
                o.state.legacy_message()
            } else {
                o.message.clone()
            },
        }
    });
    ReplayReport {
        device_index,
        scale,
        alloc_conf: conf_text.to_string(),
        gpu_total_bytes: device.total,
        context_bytes: device.context + device.other_processes,
        events_replayed: out.events_run,
        preexisting_allocations: preexisting,
        recorded_ooms: events.iter().filter(|e| e.action == "oom").count(),
        peak_allocated_bytes: out.peak_allocated_bytes,
        peak_reserved_bytes: out.peak_reserved_bytes,
        peak_unusable_free_bytes: out.inactive_split_peak.unwrap_or(0),
        largest_free_block_bytes: out.largest_free_block_bytes,
        reserved_unallocated_bytes: out.reserved_unallocated_bytes,
        oom,
    }
}

impl Report for ReplayReport {
    fn write_text(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let conf = if self.alloc_conf.is_empty() {
            "(default)"
        } else {
            &self.alloc_conf
        };
        writeln!(
            w,
            "Replayed {} events of device {} (scale {}) with PYTORCH_CUDA_ALLOC_CONF={conf}",
            self.events_replayed, self.device_index, self.scale
        )?;
        writeln!(
            w,
            "on a {} GPU with {} outside PyTorch.",
            fmt_bytes(self.gpu_total_bytes),
            fmt_bytes(self.context_bytes)
        )?;
        writeln!(
            w,
            "  peak allocated          {}",
            fmt_bytes(self.peak_allocated_bytes)
        )?;
        writeln!(
            w,
            "  peak reserved           {}",
            fmt_bytes(self.peak_reserved_bytes)
        )?;
        writeln!(
            w,
            "  peak unusable free      {}  (free space inside partly used segments)",
            fmt_bytes(self.peak_unusable_free_bytes)
        )?;
        writeln!(
            w,
            "  largest free block      {}",
            fmt_bytes(self.largest_free_block_bytes)
        )?;
        if self.preexisting_allocations > 0 {
            writeln!(
                w,
                "  {} tensors alive before recording began were allocated first",
                self.preexisting_allocations
            )?;
        }
        match &self.oom {
            None => writeln!(w, "Fits: no CUDA out-of-memory error.")?,
            Some(o) => {
                let at = o
                    .frame
                    .as_deref()
                    .map(|f| format!(" ({f})"))
                    .unwrap_or_default();
                match o.event_index {
                    Some(i) => writeln!(w, "OOM at trace event {i}{at}:")?,
                    None => writeln!(
                        w,
                        "OOM before the trace starts, re-creating the tensors alive when recording began:"
                    )?,
                }
                writeln!(w, "torch.OutOfMemoryError: {}", o.message)?;
            }
        }
        Ok(())
    }

    fn annotations(&self) -> Vec<crate::output::Annotation> {
        self.oom
            .iter()
            .map(|o| {
                crate::output::Annotation::new(
                    crate::output::Level::Error,
                    format!("CUDA OOM at trace event {:?}: {}", o.event_index, o.message),
                )
            })
            .collect()
    }
}
