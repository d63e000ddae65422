//! Reading a `torch.cuda.memory._dump_snapshot` pickle: the dict torch
//! writes (torch/cuda/memory.py `_snapshot`, typed in torch/cuda/_memory_viz.py
//! and memory.py's `Snapshot`/`TraceEntry`): `segments`, `device_traces` (per
//! device a list of `{action, addr, size, stream, time_us, frames}`) and
//! `allocator_settings`. Unknown classes inside are read as None.

use std::collections::BTreeMap;

use serde_pickle::{DeOptions, HashableValue, Value};

use super::trace::TraceEvent;
use crate::limits::MAX_DEVICE_INDEX;

/// One entry of a device trace.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotEvent {
    /// `alloc`, `free_requested`, `free_completed`, `segment_alloc`, `oom`, ...
    pub action: String,
    /// Address of the block (for `oom`: the device's free bytes).
    pub addr: u64,
    /// Bytes requested (for `alloc`/`free_*`: the requested size, unrounded).
    pub size: u64,
    /// The innermost Python frame, as `file:line in name`, when recorded.
    pub frame: Option<String>,
}

/// The parts of a snapshot the replay needs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Snapshot {
    /// `device_traces`: per device, its events in order.
    pub device_traces: Vec<Vec<SnapshotEvent>>,
    /// Number of segments alive when the snapshot was taken.
    pub segments: usize,
    /// Per device, (address, requested size) of blocks in use when the
    /// snapshot was taken (`segments[].blocks[]` in state `active_allocated`).
    pub active_blocks: Vec<Vec<(u64, u64)>>,
}

fn get<'a>(d: &'a BTreeMap<HashableValue, Value>, key: &str) -> Option<&'a Value> {
    d.get(&HashableValue::String(key.to_string()))
}

fn as_u64(v: &Value) -> Option<u64> {
    match v {
        Value::I64(i) => u64::try_from(*i).ok(),
        Value::Int(b) => b.to_string().parse().ok(),
        Value::F64(f) if *f >= 0.0 => Some(*f as u64),
        _ => None,
    }
}

fn first_frame(v: Option<&Value>) -> Option<String> {
    let Some(Value::List(frames)) = v else {
        return None;
    };
    let Some(Value::Dict(f)) = frames.first() else {
        return None;
    };
    let text = |k| match get(f, k) {
        Some(Value::String(s)) => s.clone(),
        Some(v) => as_u64(v).map(|n| n.to_string()).unwrap_or_default(),
        None => String::new(),
    };
    Some(format!(
        "{}:{} in {}",
        text("filename"),
        text("line"),
        text("name")
    ))
}

/// A segment's `device`, checked before it sizes a table (10^9 once
/// allocated 24 GB, 2^64-1 overflowed an index).
fn segment_device(seg: &BTreeMap<HashableValue, Value>) -> Result<usize, String> {
    let Some(v) = get(seg, "device") else {
        return Ok(0);
    };
    match as_u64(v) {
        Some(d) if d <= MAX_DEVICE_INDEX => Ok(d as usize),
        _ => Err(format!(
            "a segment's device {} is over the limit on the largest device index ({MAX_DEVICE_INDEX})",
            match v {
                Value::I64(i) => i.to_string(),
                Value::Int(b) => b.to_string(),
                other => crate::output::shown(&format!("{other:?}")),
            }
        )),
    }
}

/// Parses snapshot bytes; the error is one line saying what is wrong.
pub fn parse_snapshot(bytes: &[u8]) -> Result<Snapshot, String> {
    // Real snapshots nest 5 levels (dict / list / entry / frames / frame).
    super::pickle_guard::check_pickle_shape(bytes)
        .map_err(|e| format!("not a readable pickle ({e})"))?;
    // serde-pickle 1.2.0 counts the references to a memoized object, and a
    // container resolved while decoding is cloned without counting the
    // references inside it: torch's snapshots share frame dicts between
    // entries, and a real one (torch 2.11, tests/fixtures/alloc/
    // h200_graphsage_step.pickle) failed with "recursive structure found"
    // where Python reads no recursion. Replacing such a reference with None
    // lets the decode finish; every field read below (action, addr, size, a
    // block's state) is an error when it is missing, so a replaced one that
    // mattered cannot pass unseen (only a frame's name can be lost).
    let options = DeOptions::new()
        .replace_unresolved_globals()
        .replace_recursive_structures();
    let value = serde_pickle::value_from_slice(bytes, options)
        .map_err(|e| format!("not a readable pickle ({e})"))?;
    let Value::Dict(top) = value else {
        return Err("a pickle, but not a PyTorch memory snapshot (expected a dict with 'segments' and 'device_traces')".into());
    };
    let Some(Value::List(segment_list)) = get(&top, "segments") else {
        return Err("a pickle, but not a PyTorch memory snapshot (no 'segments' list)".into());
    };
    let segments = segment_list.len();
    let mut active_blocks: Vec<Vec<(u64, u64)>> = Vec::new();
    for seg in segment_list {
        let Value::Dict(seg) = seg else { continue };
        let dev = segment_device(seg)?;
        let Some(Value::List(blocks)) = get(seg, "blocks") else {
            continue;
        };
        for b in blocks {
            let Value::Dict(b) = b else { continue };
            let Some(Value::String(state)) = get(b, "state") else {
                return Err("malformed snapshot: a segment's block has no 'state'".into());
            };
            let active = state == "active_allocated";
            let addr = get(b, "address").and_then(as_u64);
            let size = get(b, "requested_size").or(get(b, "size")).and_then(as_u64);
            if let (true, Some(a), Some(s)) = (active, addr, size) {
                if active_blocks.len() <= dev {
                    active_blocks.resize(dev + 1, Vec::new());
                }
                active_blocks[dev].push((a, s));
            }
        }
    }
    let Some(Value::List(devices)) = get(&top, "device_traces") else {
        return Err("a PyTorch memory snapshot without 'device_traces': record with torch.cuda.memory._record_memory_history() before _dump_snapshot()".into());
    };
    let mut device_traces = Vec::new();
    for dev in devices {
        let Value::List(entries) = dev else {
            return Err("malformed snapshot: a device trace is not a list".into());
        };
        let mut events = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            let Value::Dict(e) = e else {
                return Err(format!("malformed snapshot: trace entry {i} is not a dict"));
            };
            let Some(Value::String(action)) = get(e, "action") else {
                return Err(format!(
                    "malformed snapshot: trace entry {i} has no 'action'"
                ));
            };
            let num = |k| get(e, k).and_then(as_u64);
            let (addr, size) = match (num("addr"), num("size")) {
                (Some(a), Some(s)) => (a, s),
                _ if action == "alloc" || action == "free_completed" => {
                    return Err(format!(
                        "malformed snapshot: {action} entry {i} lacks addr or size"
                    ));
                }
                (a, s) => (a.unwrap_or(0), s.unwrap_or(0)),
            };
            events.push(SnapshotEvent {
                action: action.clone(),
                addr,
                size,
                frame: first_frame(get(e, "frames")),
            });
        }
        device_traces.push(events);
    }
    Ok(Snapshot {
        device_traces,
        segments,
        active_blocks,
    })
}

/// The allocation trace of one device: `alloc` and `free_completed` (when the
/// allocator really took the block back), sizes multiplied by `scale`.
///
/// Tensors that were alive before recording began are allocated first: those
/// the trace frees without having allocated them (`free_completed` carries
/// the requested size), and those still in use at the snapshot that the trace
/// never mentions. (`_record_memory_history` keeps a ring buffer of
/// `max_entries` events, so a long run's early events are gone.)
/// Returns the events, for each its index in the device trace (None for the
/// pre-existing ones), and how many pre-existing tensors were added.
pub fn snapshot_trace(
    events: &[SnapshotEvent],
    active_at_end: &[(u64, u64)],
    scale: f64,
) -> (Vec<TraceEvent>, Vec<Option<usize>>, usize) {
    use std::collections::HashSet;
    let scaled = |s: u64| ((s as f64 * scale).round() as u64).max(1);
    let mut seen = HashSet::new();
    let mut before = Vec::new();
    for e in events {
        match e.action.as_str() {
            "alloc" => {
                seen.insert(e.addr);
            }
            "free_completed" if seen.insert(e.addr) => before.push((e.addr, e.size)),
            _ => {}
        }
    }
    before.extend(active_at_end.iter().filter(|(a, _)| !seen.contains(a)));
    let mut out: Vec<TraceEvent> = before
        .iter()
        .map(|&(id, s)| TraceEvent::Alloc {
            id,
            size: scaled(s),
        })
        .collect();
    let mut index = vec![None; out.len()];
    for (i, e) in events.iter().enumerate() {
        let ev = match e.action.as_str() {
            "alloc" => TraceEvent::Alloc {
                id: e.addr,
                size: scaled(e.size),
            },
            "free_completed" => TraceEvent::Free { id: e.addr },
            _ => continue,
        };
        out.push(ev);
        index.push(Some(i));
    }
    (out, index, before.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Vec<u8> {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/alloc/small.pickle"
        );
        std::fs::read(p).unwrap()
    }

    #[test]
    fn reads_the_structure_torch_writes() {
        let s = parse_snapshot(&small()).unwrap();
        assert_eq!(s.segments, 1);
        let t = &s.device_traces[0];
        assert_eq!(t.len(), 12);
        assert_eq!(t[1].action, "alloc");
        assert_eq!(t[1].size, 100 << 20);
        // The entry whose frames hold an object of an unknown class.
        assert_eq!(t[3].frame.as_deref(), Some("/work/train.py:20 in forward"));
        // One block active at the dump: 50 MiB at the segment's start.
        assert_eq!(s.active_blocks[0], vec![(0x7F00_0000_0000, 50 << 20)]);
    }

    #[test]
    fn a_real_h200_graphsage_step_replays_to_its_measured_peaks_exactly() {
        // Recorded on an NVIDIA H200 with torch 2.11 (train.py gpu); its
        // shared frame dicts once made the decoder report a recursion.
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/alloc/");
        let bytes = std::fs::read(format!("{dir}h200_graphsage_step.pickle")).unwrap();
        let measured: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{dir}h200_graphsage_step.json")).unwrap(),
        )
        .unwrap();
        let snap = parse_snapshot(&bytes).unwrap();
        let actions = |a: &str| {
            snap.device_traces[0]
                .iter()
                .filter(|e| e.action == a)
                .count()
        };
        // Python's pickle.load of the same file: 224 alloc, 204 free_completed.
        assert_eq!((actions("alloc"), actions("free_completed")), (224, 204));
        let device = crate::alloc::DeviceMemory::new(150_109_880_320, 682 << 20);
        let r = crate::alloc::replay::replay(
            &snap,
            0,
            1.0,
            "",
            &crate::alloc::AllocConf::default(),
            &device,
            false,
        );
        assert_eq!(
            (r.peak_allocated_bytes, r.peak_reserved_bytes),
            (
                measured["allocated_peak"].as_u64().unwrap(),
                measured["reserved_peak"].as_u64().unwrap()
            )
        );
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = small();
        for n in 0..b.len() - 1 {
            assert!(parse_snapshot(&b[..n]).is_err(), "prefix {n}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_before_it_can_overflow_the_stack() {
        let mut b = b"\x80\x04".to_vec();
        b.extend(std::iter::repeat_n(b']', 100_000));
        b.extend(std::iter::repeat_n(b'a', 99_999));
        b.push(b'.');
        assert!(parse_snapshot(&b).unwrap_err().contains("100000 levels"));
    }
}
