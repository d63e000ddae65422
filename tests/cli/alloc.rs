//! End-to-end tests of `headroom simulate-alloc` on snapshots written by
//! tests/fixtures/alloc/make_snapshot.py in torch's pickle structure.
//!
//! The trace of small.pickle (device 0), sizes in MiB: A=alloc 100, B=alloc
//! 300, free A, C=alloc 50, free B, a free of a 4096 B tensor allocated
//! before recording began (so replayed as allocated first: a 2 MiB small-pool
//! segment), D=alloc 400 (trace index 10).

use crate::util::{fixture, headroom, json_of};

const MIB: u64 = 1 << 20;

fn json(args: &[&str]) -> serde_json::Value {
    json_of(
        headroom()
            .arg("simulate-alloc")
            .arg(fixture("alloc/small.pickle"))
            .args(args)
            .args(["--format", "json"]),
    )
}

#[test]
fn segment_mode_on_a_large_card_keeps_every_segment() {
    // The 4096 B tensor: 2 MiB small segment. A: segment 100; B: segment 300
    // (reserved 402); free A; C (50) splits A's cached 100 MiB block
    // (remainder 50 > 1 MiB); free B; the 4096 B tensor is freed; D (400)
    // fits no cached block -> new 400 MiB segment: reserved 802.
    // Allocated: 400 MiB + 4 KiB after B, then 350 MiB + 4 KiB, 50 MiB after
    // the frees, 450 MiB after D -> peak 450 MiB.
    let v = json(&["--gpu", "80G"]);
    assert_eq!(v["peak_allocated_bytes"], 450 * MIB);
    assert_eq!(v["peak_reserved_bytes"], 802 * MIB);
    assert_eq!(v["preexisting_allocations"], 1);
    assert!(v["oom"].is_null());
}

#[test]
fn fragmentation_oom_names_the_event_and_prints_pytorchs_message() {
    // 460 MiB card, nothing outside PyTorch. D: cudaMalloc 400 with 402
    // reserved fails; release_cached_blocks frees B's unsplit 300 MiB
    // segment and the free 2 MiB small one (reserved 100) but not A's split
    // one; 100 + 400 > 460 -> OOM.
    // free = 460 - 100 = 360; allocated = C = 50; unallocated = 100 - 50.
    let v = json(&["--gpu", "460M", "--context", "0"]);
    let oom = &v["oom"];
    assert_eq!(oom["event_index"], 10);
    let msg = oom["message"].as_str().unwrap();
    assert!(msg.starts_with(
        "CUDA out of memory. Tried to allocate 400.00 MiB. GPU 0 has a total capacity of \
         460.00 MiB of which 360.00 MiB is free. Including non-PyTorch memory, this process has \
         100.00 MiB memory in use. Of the allocated memory 50.00 MiB is allocated by PyTorch, and \
         50.00 MiB is reserved by PyTorch but unallocated."
    ));
    assert_eq!(v["peak_reserved_bytes"], 402 * MIB);
}

#[test]
fn expandable_segments_fit_the_same_trace() {
    // Small pool: one 2 MiB page for the 4096 B tensor. Large pool, one
    // growing segment: A+B map 400 (reserved 402); C takes [0,50); freeing B
    // leaves [50,400) free; D needs 50 more -> 3 pages = 60 MiB -> 462 > 460
    // fails; release_cached_blocks unmaps pages 3..20 of [50,400) (340 MiB)
    // and the free small page: reserved 60; the retry maps [60,460): 400 MiB
    // -> reserved 460 = the card. Allocated peak C + D = 450.
    let v = json(&[
        "--gpu",
        "460M",
        "--context",
        "0",
        "--alloc-conf",
        "expandable_segments:True",
    ]);
    assert!(v["oom"].is_null());
    assert_eq!(v["peak_reserved_bytes"], 460 * MIB);
    assert_eq!(v["peak_allocated_bytes"], 450 * MIB);
}

#[test]
fn scale_multiplies_every_request() {
    // x2: 8 KiB tensor (2 MiB segment), A 200, B 600 (reserved 802), C 100
    // splits A's 200; D 800 -> new segment: reserved 1602. Allocated peak:
    // C + D = 900.
    let v = json(&["--gpu", "80G", "--scale", "2"]);
    assert_eq!(v["peak_allocated_bytes"], 900 * MIB);
    assert_eq!(v["peak_reserved_bytes"], 1602 * MIB);
}

#[test]
fn tensors_from_before_the_recording_are_allocated_first() {
    // late_start.pickle: X (30, freed in the trace) and Z (200, alive at the
    // snapshot) come first: reserved 230; free X; Y (100) fits no cached
    // block -> reserved 330. Allocated: 230, then 200, then 300.
    let out = headroom()
        .arg("simulate-alloc")
        .arg(fixture("alloc/late_start.pickle"))
        .args(["--gpu", "80G", "--format", "json"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["preexisting_allocations"], 2);
    assert_eq!(v["peak_allocated_bytes"], 300 * MIB);
    assert_eq!(v["peak_reserved_bytes"], 330 * MIB);
}

#[test]
fn legacy_message_has_the_1x_form() {
    // Same OOM as above, numbers in PyTorch 1.x/2.0 order: allocated 50 MiB,
    // free 360 MiB, reserved 100 MiB.
    let v = json(&["--gpu", "460M", "--context", "0", "--legacy-message"]);
    assert_eq!(
        v["oom"]["message"],
        "CUDA out of memory. Tried to allocate 400.00 MiB (GPU 0; 460.00 MiB total capacity; \
         50.00 MiB already allocated; 360.00 MiB free; 100.00 MiB reserved in total by PyTorch) \
         If reserved memory is >> allocated memory try setting max_split_size_mb to avoid \
         fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF"
    );
}

#[test]
fn table_output_says_where_it_fails() {
    let out = headroom()
        .arg("simulate-alloc")
        .arg(fixture("alloc/small.pickle"))
        .args(["--gpu", "460M", "--context", "0"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("OOM at trace event 10 (/work/train.py:30 in backward)"),
        "{text}"
    );
    assert!(text.contains("torch.OutOfMemoryError: CUDA out of memory."));
}

fn fails_with(file: &str, args: &[&str], needle: &str) {
    let out = headroom()
        .arg("simulate-alloc")
        .arg(fixture(file))
        .args(args)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(needle), "{err}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    fails_with(
        "alloc/not_a_pickle.pickle",
        &["--gpu", "80G"],
        "not a readable pickle",
    );
    fails_with(
        "alloc/list.pickle",
        &["--gpu", "80G"],
        "not a PyTorch memory snapshot",
    );
    fails_with(
        "alloc/no_traces.pickle",
        &["--gpu", "80G"],
        "_record_memory_history",
    );
    fails_with(
        "alloc/small.pickle",
        &["--gpu", "80G", "--alloc-conf", "expandable_segment:True"],
        "Unrecognized CachingAllocator option: expandable_segment",
    );
    fails_with("alloc/small.pickle", &["--gpu", "a41"], "unknown GPU 'a41'");
    fails_with(
        "alloc/small.pickle",
        &["--gpu", "80G", "--scale", "0"],
        "--scale",
    );
    fails_with("alloc/missing.pickle", &["--gpu", "80G"], "missing.pickle");
}

/// Replays a trace in record_trace.py's format through the simulator and
/// returns the first reading that differs.
fn replay_recorded(path: &std::path::Path) -> Result<usize, String> {
    use headroom::alloc::{AllocConf, Allocator, DeviceMemory};
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let num = |v: &serde_json::Value| v.as_u64().unwrap_or(0);
    let total = num(&doc["total_memory"]);
    let context = total - num(&doc["free_at_start"]);
    let conf =
        AllocConf::parse(doc["alloc_conf"].as_str().unwrap_or("")).map_err(|e| e.to_string())?;
    let mut a = Allocator::new(conf, DeviceMemory::new(total, context));
    let mut live = std::collections::HashMap::new();
    let ops = doc["ops"].as_array().ok_or("no ops")?;
    for (i, op) in ops.iter().enumerate() {
        match op["op"].as_str() {
            Some("alloc") => {
                let b = a
                    .malloc(num(&op["size"]))
                    .map_err(|o| format!("op {i}: simulated OOM: {}", o.message()))?;
                live.insert(num(&op["id"]), b);
            }
            Some("free") => a.free(
                live.remove(&num(&op["id"]))
                    .ok_or(format!("op {i}: unknown id"))?,
            ),
            Some("empty_cache") => a.empty_cache(),
            other => return Err(format!("op {i}: unknown op {other:?}")),
        }
        let (want_r, want_a) = (num(&doc["reserved"][i]), num(&doc["allocated"][i]));
        let s = a.stats();
        if (s.reserved.current, s.allocated.current) != (want_r, want_a) {
            return Err(format!(
                "{}: op {i} ({op}): PyTorch reserved {want_r} allocated {want_a}, simulator {} {}",
                path.display(),
                s.reserved.current,
                s.allocated.current
            ));
        }
    }
    Ok(ops.len())
}

#[test]
fn hand_computed_trace_replays_exactly() {
    // handmade_trace.json, by the rules: 1000 B -> 1024 in a 2 MiB small
    // segment; 5 MiB -> a 20 MiB segment (reserved 22 MiB); a second 5 MiB
    // fits its 15 MiB remainder; 30 MiB -> a new 30 MiB segment (52 MiB);
    // after its free, empty_cache returns only it (the others are split,
    // 22 MiB); after the 1000 B tensor goes, empty_cache also returns the
    // small segment (20 MiB left).
    assert_eq!(
        replay_recorded(&fixture("alloc/handmade_trace.json")),
        Ok(9)
    );
}

#[test]
fn recorded_pytorch_traces_replay_exactly() {
    let dir = fixture("alloc/recorded");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    if files.is_empty() {
        eprintln!(
            "skipped: no recorded PyTorch trace in {} (run tests/fixtures/alloc/record_trace.py on a machine with an NVIDIA GPU and PyTorch)",
            dir.display()
        );
        return;
    }
    for f in files {
        if let Err(e) = replay_recorded(&f) {
            panic!("{e}");
        }
    }
}

/// A real snapshot of a GraphSAGE training step (torch 2.11 on an H200)
/// through the command a user runs: the peaks are the ones PyTorch measured
/// (tests/fixtures/alloc/h200_graphsage_step.json). Its shared frame dicts
/// made the decoder fail before ("recursive structure found").
#[test]
fn simulate_alloc_replays_a_real_h200_snapshot_to_its_measured_peaks() {
    let snap = fixture("alloc/h200_graphsage_step.pickle");
    let measured: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("alloc/h200_graphsage_step.json")).unwrap(),
    )
    .unwrap();
    let j = json_of(
        headroom()
            .args([
                "simulate-alloc",
                "--gpu",
                "h200",
                "--context",
                "682M",
                "--format",
                "json",
            ])
            .arg(&snap),
    );
    assert_eq!(j["peak_allocated_bytes"], measured["allocated_peak"], "{j}");
    assert_eq!(j["peak_reserved_bytes"], measured["reserved_peak"], "{j}");
}

/// Real PyG training runs on an H200 (torch 2.11, benches/gpu/replay_steps.py
/// with HEADROOM_TRACE: every step of the job and its evaluation pass, in the
/// allocator's own history) replayed by `simulate-alloc`: the reserve and
/// allocated peaks are PyTorch's to the byte. So where a plan's reserve is
/// wrong, the simulated steps are, not the allocator (docs/accuracy.md,
/// "The allocator's reserve over orders of the same batches").
#[test]
fn simulate_alloc_replays_real_pyg_runs_to_their_measured_peaks() {
    let dir = fixture("alloc/pyg-steps");
    let measured = std::fs::read_to_string(dir.join("measured.jsonl")).unwrap();
    let mut replayed = 0;
    for line in measured.lines() {
        let row: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = row["id"].as_str().unwrap();
        let last = if row["evaluate"].is_object() {
            "evaluate"
        } else {
            "train"
        };
        let j = json_of(
            headroom()
                .args(["simulate-alloc", "--gpu", "h200", "--format", "json"])
                .arg(dir.join(format!("{id}.pickle"))),
        );
        assert_eq!(
            j["peak_reserved_bytes"], row[last]["reserved_peak"],
            "{id}: {j}"
        );
        assert_eq!(
            j["peak_allocated_bytes"], row[last]["allocated_peak"],
            "{id}: {j}"
        );
        replayed += 1;
    }
    assert_eq!(replayed, 6);
}
