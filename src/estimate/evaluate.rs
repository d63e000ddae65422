//! The evaluate phase: what is alive while the validation and test loaders
//! are built (on demand) or used (resident), with the workers running them,
//! the persistent ones idling, and how the accounting mode counts them.

use super::Settings;
use super::builder::{Builder, add_csc, base_dataset};
use super::dataset::DatasetBytes;
use super::host::InFlight;
use super::phase::{Component, Phase, PhaseEstimate};
use crate::spec::{EvalLoaders, Job};

/// What the evaluate phase needs from the rest of the estimate.
pub(super) struct EvalCtx {
    pub(super) runtime: f64,
    pub(super) csc_name: &'static str,
    pub(super) eval_splits: f64,
    pub(super) we: u32,
    pub(super) private: f64,
    pub(super) idle_private: f64,
    /// Persistent workers of deleted on-demand loaders, alive and idle
    /// (`lingering::workers_per_loader`).
    pub(super) lingering_workers: f64,
    /// The old heap pages only the earlier evaluations' lingering workers
    /// map (cgroup; `lingering::pinned_versions`).
    pub(super) pinned: f64,
    pub(super) apparent: f64,
    /// Each worker's page tables (page_tables.rs; 0 under RSS sum).
    pub(super) page_tables: f64,
    pub(super) model_host_eval: f64,
    /// The model's tensors that outlive a pass (parameters, gradients,
    /// optimizer state): all of it that is alive while a loader is built.
    pub(super) model_host_kept: f64,
    pub(super) heap_kept: f64,
    /// What glibc kept of the CSC builds.
    pub(super) build_kept: f64,
    /// The main process's heap that workers forked after training map (RSS sum).
    pub(super) heap_at_fork: f64,
    /// Layer-wise inference's node-wide tables and the subgraph loader's
    /// node ids (0 for other evaluation loaders).
    pub(super) layerwise: f64,
    pub(super) rss_sum: bool,
    pub(super) detail: bool,
}

/// The evaluate phase: its worst moment for the way evaluation loaders live.
pub(super) fn evaluate_phase(
    job: &Job,
    settings: &Settings,
    ds: &DatasetBytes,
    c: EvalCtx,
    eval_flight: &InFlight,
    train_flight: &InFlight,
    eval_gpu: &[Component],
) -> PhaseEstimate {
    let csc = ds.csc as f64;
    let shm = (settings.num_workers > 0 || c.we > 0)
        && job.loader_kind != crate::spec::LoaderKind::NeighborSampler;
    let (w, we) = (settings.num_workers as f64, c.we as f64);
    // Persistent train workers idle through evaluation.
    let idle_train = if settings.persistent_workers { w } else { 0.0 };
    let phase = |copies: f64, shm: bool| {
        let mut b = Builder::new(job.ranks_per_node, c.detail);
        b.add("runtime (python, torch, PyG)", c.runtime);
        base_dataset(&mut b, ds, true);
        add_csc(&mut b, c.csc_name, shm, copies * csc);
        b
    };
    // Workers running the evaluation and idle ones, as the accounting sees them.
    // `lingering`: deleted on-demand loaders' workers, idle like `idle`.
    let workers = |b: &mut Builder,
                   running: f64,
                   name: &'static str,
                   idle: f64,
                   lingering: f64,
                   model: f64| {
        b.add(name, running * c.private);
        b.add("idle persistent workers", idle * c.idle_private);
        b.add(
            "deleted eval loaders' persistent workers (idle)",
            lingering * c.idle_private,
        );
        if lingering > 0.0 {
            b.add(super::phases::PINNED, c.pinned);
        }
        let idle = idle + lingering;
        b.add_kernel(
            "workers' page tables (kernel memory)",
            (running + idle) * c.page_tables,
        );
        if c.rss_sum {
            // Persistent training workers were forked before training grew
            // the main process's heap: their copies lack it.
            let idle_train_forked_early = idle.min(idle_train);
            b.add(
                "workers' apparent copies (RSS sum)",
                (running + idle) * c.apparent - idle_train_forked_early * c.heap_at_fork,
            );
        }
        b.add("model on the host (CPU training)", model);
        b.add("heap kept from training (glibc, CPU)", c.heap_kept);
        b.add("heap kept from the CSC builds (glibc)", c.build_kept);
    };
    let eval_loader_copies = if settings.shared_sampler { 0.0 } else { 1.0 };
    match settings.eval_loaders {
        EvalLoaders::Resident => {
            // The validation loader's persistent workers live on while test evaluates.
            let idle_eval = if settings.persistent_workers { we } else { 0.0 };
            let mut b = phase(1.0 + eval_loader_copies * c.eval_splits, shm);
            b.in_flight(eval_flight, true);
            workers(
                &mut b,
                we,
                "eval workers (private pages)",
                idle_train + idle_eval,
                0.0,
                c.model_host_eval,
            );
            b.finish(Phase::Evaluate, "evaluating on the test split", eval_gpu)
        }
        EvalLoaders::OnDemand => {
            // `del loader` frees nothing: a NeighborLoader refers to itself
            // through its bound collate_fn, so the previous evaluation
            // loader (and its CSC) lives until the cyclic garbage collector
            // runs, unless the script calls gc.collect() after deleting it.
            // Those of earlier epochs, and this epoch's validation loader
            // while the test loader is built and runs.
            let lingering = if settings.gc_collect {
                0.0
            } else {
                eval_loader_copies
                    + super::lingering::loaders_with_cscs(
                        settings,
                        job.epochs.saturating_sub(1),
                        job.eval_every,
                    )
            };
            let mut run = phase(1.0 + eval_loader_copies + lingering, shm);
            run.in_flight(eval_flight, true);
            workers(
                &mut run,
                we,
                "eval workers (private pages)",
                idle_train,
                c.lingering_workers,
                c.model_host_eval,
            );
            if settings.shared_sampler {
                // Built around the shared sampler, the loader adds no CSC and no sort.
                return run.finish(
                    Phase::Evaluate,
                    "evaluating with an on-demand loader on the shared sampler",
                    eval_gpu,
                );
            }
            // Building it: the train loader's CSC, the deleted one's if not
            // yet collected, the new one and its sort.
            let mut build = phase(2.0 + lingering, shm);
            // A sorted edge_index was moved into /dev/shm by the first loader;
            // later ones find it there and copy nothing.
            let transient = if ds.edge_index_shared {
                0.0
            } else {
                ds.csc_build_extra as f64
            };
            build.add("CSC build transient (sort, share)", transient);
            // Between passes no batch and no activations are alive: what
            // the heap kept of them is `heap_kept` (the probe's C runs: the
            // main process grew by one CSC per build, nothing more).
            workers(
                &mut build,
                0.0,
                "eval workers (private pages)",
                idle_train,
                c.lingering_workers,
                c.model_host_kept,
            );
            let build = build.finish(
                Phase::Evaluate,
                if lingering > 0.0 {
                    "building an evaluation loader while the deleted one awaits garbage collection"
                } else {
                    "building an evaluation loader on demand"
                },
                eval_gpu,
            );
            let run = run.finish(
                Phase::Evaluate,
                "evaluating with the on-demand loader",
                eval_gpu,
            );
            if build.host_bytes >= run.host_bytes {
                build
            } else {
                run
            }
        }
        EvalLoaders::Layerwise => {
            // The train loader's CSC (or the shared sampler's) and the
            // subgraph loader's own, its full-neighbour batch in flight, and
            // the layer's tables.
            let mut b = phase(2.0, shm);
            b.in_flight(eval_flight, true);
            workers(
                &mut b,
                we,
                "eval workers (private pages)",
                idle_train,
                0.0,
                c.model_host_eval,
            );
            b.add(
                "layer-wise inference (x_all, xs, cat; node ids)",
                c.layerwise,
            );
            b.finish(
                Phase::Evaluate,
                "layer-wise inference: concatenating one layer's output over every node",
                eval_gpu,
            )
        }
        EvalLoaders::None => {
            // Only evaluate_train: the train loader iterated once more.
            let mut b = phase(1.0, settings.num_workers > 0);
            b.in_flight(train_flight, false);
            workers(
                &mut b,
                w,
                "train workers (private pages)",
                0.0,
                0.0,
                c.model_host_eval,
            );
            b.finish(Phase::Evaluate, "evaluating on the train split", eval_gpu)
        }
    }
}
