//! The train phase of the calibration workload: W re-executed workers fed
//! seed ranges over pipes, a ring of prefetch·W + 1 shared-memory batch
//! slots (prefetch·W tasks outstanding plus the batch in use, as a
//! DataLoader keeps them), and the parent's SAGE step on each batch, probed
//! at the step's largest moments with the queued batches counted.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;

use super::layout::{Layout, SlotLayout};
use super::measure::Probe;
use super::rng::Rng;
use super::shm::{Region, allocated_bytes};
use super::train::{BatchView, Sage};
use super::worker::Done;
use super::workload::{Config, Measured, Progress, internal};
use crate::error::Result;

/// The workers, their pipes and a channel of their answers.
struct Pool {
    children: Vec<Child>,
    stdins: Vec<ChildStdin>,
    answers: mpsc::Receiver<(usize, String)>,
}

impl Pool {
    fn spawn(
        cfg: &Config,
        l: &Layout,
        graph: &Region,
        data: &Region,
        slots: &[Region],
    ) -> Result<Pool> {
        let exe = std::env::current_exe().map_err(|e| internal("current_exe", e))?;
        let fds: Vec<String> = slots.iter().map(|s| s.raw_fd().to_string()).collect();
        let fanout: Vec<String> = cfg.fanout.iter().map(i64::to_string).collect();
        let (tx, answers) = mpsc::channel();
        let mut pool = Pool {
            children: Vec::new(),
            stdins: Vec::new(),
            answers,
        };
        for w in 0..cfg.workers as usize {
            let mut child = Command::new(&exe)
                .arg("__calibrate-worker")
                .args([
                    "--graph-fd",
                    &graph.raw_fd().to_string(),
                    "--data-fd",
                    &data.raw_fd().to_string(),
                ])
                .args(["--slots", &fds.join(","), "--fanout", &fanout.join(",")])
                .args([
                    "--nodes",
                    &l.nodes.to_string(),
                    "--edges",
                    &l.edges.to_string(),
                ])
                .args([
                    "--features",
                    &l.features.to_string(),
                    "--train",
                    &l.train.to_string(),
                ])
                .args([
                    "--seed",
                    &cfg.seed.to_string(),
                    "--parent",
                    &std::process::id().to_string(),
                ])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| internal("spawning a worker", e))?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(internal("worker pipes", "missing"));
            };
            pool.children.push(child);
            pool.stdins.push(stdin);
            let tx = tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                    if tx.send((w, line)).is_err() {
                        break;
                    }
                }
                let _ = tx.send((w, "exit".into()));
            });
        }
        for _ in 0..cfg.workers {
            match pool.answers.recv() {
                Ok((_, l)) if l == "ready" => {}
                other => return Err(internal("worker start", format!("{other:?}"))),
            }
        }
        Ok(pool)
    }

    fn send(&mut self, w: usize, task: &str) -> Result<()> {
        writeln!(self.stdins[w], "{task}").map_err(|e| internal("task", e))
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Closing stdin ends each worker's loop; reap them all.
        self.stdins.clear();
        for c in &mut self.children {
            let _ = c.wait();
        }
    }
}

/// Runs the train phase: spawns the workers, trains on every batch, and
/// records the workers' idle USS at the end.
pub fn train(
    cfg: &Config,
    l: &Layout,
    graph: &Region,
    data: &Region,
    probe: &mut Probe,
    m: &mut Measured,
    progress: Progress,
) -> Result<()> {
    let n_slots = (cfg.prefetch * cfg.workers) as usize + 1;
    let mut slots = Vec::with_capacity(n_slots);
    for _ in 0..n_slots {
        slots.push(Region::create("headroom-calibrate-batch", 0).map_err(|e| internal("slot", e))?);
    }
    let mut pool = Pool::spawn(cfg, l, graph, data, &slots)?;
    let mut free: Vec<usize> = (0..n_slots).rev().collect();
    let batches = l.train.div_ceil(cfg.batch_size);
    let mut next = 0usize;
    let dispatch = |pool: &mut Pool, free: &mut Vec<usize>, next: &mut usize| -> Result<()> {
        if *next >= batches {
            return Ok(());
        }
        if let Some(slot) = free.pop() {
            let start = *next * cfg.batch_size;
            let count = cfg.batch_size.min(l.train - start);
            pool.send(
                *next % cfg.workers as usize,
                &format!("{slot} {next} {start} {count}"),
            )?;
            *next += 1;
        }
        Ok(())
    };
    for _ in 0..cfg.prefetch * cfg.workers {
        dispatch(&mut pool, &mut free, &mut next)?;
    }
    let mut model = Sage::new(cfg.features, cfg.hidden, cfg.classes, cfg.seed);
    let mut rng = Rng::new(cfg.seed ^ 0xD80);
    for done_count in 0..batches {
        let (_, line) = pool.answers.recv().map_err(|e| internal("workers", e))?;
        let done = Done::parse(&line).ok_or_else(|| internal("worker answered", &line))?;
        // As the DataLoader does, the next task goes out when a batch arrives.
        dispatch(&mut pool, &mut free, &mut next)?;
        // Batches queued in the ring (written by workers, mapped by no one)
        // are read at the probe from the other slots' files.
        let others: Vec<i32> = slots
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != done.slot)
            .map(|(_, s)| s.raw_fd())
            .collect();
        let slot = slots
            .get_mut(done.slot)
            .ok_or_else(|| internal("slot", done.slot))?;
        slot.map(done.bytes as usize)
            .map_err(|e| internal("slot map", e))?;
        let hdr = slot.slice::<i64>(0, 3).to_vec();
        let s = SlotLayout {
            nodes: hdr[0] as usize,
            edges: hdr[1] as usize,
            seeds: hdr[2] as usize,
            features: cfg.features,
        };
        let view = BatchView {
            x: slot.slice::<f32>(s.x(), s.nodes * s.features),
            y: slot.slice::<i64>(s.y(), s.nodes),
            row: slot.slice::<i64>(s.row(), s.edges),
            col: slot.slice::<i64>(s.col(), s.edges),
            seeds: s.seeds,
        };
        model.step(&view, &mut rng, &mut || {
            let queued = others.iter().map(|&fd| allocated_bytes(fd)).sum();
            probe.probe("train", queued);
        });
        slot.resize(0).map_err(|e| internal("slot free", e))?;
        free.push(done.slot);
        m.batches.push(done);
        progress(
            "train",
            0.5 + 0.5 * (done_count + 1) as f64 / batches as f64,
        );
    }
    // Every worker idle: its USS is what it costs without a batch.
    let idle = probe.probe("idle", 0);
    m.idle_worker_uss = idle.children_uss.iter().map(|&(_, u)| u).collect();
    probe.peaks.remove("idle");
    drop(pool);
    Ok(())
}
