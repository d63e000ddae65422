//! The fix for a CUDA OOM, with its arithmetic: the batch fraction that
//! would have fit (capacity), and the headroom an allocator setting recovers
//! (fragmentation), in the setting this PyTorch version has.

use super::category::Confidence;
use super::parse::cuda_oom::{CudaOom, CudaOomFormat};
use crate::units::fmt_bytes;

/// Safety margin below the batch fraction that would just fit: fixed memory
/// (parameters, optimizer state) and the largest batch of a run are unknown.
const BATCH_MARGIN: f64 = 0.9;

/// The allocator simulator's estimate, from the printed numbers, of whether
/// `expandable_segments:True` would have avoided this OOM (2.x messages only:
/// older PyTorch has no expandable segments).
pub fn expandable_what_if(c: &CudaOom) -> Option<crate::alloc::ExpandableWhatIf> {
    if c.format != CudaOomFormat::Pytorch2 {
        return None;
    }
    let n = crate::alloc::OomNumbers {
        requested: c.requested_bytes?,
        total: c.total_bytes?,
        free: c.free_bytes?,
        allocated: c.allocated_bytes?,
        reserved_unallocated: c.reserved_unallocated_bytes?,
        process_in_use: c.process_in_use_bytes,
    };
    Some(crate::alloc::expandable_what_if(&n))
}

/// One sentence on what expandable segments would have done.
fn what_if_line(c: &CudaOom) -> Option<String> {
    let w = expandable_what_if(c)?;
    let req = c.requested_bytes.unwrap_or(0);
    Some(if w.would_fit {
        format!(
            "{}: with expandable segments the {} request maps pages into the free and reserved-but-unallocated memory ({} usable after a 20 MiB page of slack at each end) and would most likely have succeeded, {} to spare",
            alloc_conf(c.format),
            fmt_bytes(req),
            fmt_bytes(w.usable_bytes),
            fmt_bytes(w.margin_bytes.unsigned_abs())
        )
    } else {
        format!(
            "{} would not have saved this step: {} usable against the {} request rounded up to 20 MiB pages, {} short",
            alloc_conf(c.format),
            fmt_bytes(w.usable_bytes),
            fmt_bytes(req),
            fmt_bytes(w.margin_bytes.unsigned_abs())
        )
    })
}

/// Verdict and fix for a capacity OOM (the tensors do not fit).
pub fn capacity(cuda: Option<&CudaOom>, confidence: Confidence) -> (String, Vec<String>) {
    let Some(c) = cuda.filter(|c| c.requested_bytes.is_some()) else {
        return (
            "CUDA out of memory; the message carries no allocator numbers (cut off, or a `CUDA error: out of memory` outside the caching allocator).".into(),
            vec!["lower GPU memory per step: smaller batch size or fanout, AMP (bf16/fp16), activation checkpointing".into()],
        );
    };
    let req = c.requested_bytes.unwrap_or(0);
    let mut verdict = format!(
        "CUDA out of memory on GPU {}: an allocation of {} failed with {} free{}; the tensors do not fit the card (capacity).",
        c.device.unwrap_or(0),
        fmt_bytes(req),
        c.free_bytes.map_or("unknown".into(), fmt_bytes),
        c.reserved_unallocated_bytes
            .map_or(String::new(), |u| format!(
                " and {} reserved but unallocated, less than the request",
                fmt_bytes(u)
            )),
    );
    if confidence < Confidence::Certain {
        verdict.push_str(" The message is incomplete, so fragmentation cannot be ruled out.");
    }
    let mut fix = Vec::new();
    if let Some(f) = c.fitting_batch_fraction() {
        let (a, free) = (c.allocated_bytes.unwrap_or(0), c.free_bytes.unwrap_or(0));
        fix.push(format!(
            "reduce the batch (or sampled subgraph) to at most {:.0}% of its size: the step needed allocated + requested = {} + {} = {} and could have had allocated + free = {} + {} = {}, a fraction of {:.3}; with a {:.0}% margin for fixed memory (parameters, optimizer state) and larger batches: x{:.2}",
            f * BATCH_MARGIN * 100.0,
            fmt_bytes(a), fmt_bytes(req), fmt_bytes(a + req),
            fmt_bytes(a), fmt_bytes(free), fmt_bytes(a + free),
            f, (1.0 - BATCH_MARGIN) * 100.0, f * BATCH_MARGIN,
        ));
    }
    if let Some(line) = what_if_line(c) {
        fix.push(line);
    } else if let (Some(free), Some(u)) = (c.free_bytes, c.reserved_unallocated_bytes)
        && free + u >= req
    {
        fix.push(format!(
                "free + reserved-but-unallocated = {} + {} = {} would hold the {} request if it were one piece: {} may also let this step fit",
                fmt_bytes(free), fmt_bytes(u), fmt_bytes(free + u), fmt_bytes(req), alloc_conf(c.format)
            ));
    }
    fix.push("other ways down: AMP (bf16/fp16), activation checkpointing, fewer sampled neighbours (fanout), a card with more memory".into());
    (verdict, fix)
}

/// Verdict and fix for a fragmentation OOM.
pub fn fragmentation(cuda: Option<&CudaOom>) -> (String, Vec<String>) {
    let c = cuda.cloned().unwrap_or_default();
    let (req, unalloc) = (
        c.requested_bytes.unwrap_or(0),
        c.reserved_unallocated_bytes.unwrap_or(0),
    );
    (
        format!(
            "CUDA out of memory on GPU {} by fragmentation: {} was reserved by PyTorch but unallocated, at least the {} requested, yet no single free block was large enough.",
            c.device.unwrap_or(0),
            fmt_bytes(unalloc),
            fmt_bytes(req)
        ),
        std::iter::once(format!(
            "set {}: it recovers up to the {} held in partly used segments, {} more than the request",
            alloc_conf(c.format),
            fmt_bytes(unalloc),
            fmt_bytes(unalloc - req.min(unalloc))
        ))
        .chain(what_if_line(&c))
        .collect(),
    )
}

/// Verdict and fix when another process holds much of the card.
pub fn other_process(cuda: Option<&CudaOom>) -> (String, Vec<String>) {
    let c = cuda.cloned().unwrap_or_default();
    let gib = |v: Option<u64>| v.map_or("unknown".into(), fmt_bytes);
    let own = c.process_in_use_bytes.or_else(|| {
        c.allocated_bytes?
            .checked_add(c.reserved_unallocated_bytes?)
    });
    let mut verdict = format!(
        "CUDA out of memory on GPU {} caused by another process: of its {} only {} is free, this process holds {}, so about {} belongs to other processes on the same card. The job itself did not outgrow the GPU.",
        c.device.unwrap_or(0),
        gib(c.total_bytes),
        gib(c.free_bytes),
        gib(own),
        gib(c.held_by_others()),
    );
    verdict.push_str(&second_cause(&c));
    (
        verdict,
        vec![
            "run `nvidia-smi` on the node: find the other process (a previous run still alive, a notebook kernel, another user's job) and stop it".into(),
            "give the job the card to itself: request it through the scheduler (--gres=gpu:1, --exclusive) instead of picking a device by hand, and set CUDA_VISIBLE_DEVICES to the one assigned".into(),
        ],
    )
}

/// What else the figures fit, and what tells the causes apart. Before 2.1
/// the message cannot tell another process from this process's own memory
/// outside PyTorch's allocator (the CUDA context, 300-600 MiB; cuDNN, cuBLAS
/// and NCCL workspaces), so "others" is only as good as that margin; and
/// when the reserved-but-unallocated memory covers the request, the same
/// message also fits fragmentation.
fn second_cause(c: &CudaOom) -> String {
    let mut out = String::new();
    if c.process_in_use_bytes.is_none() {
        out.push_str(" This message format (PyTorch before 2.1) does not count the process's own memory outside the caching allocator (its CUDA context, 300-600 MiB, and library workspaces), which is included in that figure.");
    }
    if let (Some(unalloc), Some(req)) = (c.reserved_unallocated_bytes, c.requested_bytes)
        && unalloc >= req
    {
        out.push_str(&format!(
            " The figures also fit fragmentation: {} is reserved by PyTorch but unallocated, at least the {} requested, yet no free block was large enough.",
            fmt_bytes(unalloc),
            fmt_bytes(req)
        ));
    }
    if !out.is_empty() {
        out.push_str(" What tells them apart: `nvidia-smi` on the node while the job runs lists every process's GPU memory (another PID holding gigabytes means another process; only this PID means its own non-PyTorch memory or fragmentation), and PyTorch 2.1+ prints `Process N has M memory in use` for each one.");
    }
    out
}

/// The allocator setting that fights fragmentation in this PyTorch version.
fn alloc_conf(format: CudaOomFormat) -> &'static str {
    match format {
        CudaOomFormat::Pytorch2 | CudaOomFormat::NoNumbers => {
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch >= 2.1)"
        }
        _ => {
            "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512 (this PyTorch predates expandable_segments, which 2.1 added)"
        }
    }
}
