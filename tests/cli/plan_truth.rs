//! `plan` and `check` say only what is true: no budget means nothing was
//! checked, a CPU job has no GPU section, the two allocator simulations and
//! the margin are labelled, no made-up epoch seconds, /dev/shm moves are
//! said and checked, and `check` is short.

use crate::util::{headroom, json_of};

fn text(args: &[&str]) -> (Option<i32>, String) {
    let out = headroom().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
    )
}

#[test]
fn plan_without_a_budget_predicts_and_says_nothing_was_checked() {
    let (code, out) = text(&["plan", "ogbn-arxiv"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.contains("NOT CHECKED"), "{out}");
    assert!(!out.contains("FITS"), "{out}");
    let r = json_of(headroom().args(["plan", "ogbn-arxiv", "--format", "json"]));
    assert_eq!(r["checked"], false);
    assert!(
        r["fits"].is_null(),
        "nothing was checked, so no verdict: {}",
        r["fits"]
    );
    assert!(r["recommended"].is_null());
}

#[test]
fn a_cpu_job_has_no_gpu_section() {
    let (code, out) = text(&["plan", "ogbn-arxiv", "--mem", "32G", "--device", "cpu"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("GPU components"), "{out}");
    assert!(!out.contains("GPU saved"), "{out}");
    let header = out.lines().find(|l| l.contains("phase")).unwrap();
    assert!(!header.contains("GPU"), "{header}");
}

#[test]
fn both_simulations_total_capacity_and_margin_are_labelled() {
    let (_, out) = text(&["plan", "ogbn-arxiv", "--mem", "32G", "--gpu", "a100-40gb"]);
    // a100-40gb: torch reports 42,406,510,592 bytes = 39.5 GiB; 10% margin leaves 35.5 GiB.
    assert!(out.contains("GPU total capacity 39.5 GiB"), "{out}");
    let margin = out.lines().find(|l| l.starts_with("margin:")).unwrap();
    assert!(
        margin.contains("10%") && margin.contains("GPU 35.5 GiB usable"),
        "{margin}"
    );
    assert!(
        out.contains("without expandable segments (your setting):"),
        "{out}"
    );
    assert!(out.contains("with expandable_segments:True:"), "{out}");
}

#[test]
fn no_epoch_seconds_are_reported() {
    let r = json_of(headroom().args(["plan", "ogbn-products", "--mem", "16G", "--format", "json"]));
    assert!(r["recommended"].is_object(), "{r}");
    assert!(
        r["recommended"].get("epoch_seconds").is_none(),
        "{}",
        r["recommended"]
    );
    let (_, out) = text(&["plan", "ogbn-products", "--mem", "16G"]);
    assert!(!out.contains("seconds"), "{out}");
}

#[test]
fn a_recommendation_keeps_the_users_workers_within_shm_and_drops_them_below_it() {
    // papers100M at 128G with 4 workers needs is_sorted and keeps the
    // workers: the CSC and batches stay in /dev/shm, within --shm.
    let args = [
        "plan",
        "ogbn-papers100m",
        "--mem",
        "128G",
        "--workers",
        "4",
        "--format",
        "json",
    ];
    let r = json_of(headroom().args(args).args(["--shm", "100G"]));
    let rec = &r["recommended"];
    let shm = rec["peak_shm_bytes"].as_u64().unwrap();
    assert!(shm > 10 << 30 && shm <= 100 << 30, "{rec}");
    assert_eq!(rec["num_workers"], 4, "{rec}");
    // A /dev/shm too small for any worker leaves no worker in the recommendation.
    let r = json_of(headroom().args(args).args(["--shm", "64M"]));
    assert_eq!(r["recommended"]["num_workers"], 0, "{}", r["recommended"]);
}

#[test]
fn check_text_is_short_and_names_the_deciding_number_and_the_fix() {
    let (code, out) = text(&["check", "ogbn-papers100m", "--mem", "128G", "--shm", "100G"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.lines().count() <= 8,
        "{} lines:\n{out}",
        out.lines().count()
    );
    assert!(out.contains("DOES NOT FIT: exit 137"), "{out}");
    assert!(
        out.contains("host: peak") && out.contains("115 GiB usable of 128 GiB"),
        "{out}"
    );
    assert!(out.contains("fix: "), "{out}");
    assert!(!out.contains("components per phase"), "{out}");
    let (code, out) = text(&["check", "ogbn-arxiv", "--mem", "64G"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.lines().count() <= 4, "{out}");
}

#[test]
fn cpu_layerwise_inference_in_glibc_heap_range_is_named_as_a_risk() {
    // advice-2611253-06's job: GIN, 1024 bf16 features, layer-wise
    // inference on the CPU over 324,208 nodes of in-degree 45.
    let job = crate::util::fixture("plan/advice-2611253-06.json");
    let job = job.to_str().unwrap();
    let warnings = |batch: &str| {
        json_of(headroom().args(["plan", job, "--batch-size", batch, "--format", "json"]))
            ["warnings"]
            .to_string()
    };
    // 128 seeds: about 5,900 nodes x 1024 floats x 4 B = 23 MiB a batch,
    // from glibc's heap; 64/23 x 128 = 356 seeds put the mean batch over
    // twice the 32 MiB ceiling: 512.
    let w = warnings("128");
    assert!(w.contains("glibc's heap"), "{w}");
    assert!(w.contains("MALLOC_MMAP_THRESHOLD_=65536"), "{w}");
    assert!(w.contains("512 or more seeds"), "{w}");
    // 512 seeds: about 89 MiB a batch, nearly all mmapped.
    let w = warnings("512");
    assert!(!w.contains("glibc's heap"), "{w}");
}

#[test]
fn the_preprocessing_step_names_the_jobs_own_limit_unrounded() {
    // 1740M is 1.70 GiB: floored to whole GiB it read "--mem=1G", a limit
    // the user never gave.
    let job = crate::util::fixture("plan/advice-2611253-06.json");
    let (code, out) = text(&["plan", job.to_str().unwrap(), "--mem", "1740M"]);
    assert_eq!(code, Some(0), "plan reports, check judges: {out}");
    assert!(out.contains("this job's --mem=1740M:"), "{out}");
    assert!(!out.contains("--mem=1G:"), "{out}");
}
