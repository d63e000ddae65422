//! A calibration worker: what headroom runs when it re-executes itself as a
//! DataLoader worker (`headroom __calibrate-worker`, hidden). It maps the
//! graph and data regions its parent created, then for each task the parent
//! writes on stdin (`slot seq start count`) samples the seeds
//! `train[start..start+count]`, gathers x and y, writes the batch into the
//! slot and answers on stdout with the batch's size and its own USS before,
//! at the sampler's peak and after the gather. It exits at end of input, on
//! any error, and with its parent (PR_SET_PDEATHSIG).

use std::io::{BufRead, Write};
use std::process::ExitCode;

use super::graph::CscView;
use super::layout::{Layout, SlotLayout};
use super::rng::Rng;
use super::sampler::{gather, sample_observed};
use super::shm::Region;
use crate::collect::procfs::ProcReader;
use crate::error::{Error, Result};

/// Arguments the parent gives a worker.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Descriptor of the graph region.
    #[arg(long)]
    pub graph_fd: i32,
    /// Descriptor of the data region.
    #[arg(long)]
    pub data_fd: i32,
    /// Descriptors of the batch slots.
    #[arg(long, value_delimiter = ',')]
    pub slots: Vec<i32>,
    /// Nodes.
    #[arg(long)]
    pub nodes: usize,
    /// Edges.
    #[arg(long)]
    pub edges: usize,
    /// Features per node.
    #[arg(long)]
    pub features: usize,
    /// Train split nodes.
    #[arg(long)]
    pub train: usize,
    /// Neighbors per hop.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true)]
    pub fanout: Vec<i64>,
    /// Seed of the sampling.
    #[arg(long)]
    pub seed: u64,
    /// The parent's pid: the worker stops if it is no longer its parent.
    #[arg(long)]
    pub parent: u32,
}

/// One line of a worker's answer: what it built and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// Slot written.
    pub slot: usize,
    /// Sampled nodes.
    pub nodes: u64,
    /// Sampled edges.
    pub edges: u64,
    /// Bytes of the slot.
    pub bytes: u64,
    /// Worker USS before the batch.
    pub uss_before: u64,
    /// Worker USS at the sampler's peak (node map and index arrays alive).
    pub uss_sampled: u64,
    /// Worker USS with the gathered batch built, before it is sent.
    pub uss_built: u64,
}

impl Done {
    /// The line a worker writes.
    pub fn line(&self) -> String {
        format!(
            "done {} {} {} {} {} {} {}",
            self.slot,
            self.nodes,
            self.edges,
            self.bytes,
            self.uss_before,
            self.uss_sampled,
            self.uss_built
        )
    }

    /// Parses a worker's line; `None` for anything else.
    pub fn parse(line: &str) -> Option<Done> {
        let mut it = line
            .strip_prefix("done ")?
            .split(' ')
            .map(|t| t.parse::<u64>().ok());
        let mut next = || it.next().flatten();
        Some(Done {
            slot: next()? as usize,
            nodes: next()?,
            edges: next()?,
            bytes: next()?,
            uss_before: next()?,
            uss_sampled: next()?,
            uss_built: next()?,
        })
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Internal(format!("calibration worker: {what}: {e}"))
}

/// Runs a worker until its input ends.
pub fn run(args: &WorkerArgs) -> Result<ExitCode> {
    // SAFETY: prctl/getppid have no memory effects.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        if libc::getppid() as u32 != args.parent {
            return Ok(ExitCode::from(1));
        }
    }
    super::fix_malloc_threshold();
    for &fd in args.slots.iter().chain([&args.graph_fd, &args.data_fd]) {
        // SAFETY: F_GETFD only asks whether the descriptor is open.
        if fd < 3 || unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
            return Err(Error::bad(format!(
                "__calibrate-worker: descriptor {fd} is not open (this subcommand is run by headroom calibrate)"
            )));
        }
    }
    let l = Layout {
        nodes: args.nodes,
        edges: args.edges,
        features: args.features,
        train: args.train,
    };
    // SAFETY: the parent passed descriptors it created for this worker alone to adopt.
    let (mut graph, mut data) =
        unsafe { (Region::adopt(args.graph_fd), Region::adopt(args.data_fd)) };
    graph.map(l.graph_len()).map_err(|e| internal("graph", e))?;
    data.map(l.data_len()).map_err(|e| internal("data", e))?;
    // SAFETY: as above.
    let mut slots: Vec<Region> = args
        .slots
        .iter()
        .map(|&fd| unsafe { Region::adopt(fd) })
        .collect();
    let view = CscView {
        colptr: graph.slice::<i64>(0, l.nodes + 1),
        row: graph.slice::<i64>(l.row_at(), l.edges),
    };
    let x = data.slice::<f32>(0, l.nodes * l.features);
    let labels = data.slice::<i64>(l.labels_at(), l.nodes);
    let train = data.slice::<i64>(l.train_at(), l.train);
    let proc = ProcReader::new();
    let me = std::process::id();
    let uss = || proc.smaps(me).and_then(|s| s.uss()).unwrap_or(0);
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")
        .and_then(|_| out.flush())
        .map_err(|e| internal("stdout", e))?;
    let mut feats = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| internal("stdin", e))?;
        let t: Vec<usize> = line.split(' ').filter_map(|t| t.parse().ok()).collect();
        let [slot, seq, start, count] = t[..] else {
            return Err(internal("task", &line));
        };
        let seeds = train
            .get(start..start + count)
            .ok_or_else(|| internal("seed range", &line))?;
        let slot_region = slots.get_mut(slot).ok_or_else(|| internal("slot", &line))?;
        let uss_before = uss();
        let mut uss_sampled = 0;
        let mut rng = Rng::new(args.seed ^ (seq as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let b = sample_observed(view, seeds, &args.fanout, &mut rng, &mut |_| {
            uss_sampled = uss()
        });
        gather(x, l.features, &b.n_id, &mut feats);
        let y: Vec<i64> = b.n_id.iter().map(|&v| labels[v as usize]).collect();
        let uss_built = uss();
        let s = SlotLayout {
            nodes: b.n_id.len(),
            edges: b.row.len(),
            seeds: count,
            features: l.features,
        };
        slot_region
            .resize(s.len())
            .map_err(|e| internal("slot", e))?;
        slot_region.slice_mut::<i64>(0, 3).copy_from_slice(&[
            s.nodes as i64,
            s.edges as i64,
            count as i64,
        ]);
        slot_region
            .slice_mut::<i64>(s.n_id(), s.nodes)
            .copy_from_slice(&b.n_id);
        slot_region
            .slice_mut::<i64>(s.input(), count)
            .copy_from_slice(seeds);
        slot_region
            .slice_mut::<i64>(s.y(), s.nodes)
            .copy_from_slice(&y);
        slot_region
            .slice_mut::<i64>(s.row(), s.edges)
            .copy_from_slice(&b.row);
        slot_region
            .slice_mut::<i64>(s.col(), s.edges)
            .copy_from_slice(&b.col);
        slot_region
            .slice_mut::<i64>(s.e_id(), s.edges)
            .copy_from_slice(&b.e_id);
        slot_region
            .slice_mut::<f32>(s.x(), feats.len())
            .copy_from_slice(&feats);
        slot_region.unmap();
        drop(b);
        drop(y);
        feats = Vec::new();
        let done = Done {
            slot,
            nodes: s.nodes as u64,
            edges: s.edges as u64,
            bytes: s.len() as u64,
            uss_before,
            uss_sampled,
            uss_built,
        };
        writeln!(out, "{}", done.line())
            .and_then(|_| out.flush())
            .map_err(|e| internal("stdout", e))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_lines_round_trip_and_junk_is_refused() {
        let d = Done {
            slot: 3,
            nodes: 10,
            edges: 20,
            bytes: 300,
            uss_before: 1,
            uss_sampled: 2,
            uss_built: 4,
        };
        assert_eq!(d.line(), "done 3 10 20 300 1 2 4");
        assert_eq!(Done::parse(&d.line()), Some(d));
        assert_eq!(Done::parse("done 3 10"), None);
        assert_eq!(Done::parse("ready"), None);
    }
}
