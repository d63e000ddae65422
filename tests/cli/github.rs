//! `check --format github` (issue 26): the annotation names the change the
//! plan recommends, not the user's own settings, and when check read a
//! script it sits on the line it belongs to: the failure on the
//! `#SBATCH --mem` line, each change on the loader's line. The expected
//! changes come from the same check's JSON, the expected lines from the
//! fixture files themselves.

use std::path::Path;

use crate::util::{headroom, json_of};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workflow commands `check ARGS --format github` writes (from the
/// repository's root, as a CI job runs it).
fn annotations(args: &[&str]) -> Vec<String> {
    let out = headroom()
        .arg("check")
        .args(args)
        .args(["--format", "github"])
        .current_dir(root())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("::"))
        .map(str::to_string)
        .collect()
}

/// The plan's recommended changes (`plan`, the same plan `check` judges),
/// as `setting from → to`.
fn changes(args: &[&str]) -> Vec<(String, String)> {
    let r = json_of(
        headroom()
            .arg("plan")
            .args(args)
            .args(["--format", "json"])
            .current_dir(root()),
    );
    let r = if r["plan"].is_object() {
        &r["plan"]
    } else {
        &r
    };
    r["recommended"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let s = c["setting"].as_str().unwrap().to_string();
            let change = format!(
                "{s} {} → {}",
                c["from"].as_str().unwrap(),
                c["to"].as_str().unwrap()
            );
            (s, change)
        })
        .collect()
}

/// The 1-based number of the first line of `file` that starts with `prefix`.
fn line_of(file: &str, prefix: &str) -> usize {
    let text = std::fs::read_to_string(root().join(file)).unwrap();
    text.lines()
        .position(|l| l.trim_start().starts_with(prefix))
        .unwrap()
        + 1
}

#[test]
fn the_annotation_names_the_change_that_fits_not_the_users_settings() {
    let args = ["seed-001-attempt1"];
    let all = annotations(&args);
    let error = all.iter().find(|a| a.starts_with("::error")).unwrap();
    let fix = changes(&args);
    assert!(!fix.is_empty());
    for (_, change) in &fix {
        assert!(error.contains(change.as_str()), "{change:?} not in {error}");
    }
    // The user's own settings are not a fix (seeds/001: batch 1024, [15, 10]).
    assert!(!error.contains("batch_size=1024"), "{error}");
    // A profile has no file to point at.
    assert!(!error.contains("file="), "{error}");
}

#[test]
fn annotations_sit_on_the_mem_line_and_the_loaders_line() {
    let sbatch = "tests/fixtures/scripts/papers100m_ddp/train.sbatch";
    let py = "tests/fixtures/scripts/papers100m_ddp/papers100m_gcn.py";
    let all = annotations(&[sbatch]);
    let mem = format!("file={sbatch},line={},", line_of(sbatch, "#SBATCH --mem"));
    let error = all.iter().find(|a| a.starts_with("::error")).unwrap();
    assert!(error.starts_with(&format!("::error {mem}")), "{error}");
    let loader = format!(
        "file={py},line={},",
        line_of(py, "train_loader = NeighborLoader(")
    );
    let fix = changes(&[sbatch]);
    assert!(!fix.is_empty());
    for (setting, change) in &fix {
        assert!(error.contains(change.as_str()), "{change:?} not in {error}");
        // Neither is_sorted nor persistent_workers is set on a line of its
        // own here: each belongs to the training loader's call.
        if setting == "is_sorted" || setting == "persistent_workers" {
            assert!(
                all.iter()
                    .any(|a| a.starts_with(&format!("::notice {loader}"))
                        && a.contains(change.as_str())),
                "no notice for {change:?} at {loader}: {all:#?}"
            );
        }
    }
}

#[test]
fn a_flag_that_overrides_the_script_moves_the_annotation_off_its_line() {
    let sbatch = "tests/fixtures/scripts/papers100m_ddp/train.sbatch";
    let all = annotations(&[sbatch, "--mem", "400G"]);
    let error = all.iter().find(|a| a.starts_with("::error")).unwrap();
    assert!(error.starts_with("::error title="), "{error}");
}

#[test]
fn an_sbatch_script_read_alone_is_annotated_on_its_mem_line() {
    // Its training script is not there: only the sbatch script's own
    // lines are known, and the failure belongs to its --mem line.
    let dir = tempfile::tempdir().unwrap();
    let sbatch = dir.path().join("small.sbatch");
    std::fs::write(
        &sbatch,
        "#!/bin/bash\n#SBATCH --gres=gpu:a40:1\n#SBATCH --mem=64G\n\
         python missing_train.py --dataset ogbn-papers100M --batch_size 1024 --num_neighbors 15 10\n",
    )
    .unwrap();
    let all = annotations(&[sbatch.to_str().unwrap()]);
    let error = all.iter().find(|a| a.starts_with("::error")).unwrap();
    let place = format!("file={},line=3,", sbatch.display()).replace(':', "%3A");
    assert!(error.starts_with(&format!("::error {place}")), "{error}");
}
