//! Completion and the manual page through the real binary: bash sources the
//! script `headroom completions bash` prints and completes a real command
//! line; `man` renders the page `headroom man` prints.

use std::path::Path;
use std::process::Command;

use crate::util::headroom;

/// What bash's completion offers for `words` (the last one being typed),
/// with headroom on PATH and `dir` as the working directory.
fn bash_completes(words: &[&str], dir: &Path) -> Vec<String> {
    let bin = Path::new(env!("CARGO_BIN_EXE_headroom"));
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let script = format!(
        "source <(headroom completions bash) || exit 3
         COMP_WORDS=({words}); COMP_CWORD={cword}; COMP_TYPE=9
         _clap_complete_headroom headroom '{cur}' '{prev}'
         printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        words = quoted.join(" "),
        cword = words.len() - 1,
        cur = words[words.len() - 1],
        prev = words[words.len() - 2],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &script])
        .env("PATH", path)
        .current_dir(dir)
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim_end().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_profile_names_and_files_where_an_argument_takes_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("ogbn-job.yaml"), "dataset: ogbn-arxiv\n").unwrap();
    let d = dir.path();
    let gpus = bash_completes(&["headroom", "plan", "x.yaml", "--gpu", "a100"], d);
    assert_eq!(gpus, ["a100-40gb", "a100-80gb"]);
    let sim = bash_completes(&["headroom", "simulate-alloc", "--gpu", "h1"], d);
    assert!(sim.contains(&"h100-80gb".to_string()), "{sim:?}");
    let ds = bash_completes(&["headroom", "check", "x.yaml", "--dataset", "ogbn-p"], d);
    assert_eq!(ds, ["ogbn-papers100m", "ogbn-products", "ogbn-proteins"]);
    // A JOB is a profile (job or dataset) or a file: both are offered.
    let job = bash_completes(&["headroom", "plan", "ogbn-"], d);
    for want in ["ogbn-arxiv", "ogbn-papers100m", "ogbn-job.yaml"] {
        assert!(job.contains(&want.to_string()), "{want} not in {job:?}");
    }
    let seeds = bash_completes(&["headroom", "watch", "--job", "seed-001-"], d);
    assert!(seeds.contains(&"seed-001-fix".to_string()), "{seeds:?}");
}

#[test]
fn the_manual_pages_render() {
    let main = headroom().arg("man").output().unwrap();
    assert!(main.status.success());
    let plan = headroom().args(["man", "plan"]).output().unwrap();
    assert!(plan.status.success());
    let bad = headroom().args(["man", "fly"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("plan"));
    let Ok(probe) = Command::new("man").arg("--version").output() else {
        eprintln!("skipped: no man(1) to render the page with");
        return;
    };
    assert!(probe.status.success());
    let dir = tempfile::tempdir().unwrap();
    let struck = regex::Regex::new(".\u{8}").unwrap();
    for (name, page, want) in [
        ("headroom.1", &main.stdout, "headroom-plan(1)"),
        ("headroom-plan.1", &plan.stdout, "--calibration"),
    ] {
        let file = dir.path().join(name);
        std::fs::write(&file, page).unwrap();
        let out = Command::new("man")
            .arg("-l")
            .arg(&file)
            .env("MANWIDTH", "80")
            .env("MANPAGER", "cat")
            .output()
            .unwrap();
        // Without a terminal, grotty marks bold and underline by overstrike
        // (`N\bN`); the text is what is left without the struck character.
        let text = String::from_utf8_lossy(&out.stdout).replace("_\u{8}", "");
        let text = struck.replace_all(&text, "");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            text.contains("NAME") && text.contains(want),
            "{name}: {text}"
        );
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn a_generic_complete_variable_in_the_environment_does_not_hijack_a_run() {
    let out = headroom()
        .args(["profiles", "--kind", "gpus"])
        .env("COMPLETE", "bash")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("a100-80gb"));
}
