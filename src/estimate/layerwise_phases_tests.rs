//! The assembled phases around a layer-wise pass and the legacy
//! NeighborSampler: what training after a pass runs beside, and what a
//! worker forked from a main process holding private CSCs maps.

use super::layerwise::rows_kept_after;
use super::{Coefficients, Estimate, Phase, estimate};
use crate::spec::{Accounting, Device, EvalLoaders, Job, JobSpec, LoaderKind};

fn job(epochs: u32, eval_every: u32, persistent: bool, accounting: Accounting) -> Job {
    let mut spec = JobSpec::for_dataset("ogbn-arxiv");
    spec.model.layers = 2;
    spec.model.hidden = 256;
    spec.loader.eval_loaders = EvalLoaders::Layerwise;
    spec.loader.num_workers = 2;
    spec.loader.persistent_workers = persistent;
    spec.loader.eval_every = eval_every;
    spec.epochs = epochs;
    spec.budget.accounting = accounting;
    // On the GPU training keeps no heap of its own (heap.train is 0), so
    // the pass's kept rows show whole.
    spec.device = Device::Cuda;
    Job::from_spec(&spec).expect("arxiv spec")
}

fn component(est: &Estimate, phase: Phase, name: &str) -> u64 {
    est.phases
        .iter()
        .find(|p| p.phase == phase)
        .and_then(|p| p.host.iter().find(|c| c.name == name))
        .map_or(0, |c| c.bytes)
}

const KEPT: &str = "heap kept from layer-wise inference (glibc)";
const APPARENT: &str = "workers' apparent copies (RSS sum)";

#[test]
fn training_after_a_pass_runs_beside_the_heap_its_rows_left() {
    let every_epoch = job(3, 1, false, Accounting::Cgroup);
    let s = &every_epoch.settings;
    let est = estimate(&every_epoch, s, &Coefficients::default());
    // arxiv's batch of 1024 rows of 256 floats is 1 MiB a chunk: heap.
    let kept = rows_kept_after(&every_epoch, s.batch_size);
    assert!(kept > 100e6, "{kept}");
    assert_eq!(component(&est, Phase::Train, KEPT), kept as u64);
    // One pass after the last epoch (the corpus's case.py): nothing follows it.
    let at_the_end = job(3, 3, false, Accounting::Cgroup);
    let est = estimate(&at_the_end, &at_the_end.settings, &Coefficients::default());
    assert_eq!(component(&est, Phase::Train, KEPT), 0);
}

#[test]
fn workers_forked_after_a_pass_map_its_rows_and_persistent_ones_do_not() {
    let w = 2.0;
    for persistent in [false, true] {
        let after = job(3, 1, persistent, Accounting::RssSum);
        let end = job(3, 3, persistent, Accounting::RssSum);
        let kept = rows_kept_after(&after, after.settings.batch_size);
        let est = |j: &Job| estimate(j, &j.settings, &Coefficients::default());
        let grew = component(&est(&after), Phase::Train, APPARENT) as f64
            - component(&est(&end), Phase::Train, APPARENT) as f64;
        let expected = if persistent { 0.0 } else { w * kept };
        assert!(
            (grew - expected).abs() < 2.0,
            "{persistent}: {grew} vs {expected}"
        );
    }
}

#[test]
fn a_legacy_sampler_workers_map_the_main_process_private_cscs() {
    let est = |kind: LoaderKind| {
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.loader.kind = kind;
        spec.loader.num_workers = 3;
        spec.loader.eval_loaders = EvalLoaders::None;
        spec.budget.accounting = Accounting::RssSum;
        spec.device = Device::Cpu;
        let j = Job::from_spec(&spec).expect("arxiv spec");
        estimate(&j, &j.settings, &Coefficients::default())
    };
    let legacy = est(LoaderKind::NeighborSampler);
    let loader = est(LoaderKind::NeighborLoader);
    let csc = legacy.dataset.csc as f64;
    let legacy_copies = component(&legacy, Phase::Train, APPARENT) as f64;
    let loader_copies = component(&loader, Phase::Train, APPARENT) as f64;
    // Each of the 3 maps the one loader's CSC whole; a NeighborLoader's
    // worker maps only the share of its /dev/shm CSC its draws touched.
    assert!(legacy_copies - loader_copies > 0.0);
    assert!(legacy_copies - loader_copies <= 3.0 * csc + 2.0);
    let base = legacy_copies - 3.0 * csc;
    assert!(base > 0.0 && base < loader_copies, "{base} {loader_copies}");
}

#[test]
fn a_legacy_sampler_idle_evaluation_worker_maps_what_a_training_worker_maps() {
    // Persistent layer-wise evaluation workers forked at the first pass
    // idle through later epochs; forked from the same main process as the
    // training workers (on the GPU no training heap; one pass at the end,
    // so no kept rows), each maps the same: the runtime, the dataset and
    // every loader's private CSC.
    let copies = |persistent: bool| {
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.loader.kind = LoaderKind::NeighborSampler;
        spec.loader.num_workers = 2;
        spec.loader.persistent_workers = persistent;
        spec.loader.eval_loaders = EvalLoaders::Layerwise;
        spec.loader.eval_every = 3;
        spec.epochs = 3;
        spec.budget.accounting = Accounting::RssSum;
        spec.device = Device::Cuda;
        let j = Job::from_spec(&spec).expect("arxiv spec");
        let est = estimate(&j, &j.settings, &Coefficients::default());
        (
            component(&est, Phase::Train, APPARENT) as f64,
            est.dataset.csc as f64,
        )
    };
    let (training_only, csc) = copies(false);
    let (with_idle, _) = copies(true);
    assert!(training_only > 2.0 * 2.0 * csc, "{training_only} {csc}");
    assert!(
        (with_idle - 2.0 * training_only).abs() < 4.0,
        "{with_idle} vs {training_only}"
    );
}
