//! End-to-end tests of `headroom plan` and `headroom check`: the seed
//! scenarios worked through from the mechanism, the JSON contract, exit codes
//! and bad input.

use crate::util::{fixture, headroom, json_of};

/// Runs `plan <args> --format json` and parses the report.
fn plan_json(args: &[&str]) -> serde_json::Value {
    json_of(headroom().arg("plan").args(args).args(["--format", "json"]))
}

fn phase<'a>(r: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    r["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == name)
        .unwrap()
}

const GIB: u64 = 1 << 30;

#[test]
fn three_resident_loaders_at_128g_are_killed_while_building_them() {
    // seeds/002 (and 001's first attempt): features 111,059,956·128·4 = 56,862,697,472
    // + labels (float32) 444,239,824 + edge_index 2·1,615,685,872·8 = 25,850,973,952
    // + splits 1,546,782·8 = 12,374,256 + three CSC copies 3·(colptr 888,479,656
    // + row and perm 2·12,925,486,976) = 80,218,360,824 + the last one's sort
    // above its kept row and perm (sorted col and torch's radix scratch:
    // 16·1,615,685,872 = 25,850,973,952) + runtime 402 MiB + CUDA host
    // 1200 MiB = 1,679,818,752 = 190,919,439,032 bytes (177.8 GiB) > 128 GiB.
    let r = plan_json(&["seed-002-three-loaders"]);
    assert_eq!(r["fits"], false);
    assert_eq!(r["predicted_exit_code"], 137);
    assert_eq!(r["failure"]["phase"], "build_loaders");
    assert_eq!(phase(&r, "build_loaders")["host_bytes"], 190_919_439_032u64);
}

#[test]
fn on_demand_eval_loaders_move_the_peak_to_building_one() {
    // seeds/002's fix and seeds/003 (whose scripts call clear_all_memory(),
    // gc.collect(), after each `del`): training itself fits; the peak is
    // building an evaluation loader beside the resident train loader, and
    // the job is killed there, as the real one was.
    let r = plan_json(&["seed-003-eval-peak", "--epochs", "1"]);
    let usable = (128.0 * 0.9 * GIB as f64) as u64;
    assert!(phase(&r, "train")["host_bytes"].as_u64().unwrap() < usable);
    assert_eq!(r["peak_phase"], "evaluate");
    assert_eq!(r["predicted_exit_code"], 137);
    let eval = phase(&r, "evaluate");
    assert!(
        eval["moment"]
            .as_str()
            .unwrap()
            .contains("building an evaluation loader"),
        "{eval}"
    );
    let eval_bytes = eval["host_bytes"].as_u64().unwrap();
    // Without gc.collect() the deleted loader (a NeighborLoader refers to
    // itself) still holds its CSC: one CSC more, the same three CSCs and
    // sort as building three resident loaders (both train on the GPU: the
    // same runtime and CUDA host pages), but for the few KiB of batches the
    // main process's heap kept.
    let lingering = plan_json(&[
        "seed-003-eval-peak",
        "--epochs",
        "1",
        "--gc-collect",
        "false",
    ]);
    let lingering_eval = phase(&lingering, "evaluate");
    assert!(
        lingering_eval["moment"]
            .as_str()
            .unwrap()
            .contains("garbage collection"),
        "{lingering_eval}"
    );
    let csc = 888_479_656 + 2 * 12_925_486_976u64;
    assert_eq!(
        lingering_eval["host_bytes"].as_u64(),
        Some(eval_bytes + csc)
    );
    let three = phase(&plan_json(&["seed-002-three-loaders"]), "build_loaders")["host_bytes"]
        .as_u64()
        .unwrap();
    assert!(
        (eval_bytes + csc).abs_diff(three) < 1 << 20,
        "{eval_bytes} + {csc} vs {three}"
    );
    // Over the spec's 100 epochs the deleted loaders are never collected
    // (a real 4-epoch run kept all eight): two more CSCs an epoch, and the
    // plan says what it assumed.
    let run = plan_json(&["seed-003-eval-peak", "--gc-collect", "false"]);
    assert_eq!(
        phase(&run, "evaluate")["host_bytes"].as_u64(),
        Some(eval_bytes + csc + 2 * 99 * csc)
    );
    let assumed = run["assumptions"].to_string();
    assert!(
        assumed.contains("199 of them by the last evaluation;"),
        "{assumed}"
    );
}

#[test]
fn attempt_one_does_not_fit_and_names_its_phase() {
    let r = plan_json(&["seed-001-attempt1"]);
    assert_eq!(r["fits"], false);
    assert_eq!(r["predicted_exit_code"], 137);
    assert!(r["failure"]["phase"].is_string());
    // Four persistent workers put the CSC copies in /dev/shm.
    assert!(phase(&r, "train")["shm_bytes"].as_u64().unwrap() > 3 * 24 * GIB);
}

#[test]
fn rss_sum_accounting_makes_every_worker_look_like_the_dataset() {
    // Under jobacct_gather without UsePss each forked worker counts the parent's
    // pages: 4 workers add at least 4 × the 78 GiB dataset to the train phase.
    let cg = plan_json(&["seed-001-attempt1", "--mem", "1T"]);
    let rs = plan_json(&[
        "seed-001-attempt1",
        "--mem",
        "1T",
        "--accounting",
        "rss_sum",
    ]);
    let diff = phase(&rs, "train")["host_bytes"].as_u64().unwrap()
        - phase(&cg, "train")["host_bytes"].as_u64().unwrap();
    assert!(diff > 4 * 78 * GIB, "{diff}");
}

#[test]
fn the_json_carries_the_contract_fields() {
    let r = plan_json(&["ogbn-products", "--mem", "64G", "--gpu", "a100-40gb"]);
    for key in [
        "fits",
        "peak_host_bytes",
        "peak_gpu_bytes",
        "peak_phase",
        "predicted_exit_code",
        "components",
        "recommended",
    ] {
        assert!(r.get(key).is_some(), "missing {key}");
    }
    let rec = &r["recommended"];
    for key in [
        "batch_size",
        "fanout",
        "num_workers",
        "persistent_workers",
        "eval_loaders",
    ] {
        assert!(rec.get(key).is_some(), "recommended misses {key}");
    }
    assert_eq!(r["fits"], true);
    assert!(r["predicted_exit_code"].is_null());
}

#[test]
fn every_recommendation_fits_when_planned_again() {
    for job in [
        "seed-001-attempt1",
        "seed-002-three-loaders",
        "seed-003-eval-peak",
        "seed-004-gpu",
    ] {
        let r = plan_json(&[job]);
        let rec = &r["recommended"];
        assert!(rec.is_object(), "{job}: no recommendation");
        let fanout: Vec<String> = rec["fanout"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect();
        let mut args: Vec<String> = vec![
            job.into(),
            "--batch-size".into(),
            rec["batch_size"].to_string(),
            "--fanout".into(),
            fanout.join(","),
            "--workers".into(),
            rec["num_workers"].to_string(),
            "--eval-loaders".into(),
            rec["eval_loaders"].as_str().unwrap().into(),
            "--prefetch-factor".into(),
            rec["prefetch_factor"].to_string(),
            "--shared-sampler".into(),
            rec["shared_sampler"].to_string(),
            "--is-sorted".into(),
            rec["is_sorted"].to_string(),
            "--pin-memory".into(),
            rec["pin_memory"].to_string(),
            "--persistent-workers".into(),
            rec["persistent_workers"].to_string(),
            "--alloc-conf".into(),
            if rec["expandable_segments"] == true {
                "expandable_segments:True".into()
            } else {
                String::new()
            },
        ];
        args.extend(["--format".into(), "json".into()]);
        let out = headroom().arg("check").args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{job}: recommendation {rec} does not fit: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn check_exit_codes_are_zero_one_two() {
    headroom()
        .args(["check", fixture("plan/inline-small.yaml").to_str().unwrap()])
        .assert()
        .code(0);
    headroom()
        .args(["check", "seed-002-three-loaders"])
        .assert()
        .code(1);
    headroom()
        .args(["check", "no-such-dataset"])
        .assert()
        .code(2);
}

#[test]
fn github_format_prints_error_annotations() {
    let out = headroom()
        .args(["check", "seed-002-three-loaders", "--format", "github"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("::error ") && l.contains("exit 137")),
        "{text}"
    );
}

#[test]
fn an_sbatch_script_is_read_and_its_contradiction_reported() {
    // Its training script is not there: read by its own words, the same
    // reader as a script that is (a script reading with its plan).
    let r = plan_json(&[fixture("plan/train_mismatch.sbatch").to_str().unwrap()])["plan"].clone();
    assert_eq!(r["settings"]["batch_size"], 1024);
    assert_eq!(r["settings"]["fanout"], serde_json::json!([10, 5]));
    assert_eq!(r["limits"]["host"], 256 * GIB);
    let warnings = r["warnings"].to_string();
    assert!(warnings.contains("BATCH_SIZE=512"), "{warnings}");
}

fn bad(args: &[&str], needle: &str) {
    let out = headroom().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "not one line: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
}

#[test]
fn bad_input_is_one_line_and_exit_two() {
    bad(
        &["plan", "ogbn-paper100m", "--mem", "1G"],
        "did you mean ogbn-papers100m",
    );
    bad(
        &["plan", fixture("plan/malformed.yaml").to_str().unwrap()],
        "malformed.yaml",
    );
    bad(
        &["plan", fixture("plan/negative.yaml").to_str().unwrap()],
        "negative",
    );
    bad(
        &["plan", fixture("plan/zero-hops.yaml").to_str().unwrap()],
        "zero hops",
    );
    bad(&["plan", "ogbn-arxiv", "--mem", "99999999T"], "absurd");
    // Bytes where sbatch reads MiB: 238 PiB, refused with the fix.
    bad(
        &["plan", "ogbn-arxiv", "--mem", "256000000000"],
        "write 238G",
    );
    bad(
        &[
            "plan",
            fixture("plan/eval-every-zero.yaml").to_str().unwrap(),
        ],
        "eval_every 0 is not in 1..100000",
    );
    bad(
        &["plan", "ogbn-arxiv", "--mem", "8G", "--gpu", "a41"],
        "unknown GPU",
    );
    bad(&["check", "ogbn-arxiv"], "no host budget");
    bad(&["plan", "missing.yaml"], "no such file");
    bad(
        &["plan", "ogbn-arxiv", "--mem", "8G", "--fanout", "0,5"],
        "fanout 0",
    );
}

#[test]
fn completions_are_generated() {
    let out = headroom().args(["completions", "bash"]).output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("headroom"));
}

#[test]
fn a_small_dev_shm_predicts_sigbus_when_workers_share_the_csc() {
    // With workers the CSC copies move to /dev/shm: 64 MiB (a container's default)
    // cannot hold arxiv's CSC (colptr 169,344·8 + row and perm 2·1,166,243·8
    // = 20,014,640 bytes per loader, three loaders = 60,043,920) plus the batches
    // in flight, so the build or the first batches die of SIGBUS: exit 135.
    let r = plan_json(&[
        "ogbn-arxiv",
        "--mem",
        "64G",
        "--workers",
        "4",
        "--shm",
        "64M",
    ]);
    assert_eq!(r["predicted_exit_code"], 135);
    let no_workers = plan_json(&[
        "ogbn-arxiv",
        "--mem",
        "64G",
        "--workers",
        "0",
        "--shm",
        "64M",
    ]);
    assert_eq!(
        no_workers["fits"], true,
        "without workers nothing lives in /dev/shm"
    );
}

#[test]
fn every_rank_on_a_node_loads_its_own_copy() {
    let one = plan_json(&["ogbn-products", "--mem", "1T"]);
    let four = plan_json(&["ogbn-products", "--mem", "1T", "--ranks-per-node", "4"]);
    let (a, b) = (
        one["peak_host_bytes"].as_u64().unwrap(),
        four["peak_host_bytes"].as_u64().unwrap(),
    );
    // Each host component is multiplied by the ranks; rounding per component may differ by a few bytes.
    assert!((b as i64 - 4 * a as i64).abs() < 64, "{a} x4 != {b}");
    assert_eq!(
        one["peak_gpu_bytes"], four["peak_gpu_bytes"],
        "GPU figures are per device"
    );
}

#[test]
fn cpu_training_puts_the_model_on_the_host() {
    let gpu = plan_json(&["ogbn-products", "--mem", "1T"]);
    let cpu = plan_json(&["ogbn-products", "--mem", "1T", "--device", "cpu"]);
    let train = |r: &serde_json::Value| phase(r, "train").clone();
    let names: Vec<String> = train(&cpu)["host"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        names.iter().any(|n| n.contains("model on the host")),
        "{names:?}"
    );
    // The text shows no GPU for a CPU job, and neither does JSON (issue 26).
    assert!(
        cpu.get("peak_gpu_bytes").is_none(),
        "{}",
        cpu["peak_gpu_bytes"]
    );
    assert!(gpu["peak_gpu_bytes"].as_u64().unwrap() > 0);
    assert!(
        train(&cpu)["host_bytes"].as_u64()
            > train(&gpu)["host_bytes"].as_u64().map(|b| b - (1200 << 20))
    );
}

#[test]
fn to_undirected_kills_papers100m_at_load_under_256g() {
    // 144 bytes per directed edge at to_undirected's worst moment:
    // 144 · 1,615,685,872 = 232.7 GB on top of 53 GiB of features.
    let r = plan_json(&["seed-001-attempt2", "--to-undirected"]);
    assert_eq!(r["failure"]["phase"], "load");
    assert_eq!(r["predicted_exit_code"], 137);
}

#[test]
fn when_expandable_segments_alone_rescues_the_gpu_it_is_the_recommendation() {
    // Batch sizes vary from batch to batch; in segment mode the allocator's
    // cached blocks of earlier sizes cannot hold a larger request on a T4,
    // while expandable segments map pages as needed. The planner must then keep
    // batch and fanout and recommend the allocator setting.
    let r = plan_json(&[
        "ogbn-products",
        "--mem",
        "64G",
        "--gpu",
        "t4",
        "--batch-size",
        "11000",
        "--fanout",
        "25,15",
    ]);
    let sim = &r["gpu_simulation"];
    assert!(
        sim["configured"]["oom"].is_object(),
        "configured run should fail: {sim}"
    );
    assert!(
        sim["expandable"]["oom"].is_null(),
        "expandable run should complete: {sim}"
    );
    assert_eq!(r["predicted_exit_code"], 1);
    let rec = &r["recommended"];
    assert_eq!(rec["expandable_segments"], true);
    assert_eq!(rec["batch_size"], 11000);
    assert_eq!(rec["fanout"], serde_json::json!([25, 15]));
}

#[test]
fn the_gpu_simulation_includes_the_runs_largest_batch() {
    let r = plan_json(&["ogbn-products", "--mem", "64G", "--gpu", "a100-80gb"]);
    let sim = &r["gpu_simulation"];
    // ceil(196,615 / 1024) = 193 batches per epoch × 100 epochs = 19,300 steps; 2,000 simulated.
    assert_eq!(sim["steps_in_run"], 19_300);
    assert_eq!(sim["steps_simulated"], 2_000);
    assert!(sim["configured"]["oom"].is_null());
}

#[test]
fn a_gpu_bound_job_gets_the_largest_batch_that_the_simulation_lets_through() {
    // On a T4 a 65,536-seed products batch fails at its first step; the
    // recommendation must come down in batch size, keep the first hop (fanout
    // weighs double: 16,384 × [25, 12] loses less than 8,192 × [25, 15]) and
    // then plan as fitting.
    let r = plan_json(&[
        "ogbn-products",
        "--mem",
        "64G",
        "--gpu",
        "t4",
        "--batch-size",
        "65536",
        "--fanout",
        "25,15",
    ]);
    assert_eq!(r["predicted_exit_code"], 1);
    let rec = &r["recommended"];
    let batch = rec["batch_size"].as_u64().unwrap();
    assert!(batch < 65_536, "{rec}");
    assert_eq!(rec["fanout"][0], 25, "{rec}");
    let mut args = vec![
        "ogbn-products".to_string(),
        "--mem".into(),
        "64G".into(),
        "--gpu".into(),
        "t4".into(),
    ];
    let fanout: Vec<String> = rec["fanout"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.to_string())
        .collect();
    let fanout = fanout.join(",");
    args.extend([
        "--batch-size".into(),
        batch.to_string(),
        "--fanout".into(),
        fanout.clone(),
    ]);
    if rec["expandable_segments"] == true {
        // The job spec route: PYTORCH_CUDA_ALLOC_CONF as budget.alloc_conf.
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().join("job.yaml");
        std::fs::write(&spec, format!("dataset: ogbn-products\nloader: {{batch_size: {batch}, fanout: [{fanout}]}}\nbudget: {{host: 64G, gpu: t4, alloc_conf: \"expandable_segments:True\"}}\n")).unwrap();
        let again = plan_json(&[spec.to_str().unwrap()]);
        assert_eq!(again["fits"], true, "{again}");
    } else {
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        assert_eq!(plan_json(&refs)["fits"], true);
    }
}

#[test]
fn seed_004_fails_only_at_its_largest_batches_and_says_when() {
    // 8,000 batches × 300 epochs = 2.4 million steps; 2,000 simulated, the
    // run's largest batch at step 1,001: everything before it goes through.
    let r = plan_json(&["seed-004-gpu"]);
    let msg = r["failure"]["message"].as_str().unwrap();
    assert!(
        msg.contains("fails at step 1001 of 2000 simulated"),
        "{msg}"
    );
    assert!(msg.contains("only the run's largest batches fail"), "{msg}");
    assert!(msg.contains("expected around epoch"), "{msg}");
    assert_eq!(r["gpu_simulation"]["steps_in_run"], 2_400_000);
}

#[test]
fn a_job_that_trains_on_the_cpu_is_not_judged_against_a_gpu() {
    let r = plan_json(&[
        "ogbn-products",
        "--mem",
        "64G",
        "--gpu",
        "t4",
        "--device",
        "cpu",
        "--batch-size",
        "65536",
    ]);
    assert!(r["gpu_simulation"].is_null());
    assert!(r["limits"]["gpu"].is_null());
    assert_ne!(r["failure"]["budget"], "gpu");
}

#[test]
fn the_shipped_examples_plan_as_documented() {
    let root = env!("CARGO_MANIFEST_DIR");
    // examples/job.yaml: four workers move 3 CSC copies (74.7 GiB) into a 64 MiB /dev/shm.
    let r = plan_json(&[&format!("{root}/examples/job.yaml")]);
    assert_eq!(r["predicted_exit_code"], 135);
    assert_eq!(r["failure"]["phase"], "build_loaders");
    let change = &r["recommended"]["changes"][0];
    assert_eq!(change["setting"], "num_workers");
    assert!(change["saves_shm_bytes"].as_i64().unwrap() > 74 << 30);
    let out = headroom()
        .args([
            "check",
            &format!("{root}/examples/train.sbatch"),
            "--format",
            "github",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("::warning::") && text.contains("BATCH_SIZE=512"),
        "{text}"
    );
}

/// A budget just wide enough for the job at the model's estimate with the
/// margin, but narrower than the worst under-prediction seen on the random
/// sets: plan says UNCERTAIN and gives the second, cautious answer, whose
/// worst case fits the limit.
#[test]
fn a_limit_inside_the_uncertainty_band_gets_a_cautious_second_answer() {
    use headroom::plan::band::CGROUP;
    // A real job (the sealed set's draw 1: SAGE, 2 persistent workers, on-demand loaders).
    let row = include_str!("../fixtures/pyg/sealed-2611251.jsonl")
        .lines()
        .nth(1)
        .unwrap();
    let row: serde_json::Value = serde_json::from_str(row).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("job.json");
    // Its script deletes its on-demand loaders; here it also calls
    // gc.collect() after (without it, the advice's first change is that
    // call, never a job left with the lingering-workers pattern).
    let mut spec = row["job"].clone();
    spec["loader"]["gc_collect"] = true.into();
    std::fs::write(&job, spec.to_string()).unwrap();
    let plan = |limit: u64| {
        json_of(headroom().arg("plan").arg(&job).args([
            "--mem",
            &format!("{}M", limit >> 20),
            "--format",
            "json",
        ]))
    };
    let peak = plan(64 << 30)["peak_host_bytes"].as_u64().unwrap();
    // Fits with the 10 % margin: limit >= peak / 0.9; the worst case
    // peak / (1 + worst_under) lies above it.
    // Halfway between the two, in whole MiB.
    let worst = peak as f64 / (1.0 + CGROUP.worst_under);
    let limit = ((peak as f64 / 0.9 + worst) / 2.0) as u64 >> 20 << 20;
    assert!(
        worst > limit as f64 && limit as f64 > peak as f64 / 0.9,
        "the test's limit must sit between the margin and the worst case"
    );
    let p = plan(limit);
    assert_eq!(p["fits"], true, "{p}");
    assert_eq!(p["host_band"]["straddles"], true, "{}", p["host_band"]);
    assert_eq!(p["recommended"]["changes"].as_array().unwrap().len(), 0);
    let c = &p["recommended_cautious"];
    assert!(c.is_object(), "no cautious answer: {p}");
    let cautious_peak = c["peak_host_bytes"].as_u64().unwrap() as f64;
    assert!(cautious_peak < peak as f64);
    assert!(
        cautious_peak / (1.0 + CGROUP.worst_under) <= limit as f64,
        "cautious peak {cautious_peak} at worst exceeds {limit}"
    );
    // Without gc.collect(): that free call is the advice, at any limit.
    std::fs::write(&job, row["job"].to_string()).unwrap();
    let bare = plan(limit);
    let changes = bare["recommended"]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:?}");
    assert_eq!(changes[0]["setting"], "gc_collect");
    assert_eq!(changes[0]["kind"], "free");
    std::fs::write(&job, spec.to_string()).unwrap();
    // Far above the worst case: no second answer, not uncertain.
    let wide = plan(4 * limit);
    assert_eq!(wide["host_band"]["straddles"], false);
    assert!(wide["recommended_cautious"].is_null());
}

/// Whether the plan's warnings say deleted loaders keep their workers.
fn warns_of_lingering_workers(extra: &[&str]) -> bool {
    let mut args = vec![
        "ogbn-arxiv",
        "--mem",
        "8G",
        "--workers",
        "2",
        "--eval-loaders",
        "on_demand",
        "--epochs",
        "5",
    ];
    args.extend_from_slice(extra);
    let r = plan_json(&args);
    r["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .contains("keep their persistent workers alive")
    })
}

#[test]
fn deleted_loaders_with_persistent_workers_are_a_named_risk() {
    // 5 of 10 real jobs of this kind died or hung (sealed-linger-2611265).
    assert!(warns_of_lingering_workers(&["--persistent-workers"]));
    assert!(!warns_of_lingering_workers(&[
        "--persistent-workers",
        "--gc-collect"
    ]));
    assert!(!warns_of_lingering_workers(&[]));
}

/// Issue 30: a change that affects training says what it does to it, by the
/// plan's own batch model, and the free ones say nothing. ogbn-products'
/// 196,615 training seeds take 193 steps an epoch at batch 1024.
#[test]
fn training_changes_state_their_effect_on_batches_and_steps() {
    let r = plan_json(&["ogbn-products", "--mem", "3G"]);
    let changes = r["recommended"]["changes"].as_array().unwrap();
    let batch = changes
        .iter()
        .find(|c| c["setting"] == "batch_size")
        .expect("a batch cut at 3G");
    let to: u64 = batch["to"].as_str().unwrap().parse().unwrap();
    let effect = batch["effect"].as_str().unwrap();
    let steps = format!("steps an epoch 193 → {}", 196_615u64.div_ceil(to));
    assert!(effect.contains(&steps), "{effect}");
    assert!(effect.starts_with("nodes a batch "), "{effect}");
    for c in changes {
        let training = c["kind"] == "training";
        assert_eq!(c["effect"].is_string(), training, "{c}");
    }
}
