//! Assembling the phases of a run from the pieces: what is alive at the worst
//! moment of loading, of building the loaders and of a training epoch (the
//! evaluate phase is in `evaluate`), per component, on the host and the GPU.

use super::SampleStats;
use super::batches::{BatchModel, Prepared};
use super::builder::{Builder, add_csc, base_dataset};
use super::dataset::dataset_bytes;
use super::evaluate::{EvalCtx, evaluate_phase};
use super::gpu::{GpuBreakdown, reserve};
use super::host::{Queue, in_flight};
use super::host_heap::{HeapKept, cpu_heap, workers_touched};
use super::layerwise;
use super::lingering;
use super::page_tables;
use super::phase::{Component, Estimate, Phase};
use super::{Coefficients, Settings};
use crate::spec::{Accounting, Device, EvalLoaders, Job};

/// The component of the pages only deleted loaders' idle workers still map.
pub(super) const PINNED: &str = "old heap pages kept by deleted loaders' workers (copy-on-write)";

/// Estimates `job` at `settings`, every component named.
pub fn estimate(job: &Job, settings: &Settings, coeffs: &Coefficients) -> Estimate {
    let prep = Prepared::new(job);
    let batches = BatchModel::new(job, settings, &prep);
    estimate_with(job, settings, coeffs, &batches, true)
}

/// Estimates `job` at `settings` from its precomputed batch model; without
/// `detail` only phase totals are filled in (the planner's fast path).
pub fn estimate_with(
    job: &Job,
    settings: &Settings,
    coeffs: &Coefficients,
    bm: &BatchModel,
    detail: bool,
) -> Estimate {
    let (train, eval) = (&bm.train, &bm.eval);
    let w = settings.num_workers;
    let we = job.eval_num_workers.unwrap_or(w);
    let ds = dataset_bytes(
        job,
        w.max(we),
        settings.is_sorted,
        coeffs.sort_bytes_per_element,
    );
    let cuda = job.device == Device::Cuda;
    let rss_sum = job.accounting == Accounting::RssSum;
    // RSS also counts the library pages a process maps (torch's shared
    // objects): invisible to the OOM killer's anon+shmem, summed by RSS.
    let runtime_main = coeffs.runtime_bytes as f64
        + if rss_sum {
            coeffs.runtime_file_bytes as f64
        } else {
            0.0
        };
    let runtime = runtime_main
        + if cuda {
            coeffs.cuda_host_bytes as f64
        } else {
            0.0
        };
    let resident = ds.resident() as f64;
    let csc = ds.csc as f64;
    let eval_seeds = job.eval_batch_size.unwrap_or(settings.batch_size);
    let gpu = bm.gpu;
    let (train_gpu, eval_gpu) = gpu_components(job, coeffs, &gpu);
    // Under RSS-sum accounting a forked worker's RSS counts every anonymous
    // page of the parent (fork copies their page-table entries: the whole
    // dataset), its loader's CSC pages in /dev/shm once sampling has touched
    // them, and the library pages it maps itself.
    // A sorted edge_index that the loaders moved into /dev/shm is not
    // anonymous any more: fork copies no page-table entries for it, and a
    // worker maps only the places of `row` (edge_index[0], the CSC's row by
    // view) its draws read, like the rest of the CSC (rm1m-given-sorted-w2).
    // The legacy NeighborSampler's CSCs never reach /dev/shm: they are the
    // main process's private pages, which a fork maps whole (below).
    let legacy = job.loader_kind == crate::spec::LoaderKind::NeighborSampler;
    let (fork_mapped, touchable) = if ds.edge_index_shared {
        (resident - ds.edge_index as f64, csc + (ds.edges * 8) as f64)
    } else if legacy {
        (resident, 0.0)
    } else {
        (resident, csc)
    };
    let base_apparent = coeffs.runtime_bytes as f64 + fork_mapped + coeffs.worker_file_bytes as f64;
    // Only RSS-sum accounting sees these (the planner's hot path skips them).
    let (apparent, apparent_eval) = if rss_sum {
        let splits = job.dataset.splits();
        let epochs = if settings.persistent_workers {
            job.epochs as f64
        } else {
            1.0
        };
        let train_batches = splits.train.div_ceil(settings.batch_size.max(1));
        let eval_batches = ((splits.valid + splits.test) / 2).div_ceil(eval_seeds.max(1));
        let touched = |batches, workers: u32, repeats, stats: &SampleStats| {
            workers_touched(&ds, batches, workers as u64, repeats, stats.mean_edges)
        };
        (
            base_apparent + touchable * touched(train_batches, w, epochs, train),
            base_apparent + touchable * touched(eval_batches, we, 1.0, eval),
        )
    } else {
        (0.0, 0.0)
    };
    let private = coeffs.worker_private_bytes as f64;
    let idle_private = coeffs.idle_worker_private_bytes as f64;
    let layerwise = settings.eval_loaders == EvalLoaders::Layerwise;
    let eval_splits = match settings.eval_loaders {
        EvalLoaders::None => 0.0,
        EvalLoaders::Layerwise => 1.0,
        _ => 2.0,
    };
    // Loaders that each hold their own CSC: one when they share a sampler.
    // The layer-wise subgraph loader (fanout [-1]) never shares one: it
    // builds its CSC at start-up from its shallow copy of the data.
    let resident_loaders = if settings.shared_sampler {
        1.0
    } else {
        1.0 + if settings.eval_loaders == EvalLoaders::Resident {
            eval_splits
        } else {
            0.0
        }
    } + if layerwise { 1.0 } else { 0.0 };
    // Loaders without workers keep their CSC in the parent's private memory,
    // so workers forked by the others map it too (RSS sum); the legacy
    // NeighborSampler keeps every loader's there (DGraphFin's end-to-end
    // run: 12 training workers of 1.59 GiB RSS each, the main process's
    // anonymous memory and its library pages).
    let separate = !settings.shared_sampler;
    let train_fork_private_csc = if legacy {
        resident_loaders * csc
    } else if separate && w > 0 && we == 0 && settings.eval_loaders == EvalLoaders::Resident {
        2.0 * csc
    } else {
        0.0
    };
    let eval_fork_private_csc = if legacy {
        resident_loaders * csc
    } else if separate && w == 0 && we > 0 {
        csc
    } else {
        0.0
    };
    let node_ids = if layerwise {
        layerwise::subgraph_node_ids(job)
    } else {
        0.0
    };
    let splits = job.dataset.splits();
    let train_queue = Queue {
        workers: w,
        prefetch: settings.prefetch_factor,
        batches: splits.train.div_ceil(settings.batch_size.max(1)),
    };
    // One evaluation loader runs at a time: the larger split's, or the
    // subgraph loader's pass over every node.
    let eval_nodes = if layerwise {
        job.dataset.nodes
    } else {
        splits.valid.max(splits.test)
    };
    let eval_queue = Queue {
        workers: we,
        prefetch: settings.prefetch_factor,
        batches: eval_nodes.div_ceil(eval_seeds.max(1)),
    };
    let train_flight = in_flight(
        job,
        train,
        settings.batch_size,
        train_queue,
        settings.pin_memory,
        coeffs.sampler_bytes_per_node,
    );
    let eval_flight = in_flight(
        job,
        eval,
        eval_seeds,
        eval_queue,
        settings.pin_memory,
        coeffs.sampler_bytes_per_node,
    );
    // Training on the CPU moves nothing: `batch.to("cpu")` is the batch the
    // loader already holds (counted in flight), so only the model's own
    // tensors are added, not a second copy of the batch.
    let on_host = |v: &[Component]| -> f64 {
        v.iter()
            .filter(|c| c.name != "batch")
            .map(|c| c.bytes as f64)
            .sum()
    };
    let model_host = if cuda { 0.0 } else { on_host(&train_gpu) };
    // CPU training allocates every step's tensors from glibc's heap; what it
    // keeps beyond the live bytes (see `cpu_heap`).
    let heap = if cuda {
        HeapKept::default()
    } else {
        cpu_heap(
            job,
            coeffs,
            train,
            model_host + train_flight.private,
            settings,
        )
    };
    // The legacy NeighborSampler's workers fork its SparseTensor: nothing
    // moves to /dev/shm (estimate/dataset.rs).
    let csc_shm = w > 0 && !legacy;
    // The main process's anonymous memory when workers fork (their page
    // tables copy its entries: page_tables.rs): the runtime, the dataset,
    // CSCs it holds itself, and what CPU training keeps.
    let csc_private = if csc_shm { 0.0 } else { resident_loaders * csc };
    // Layer-wise inference's node-wide tables at the worst layer; under
    // RSS sum non-persistent eval workers, forked at each layer, map the
    // previous layer's output too. Under a cgroup (the only accounting that
    // counts page tables) `forked` is 0: what the main process holds.
    // An evaluation ran before a later epoch (PyG's examples evaluate every one).
    let passes_before = layerwise && job.epochs > job.eval_every;
    let layerwise_tables = if layerwise {
        let forked = if rss_sum && !settings.persistent_workers {
            we as f64
        } else {
            0.0
        };
        layerwise::layerwise_buffers(job, forked, eval_seeds, passes_before)
    } else {
        0.0
    };
    // The heap an earlier pass's rows left: training epochs after an
    // evaluation run beside it, and their workers, forked anew, map it.
    let rows_kept = if passes_before {
        layerwise::rows_kept_after(job, eval_seeds)
    } else {
        0.0
    };
    let main_at_fork = coeffs.runtime_bytes as f64
        + fork_mapped
        + csc_private
        + node_ids
        + model_host
        + heap.train;
    let model_host_eval = if cuda { 0.0 } else { on_host(&eval_gpu) };
    let model_host_kept = if cuda {
        0.0
    } else {
        eval_gpu
            .iter()
            .filter(|c| c.name != "batch" && c.name != "activations")
            .map(|c| c.bytes as f64)
            .sum()
    };
    let mut phases = Vec::with_capacity(4);
    let mut b = Builder::new(job.ranks_per_node, detail);
    b.add("runtime (python, torch, PyG)", runtime_main);
    base_dataset(&mut b, &ds, false);
    b.add("load transient", ds.load_extra as f64);
    phases.push(b.finish(Phase::Load, ds.load_extra_cause, &[]));

    let csc_name = if csc_shm {
        "CSC copies in /dev/shm"
    } else {
        "CSC copies (one per loader)"
    };
    let mut b = Builder::new(job.ranks_per_node, detail);
    b.add("runtime (python, torch, PyG)", runtime);
    base_dataset(&mut b, &ds, true);
    add_csc(&mut b, csc_name, csc_shm, resident_loaders * csc);
    b.add("subgraph loader's node ids (arange)", node_ids);
    b.add(
        "CSC build transient (sort, share)",
        ds.csc_build_extra as f64,
    );
    // What glibc kept of the builds (see `build_heap_retained`): held by the
    // time the last resident loader is built, and ever after.
    let build_kept = coeffs.build_heap_retained * ds.csc_build_extra as f64;
    if resident_loaders > 1.0 {
        b.add("heap kept from earlier CSC builds (glibc)", build_kept);
    }
    let moment = if resident_loaders > 1.0 {
        "building the last of the resident loaders"
    } else {
        "building the train loader"
    };
    phases.push(b.finish(Phase::BuildLoaders, moment, &[]));

    // Eval workers of resident, persistent loaders start at the first
    // evaluation and then stay alive through every later training epoch.
    // So do the layer-wise subgraph loader's (PyG's examples evaluate every epoch).
    let idle_eval_workers = if matches!(
        settings.eval_loaders,
        EvalLoaders::Resident | EvalLoaders::Layerwise
    ) && settings.persistent_workers
        && job.epochs > 1
    {
        eval_splits * we as f64
    } else {
        0.0
    };
    // The workers of on-demand evaluation loaders deleted in earlier epochs.
    let per_loader = lingering::workers_per_loader(settings, we);
    let deleted_before =
        lingering::loaders_with_workers(job.epochs.saturating_sub(1), job.eval_every);
    let lingering_workers = deleted_before * per_loader;
    // Under a cgroup: the old versions of the pages the main process has
    // rewritten since each lingering loader's workers forked (see
    // `lingering::pinned_versions`); an RSS sum counts them in the
    // workers' apparent copies already.
    let pinned = if rss_sum || per_loader == 0.0 {
        0.0
    } else {
        lingering::pinned_versions(deleted_before, model_host_kept + heap.at_eval_fork)
    };
    let mut b = Builder::new(job.ranks_per_node, detail);
    b.add("runtime (python, torch, PyG)", runtime);
    base_dataset(&mut b, &ds, true);
    add_csc(&mut b, csc_name, csc_shm, resident_loaders * csc);
    b.add("subgraph loader's node ids (arange)", node_ids);
    b.in_flight(&train_flight, false);
    b.add("train workers (private pages)", w as f64 * private);
    b.add_kernel(
        "workers' page tables (kernel memory)",
        page_tables::forked_page_tables(
            w as f64 + idle_eval_workers + lingering_workers,
            main_at_fork,
            rss_sum,
        ),
    );
    b.add(
        "idle persistent eval workers",
        idle_eval_workers * idle_private,
    );
    b.add(
        "deleted eval loaders' persistent workers (idle)",
        lingering_workers * idle_private,
    );
    b.add(PINNED, pinned);
    if rss_sum {
        let forked_after_pass = if settings.persistent_workers {
            0.0
        } else {
            rows_kept
        };
        b.add(
            "workers' apparent copies (RSS sum)",
            w as f64 * (apparent + train_fork_private_csc + forked_after_pass)
                + idle_eval_workers * (apparent + heap.at_eval_fork + eval_fork_private_csc),
        );
        // Forked for an evaluation, after training grew the heap: each maps
        // what an evaluation worker does.
        b.add(
            "deleted eval loaders' workers' apparent copies (RSS sum)",
            lingering_workers * (apparent_eval + heap.at_eval_fork + eval_fork_private_csc),
        );
    }
    b.add("model on the host (CPU training)", model_host);
    b.add("heap kept by glibc (CPU training)", heap.train);
    // Training's own heap reuses that region first.
    b.add(
        "heap kept from layer-wise inference (glibc)",
        (rows_kept - heap.train).max(0.0),
    );
    b.add("heap kept from the CSC builds (glibc)", build_kept);
    add_csc(
        &mut b,
        "deleted eval loaders' CSCs (not yet collected)",
        csc_shm,
        lingering::loaders_with_cscs(settings, job.epochs.saturating_sub(1), job.eval_every) * csc,
    );
    phases.push(b.finish(
        Phase::Train,
        "the largest training batch in flight",
        &train_gpu,
    ));

    if settings.eval_loaders != EvalLoaders::None || job.evaluate_train {
        phases.push(evaluate_phase(
            job,
            settings,
            &ds,
            EvalCtx {
                runtime,
                csc_name,
                eval_splits,
                we,
                private,
                idle_private,
                // Those of earlier evaluations, and this one's validation
                // loader's while the test loader is built and runs.
                lingering_workers: (deleted_before + 1.0) * per_loader,
                pinned,
                apparent: apparent_eval + eval_fork_private_csc + heap.at_eval_fork,
                // Layer-wise inference's later layers fork while the main
                // process holds the previous layer's tables.
                page_tables: page_tables::forked_page_tables(
                    1.0,
                    main_at_fork + layerwise_tables,
                    rss_sum,
                ),
                model_host_eval,
                model_host_kept,
                // What the main process's heap kept from training (see cpu_heap).
                heap_kept: if rss_sum { heap.after_rss } else { heap.after },
                build_kept,
                heap_at_fork: heap.at_eval_fork,
                // Layer-wise inference's node-wide tables; non-persistent
                // eval workers forked at each layer map the previous one.
                layerwise: if layerwise {
                    layerwise_tables + node_ids
                } else {
                    0.0
                },
                rss_sum,
                detail,
            },
            &eval_flight,
            &train_flight,
            &eval_gpu,
        ));
    }
    let mut est = Estimate {
        phases,
        train_batch: *train,
        eval_batch: *eval,
        dataset: ds,
        gpu,
        train_seeds: settings.batch_size,
    };
    if cuda {
        est.carry_training_cache();
    }
    est
}

/// (training, evaluation) GPU components, per device.
fn gpu_components(
    job: &Job,
    coeffs: &Coefficients,
    g: &GpuBreakdown,
) -> (Vec<Component>, Vec<Component>) {
    let context = super::gpu::cuda_context_bytes(job, coeffs);
    let cuda = job.device == Device::Cuda;
    let mut train = Vec::with_capacity(8);
    let mut eval = Vec::with_capacity(8);
    let push = |v: &mut Vec<Component>, name, bytes: u64| {
        if bytes > 0 {
            v.push(Component { name, bytes });
        }
    };
    if cuda {
        push(&mut train, "CUDA context", context);
        push(&mut eval, "CUDA context", context);
    }
    for v in [&mut train, &mut eval] {
        push(v, "parameters", g.params);
        push(v, "gradients", g.grads);
        push(v, "optimizer state", g.optimizer);
    }
    push(&mut train, "batch", g.batch);
    push(&mut train, "activations", g.activations);
    push(&mut eval, "batch", g.eval_batch);
    push(&mut eval, "activations", g.eval_activations);
    if cuda {
        push(
            &mut train,
            "allocator reserve",
            reserve(coeffs, g.batch + g.activations),
        );
        push(
            &mut eval,
            "allocator reserve",
            reserve(coeffs, g.eval_batch + g.eval_activations),
        );
    }
    (train, eval)
}
