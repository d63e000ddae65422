use super::*;
use crate::spec::{JobSpec, load};

fn gib(n: u64) -> Option<crate::units::Bytes> {
    Some(crate::units::Bytes(n << 30))
}

fn seed001(mem_gib: u64) -> Job {
    let mut spec = load("seed-001-attempt1").unwrap().spec;
    spec.budget.host = gib(mem_gib);
    Job::from_spec(&spec).unwrap()
}

#[test]
fn batch_sizes_step_by_at_most_a_third_from_the_request() {
    assert_eq!(
        batch_sizes(1024),
        vec![1024, 768, 512, 384, 256, 192, 128, 96, 64, 48, 32, 24, 16]
    );
    assert_eq!(batch_sizes(1000)[..3], [1000, 768, 512]);
    assert_eq!(batch_sizes(2), vec![2, 1]);
    for w in batch_sizes(8192).windows(2) {
        assert!(w[1] < w[0] && w[0] as f64 / w[1] as f64 <= 1.5, "{w:?}");
    }
}

#[test]
fn fanouts_never_exceed_the_request_and_include_it() {
    let f = fanouts(&[15, 10]);
    assert_eq!(f[0], vec![15, 10]);
    assert!(
        f.iter()
            .all(|v| v[0] <= 15 && v[1] <= 10 && v[0] >= 1 && v[1] >= 1)
    );
    assert!(f.len() > 50, "{}", f.len());
}

#[test]
fn quality_loss_is_zero_for_the_request_and_grows_with_cuts() {
    let req = seed001(128).settings;
    assert_eq!(quality_loss(&req, &req), 0.0);
    let half_batch = Settings {
        batch_size: req.batch_size / 2,
        ..req.clone()
    };
    let half_fan = Settings {
        fanout: vec![15, 5],
        ..req.clone()
    };
    // ln 2 for the batch; 2·ln 2 for halving one hop of the fanout.
    assert!((quality_loss(&req, &half_batch) - 2f64.ln()).abs() < 1e-12);
    assert!((quality_loss(&req, &half_fan) - 2.0 * 2f64.ln()).abs() < 1e-12);
}

#[test]
fn free_settings_only_move_towards_less_memory() {
    // seeds/001's first attempt: 4 persistent workers, prefetch 2, resident loaders.
    let job = seed001(128);
    let req = &job.settings;
    let free = free_settings(&job, req);
    assert!(free.contains(req), "the user's own settings are tried");
    for f in &free {
        assert!(f.num_workers <= req.num_workers, "{f:?}");
        assert!(f.prefetch_factor <= req.prefetch_factor, "{f:?}");
        assert!(!f.pin_memory || req.pin_memory, "{f:?}");
        assert!(!f.persistent_workers || req.persistent_workers, "{f:?}");
        assert_eq!((f.batch_size, &f.fanout), (req.batch_size, &req.fanout));
    }
    // A job with no workers is never given one (the killed advice: 0 → 1 persistent).
    let mut spec = JobSpec::for_dataset("ogbn-arxiv");
    spec.loader.num_workers = 0;
    let arxiv = Job::from_spec(&spec).unwrap();
    assert!(
        free_settings(&arxiv, &arxiv.settings)
            .iter()
            .all(|f| f.num_workers == 0 && !f.persistent_workers)
    );
}

#[test]
fn on_demand_loaders_with_persistent_workers_are_never_advised_without_gc_collect() {
    // seeds/001: 4 persistent workers, resident evaluation loaders. Moving
    // them on demand keeps deleted loaders' workers alive until CPython's
    // oldest generation is collected (advice-2611253's draw 15 died of it).
    let job = seed001(128);
    let free = free_settings(&job, &job.settings);
    let on_demand: Vec<&Settings> = free
        .iter()
        .filter(|f| f.eval_loaders == EvalLoaders::OnDemand)
        .collect();
    assert!(!on_demand.is_empty());
    for f in on_demand {
        assert!(
            f.gc_collect || !f.persistent_workers || f.num_workers == 0,
            "{f:?}"
        );
    }
    // With gc.collect() they are still tried.
    assert!(
        free.iter().any(|f| f.eval_loaders == EvalLoaders::OnDemand
            && f.persistent_workers
            && f.gc_collect)
    );
}

#[test]
fn the_least_memory_corner_needs_no_more_than_any_free_setting() {
    // The search skips a (batch, fanout) pair whose corner does not fit; that
    // is sound only if no other free setting needs less on any budget.
    for name in ["seed-001-attempt1", "seed-002-three-loaders"] {
        let mut spec = load(name).unwrap().spec;
        spec.budget.host = gib(128);
        let job = Job::from_spec(&spec).unwrap();
        let free = free_settings(&job, &job.settings);
        let prep = Prepared::new(&job);
        let bm = BatchModel::new(&job, &job.settings, &prep);
        let c = Coefficients::default();
        let peak = |s: &Settings| {
            let e = estimate_with(&job, s, &c, &bm, false);
            let (h, _, g, _) = peaks(&e);
            let shm = e.phases.iter().map(|p| p.shm_bytes).max().unwrap_or(0);
            (h, g, shm)
        };
        for sorted in [false, true] {
            let corner: Vec<(u64, u64, u64)> = least(&free, sorted, &job.settings)
                .iter()
                .map(|s| peak(s))
                .collect();
            assert!(!corner.is_empty());
            for f in free.iter().filter(|f| f.is_sorted == sorted) {
                let p = peak(f);
                assert!(
                    corner
                        .iter()
                        .any(|c| c.0 <= p.0 && c.1 <= p.1 && c.2 <= p.2),
                    "{name}: {f:?} needs {p:?}, less than every corner {corner:?}"
                );
            }
        }
    }
}

#[test]
fn a_job_that_fits_keeps_its_own_settings() {
    let job = seed001(1024);
    let found = search(&job, &Coefficients::default(), None);
    assert_eq!(found.fitting[0].settings, job.settings);
    assert!(found.without_preprocessing.is_empty());
    assert!(found.closest.is_none());
}

#[test]
fn seed001_at_128g_sorts_and_keeps_batch_and_fanout_and_says_what_fits_without_sorting() {
    let job = seed001(128);
    let found = search(&job, &Coefficients::default(), None);
    let best = &found.fitting[0].settings;
    assert!(best.is_sorted);
    assert_eq!((best.batch_size, &best.fanout), (1024, &vec![15, 10]));
    // Without sorting nothing fits 128G: the closest settings come with
    // their shortfall, the tightest limit's need over what is usable.
    assert!(found.without_preprocessing.is_empty());
    let (closest, short) = found.closest_without_preprocessing.clone().unwrap();
    assert!(!closest.is_sorted && short > 1.0, "{closest:?} {short}");
}

#[test]
fn where_nothing_fits_the_closest_settings_are_given() {
    let job = seed001(16);
    let found = search(&job, &Coefficients::default(), None);
    assert!(found.fitting.is_empty());
    let (s, short) = found.closest.unwrap();
    assert!(short > 1.0);
    // The dataset alone is 78 GiB: no setting comes within 16G; the closest
    // is the least-memory corner at the smallest batch and fanout tried.
    assert_eq!(s.num_workers, 0);
    assert!(s.shared_sampler && s.is_sorted, "{s:?}");
}

/// advice-2611253-06's job (GIN, 1024 bf16 features, layer-wise inference
/// on the CPU, batch 512) under its budget, 1740M.
fn advice06_at_1740m() -> Job {
    let mut spec = load("tests/fixtures/plan/advice-2611253-06.json")
        .unwrap()
        .spec;
    spec.budget.host = Some(crate::units::Bytes(1740 << 20));
    Job::from_spec(&spec).unwrap()
}

#[test]
fn cpu_layerwise_inference_is_never_moved_into_glibc_heap_range() {
    // advice-2611253-06: GIN, 1024 bf16 features, layer-wise inference on
    // the CPU at batch 512 (tensors of about 89 MiB a batch, mmapped). The
    // search once advised batch 128 (23 MiB, from the heap), and the
    // advised job was killed under its 1.70 GiB budget.
    let job = advice06_at_1740m();
    let prep = Prepared::new(&job);
    let risk = |s: &Settings| layerwise_heap_risk(&job, s, &BatchModel::new(&job, s, &prep).eval);
    assert_eq!(risk(&job.settings), None);
    let at_128 = Settings {
        batch_size: 128,
        ..job.settings.clone()
    };
    assert!(risk(&at_128).is_some(), "batch 128 is in the heap range");
    let found = search(&job, &Coefficients::default(), None);
    let best = (found.fitting.first().map(|f| &f.settings))
        .or(found.closest.as_ref().map(|c| &c.0))
        .expect("advice");
    assert_eq!(risk(best), None, "{best:?}");
    assert!(best.batch_size > 128, "{best:?}");
}

#[test]
fn the_closest_settings_keep_the_users_value_where_a_change_saves_nothing() {
    // advice-2611253-06 at 1740M: nothing fits, and the least-memory corner
    // the closest settings come from shares a sampler, which saves nothing
    // where one loader samples (+0 B in the table it printed).
    let job = advice06_at_1740m();
    let found = search(&job, &Coefficients::default(), None);
    assert!(found.fitting.is_empty());
    let (closest, _) = found.closest.expect("closest settings");
    assert_eq!(
        closest.shared_sampler, job.settings.shared_sampler,
        "{closest:?}"
    );
    // The changes that do save memory stay: no workers, a smaller batch.
    assert_eq!(closest.num_workers, 0);
    assert!(closest.batch_size < job.settings.batch_size, "{closest:?}");
}
