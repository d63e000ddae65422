//! The pre-submit check, contrib/slurm/cli_filter.lua, run by the real
//! sbatch of tests/slurm/cluster.sh's Slurm 22.05 (Debian's
//! cli_filter_lua.so): installed as a site would (the file beside
//! slurm.conf, `CliFilterPlugins=cli_filter/lua`), it runs the real
//! `headroom check` on each submitted script, warns or refuses by the
//! site's setting, and lets through what headroom cannot read. Held jobs:
//! nothing runs. Skips, saying why, where Slurm cannot start.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::slurm_live::{Cluster, ONE_CLUSTER, repo, start};

/// Writes the filter into the cluster's config directory with the site's
/// settings changed as a site would edit them.
fn install(dir: &Path, headroom: &str, action: &str) {
    let text = std::fs::read_to_string(repo().join("contrib/slurm/cli_filter.lua"))
        .expect("contrib/slurm/cli_filter.lua");
    let site = text
        .replacen(
            "headroom = \"headroom\",",
            &format!("headroom = \"{headroom}\","),
            1,
        )
        .replacen("action = \"warn\",", &format!("action = \"{action}\","), 1);
    assert_ne!(site, text, "the settings lines moved");
    std::fs::write(dir.join("etc/cli_filter.lua"), site).expect("write cli_filter.lua");
}

fn sbatch(dir: &Path, cwd: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new("sbatch")
        .env("SLURM_CONF", dir.join("etc/slurm.conf"))
        .env_remove("HEADROOM_CLI_FILTER")
        .envs(env.iter().copied())
        .current_dir(cwd)
        .arg("--hold")
        .arg("--parsable")
        .args(args)
        .output()
        .expect("run sbatch")
}

fn queued(dir: &Path) -> usize {
    let out = Command::new("squeue")
        .env("SLURM_CONF", dir.join("etc/slurm.conf"))
        .args(["-h", "-o", "%i"])
        .output()
        .expect("squeue");
    String::from_utf8_lossy(&out.stdout).lines().count()
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn the_cli_filter_runs_headroom_check_on_what_sbatch_submits() {
    let _one = ONE_CLUSTER.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("cluster");
    if let Err(why) = start(&dir, "polling") {
        eprintln!("SKIPPED the_cli_filter_runs_headroom_check: Slurm cannot start here ({why})");
        return;
    }
    let _cluster = Cluster(dir.clone());
    let conf = dir.join("etc/slurm.conf");
    let mut slurm_conf = std::fs::read_to_string(&conf).expect("slurm.conf");
    slurm_conf.push_str("CliFilterPlugins=cli_filter/lua\n");
    std::fs::write(&conf, slurm_conf).expect("slurm.conf");
    let bin = env!("CARGO_BIN_EXE_headroom");
    let job = repo().join("tests/slurm/jobs/arxiv_check.sbatch");
    let job = job.to_str().expect("utf-8 path");
    let cwd: PathBuf = tmp.path().join("submit");
    std::fs::create_dir_all(&cwd).expect("submit dir");

    // The site's default: warn, and submit anyway.
    install(&dir, bin, "warn");
    let warned = sbatch(&dir, &cwd, &[], &["--mem=1G", job]);
    assert!(warned.status.success(), "{}", text(&warned));
    let e = text(&warned);
    assert!(e.contains("headroom: DOES NOT FIT"), "{e}");
    assert!(e.contains("needs --mem=3G"), "{e}");
    assert!(e.contains("submitted anyway"), "{e}");
    assert_eq!(queued(&dir), 1);

    // reject: the same job is refused by sbatch itself; nothing is queued.
    install(&dir, bin, "reject");
    let refused = sbatch(&dir, &cwd, &[], &["--mem=1G", job]);
    let e = text(&refused);
    assert!(!refused.status.success(), "{e}");
    assert!(e.contains("job refused: it does not fit"), "{e}");
    assert!(e.contains("cli_filter plugin terminated with error"), "{e}");
    assert_eq!(queued(&dir), 1);

    // The script's own --mem=3G fits: submitted, the verdict in one line.
    let fits = sbatch(&dir, &cwd, &[], &[job]);
    let e = text(&fits);
    assert!(fits.status.success(), "{e}");
    assert!(e.contains("headroom: FITS"), "{e}");
    assert_eq!(e.matches("headroom:").count(), 1, "{e}");

    // A --wrap command is checked from the submit directory, and the file
    // written for it is gone afterwards.
    let train = repo().join("tests/fixtures/scripts/ogb_dashes/gnn_neighbor.py");
    let wrap = format!(
        "python3 -u {} --dataset ogbn-arxiv --batch-size 512 --fan-out=10,5 --num-workers 0",
        train.display()
    );
    let wrapped = sbatch(&dir, &cwd, &[], &["--mem=1G", "--wrap", &wrap]);
    let e = text(&wrapped);
    assert!(!wrapped.status.success(), "{e}");
    assert!(e.contains("DOES NOT FIT"), "{e}");
    let left: Vec<_> = std::fs::read_dir(&cwd).expect("submit dir").collect();
    assert!(left.is_empty(), "left in the submit dir: {left:?}");

    // What headroom cannot read is no GNN training: submitted, silently.
    let plain = sbatch(&dir, &cwd, &[], &["--mem=100M", "--wrap", "sleep 1"]);
    let e = text(&plain);
    assert!(plain.status.success(), "{e}");
    assert!(!e.contains("headroom"), "{e}");

    // A user's HEADROOM_CLI_FILTER=off passes the job that was refused.
    let off = sbatch(
        &dir,
        &cwd,
        &[("HEADROOM_CLI_FILTER", "off")],
        &["--mem=1G", job],
    );
    assert!(off.status.success(), "{}", text(&off));
    assert!(!text(&off).contains("headroom"), "{}", text(&off));

    // A missing headroom never blocks a submission.
    install(&dir, "/nonexistent/headroom", "reject");
    let missing = sbatch(&dir, &cwd, &[], &["--mem=1G", job]);
    assert!(missing.status.success(), "{}", text(&missing));
    assert_eq!(queued(&dir), 5);
}
