//! Real runs' training batches, in their real order, through `plan`'s
//! simulated GPU step: the simulated allocated and reserved peaks beside the
//! measured ones, with plan's batch-size model and its orders taken out. It
//! judges the step's tensors (their sizes and order) alone.
//!
//!     cargo run --release --example step_replay -- STEPS.json ROWS.jsonl
//!
//! STEPS.json is `benches/gpu/replay_steps.py export`'s output (each job's
//! spec and its real batches' nodes and edges); ROWS.jsonl the rows that
//! `replay_steps.py run` measured on a GPU for those jobs. Each batch is the
//! step at the run's mean batch scaled by the batch's (nodes + edges) over
//! the mean's, as plan's simulation scales its batches.

use headroom::alloc::{AllocConf, DeviceMemory, run_trace, training_trace_with};
use headroom::estimate::{SampleStats, step_shape};
use headroom::spec::{Job, from_text};
use serde_json::Value;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [steps, rows] = args.as_slice() else {
        return Err("usage: step_replay STEPS.json ROWS.jsonl".into());
    };
    let jobs: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(steps)?)?;
    let mut measured = std::collections::HashMap::new();
    for line in std::fs::read_to_string(rows)?.lines() {
        let r: Value = serde_json::from_str(line)?;
        if let (Some(id), Some(t)) = (r["id"].as_str(), r.get("train")) {
            measured.insert(id.to_string(), t.clone());
        }
    }
    println!(
        "| job | steps | allocated: measured | simulated | reserved: measured | simulated | error |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for j in &jobs {
        let id = j["id"].as_str().unwrap_or("?");
        let Some(m) = measured.get(id) else { continue };
        let spec = from_text(&serde_json::to_string(&j["job"])?, id)?.spec;
        let job = Job::from_spec(&spec)?;
        let sizes: Vec<(f64, f64)> = j["train_sizes"]
            .as_array()
            .ok_or("no train_sizes")?
            .iter()
            .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
            .collect();
        let n = sizes.len().max(1) as f64;
        let (mn, me) = sizes
            .iter()
            .fold((0.0, 0.0), |a, b| (a.0 + b.0 / n, a.1 + b.1 / n));
        let stats = SampleStats {
            mean_nodes: mn,
            mean_edges: me,
            sd_nodes: 0.0,
            sd_edges: 0.0,
            tail_nodes: mn,
            tail_edges: me,
            tail_z: 0.0,
        };
        let shape = step_shape(&job, &stats, job.settings.batch_size);
        let factors = sizes.iter().map(|&(a, b)| (a + b) / (mn + me));
        let out = run_trace(
            training_trace_with(&shape, factors),
            &AllocConf::default(),
            &DeviceMemory::new(140 << 30, 0),
        );
        let gib = |b: f64| b / (1u64 << 30) as f64;
        let (ma, mr) = (
            m["allocated_peak"].as_f64().unwrap_or(0.0),
            m["reserved_peak"].as_f64().unwrap_or(0.0),
        );
        let (sa, sr) = (
            out.peak_allocated_bytes as f64,
            out.peak_reserved_bytes as f64,
        );
        println!(
            "| {id} | {} | {:.2} GiB | {:.2} GiB | {:.2} GiB | {:.2} GiB | {:+.1} % |",
            sizes.len(),
            gib(ma),
            gib(sa),
            gib(mr),
            gib(sr),
            100.0 * (sr / mr.max(1.0) - 1.0)
        );
    }
    Ok(())
}
