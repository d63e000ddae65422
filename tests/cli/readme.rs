//! README against the things it describes: the minimum Rust it states is
//! Cargo.toml's `rust-version` and what the locked dependencies need, it
//! installs in one command, and every section that quotes a measured figure
//! names where the figure comes from (a command, a benchmark, a test or a
//! source file), so a stale figure can be found and regenerated.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// `1.95` -> (1, 95); a patch level is ignored.
fn version(v: &str) -> (u32, u32) {
    let mut it = v.trim().split('.').map(|p| p.parse::<u32>().unwrap());
    (it.next().unwrap(), it.next().unwrap_or(0))
}

/// The triple rustc builds for by default (`host: x86_64-unknown-linux-gnu`).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .trim()
        .to_string()
}

/// Language features headroom's own code uses: let chains in `if` (1.88).
const OWN_FLOOR: (u32, u32) = (1, 88);

#[test]
fn the_stated_minimum_rust_is_what_the_locked_dependencies_need() {
    // Only the packages built for this machine: a Linux build never downloads
    // another platform's crates (anstyle-wincon, windows-sys), so asking for
    // the whole graph offline fails on a fresh cargo home.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let host = host_triple();
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let ours = packages
        .iter()
        .find(|p| p["name"] == "headroom")
        .and_then(|p| p["rust_version"].as_str())
        .expect("Cargo.toml sets rust-version");
    let (need, who) = packages
        .iter()
        .filter(|p| p["name"] != "headroom")
        .filter_map(|p| Some((version(p["rust_version"].as_str()?), p["name"].to_string())))
        .max()
        .unwrap();
    assert_eq!(
        version(ours),
        need.max(OWN_FLOOR),
        "rust-version {ours}, but {who} needs {need:?}"
    );
    let stated = format!("Rust {ours} or newer");
    assert!(readme().contains(&stated), "README does not say {stated:?}");
}

#[test]
fn the_readme_installs_the_binary_in_one_command() {
    let text = readme();
    assert!(text.contains("cargo install --locked --path ."));
    // The command installs the package's binary target, `headroom`.
    let manifest = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    assert!(manifest.contains("name = \"headroom\""));
    assert!(root().join("src/main.rs").is_file());
}

#[test]
fn every_section_with_measured_figures_names_their_source() {
    // A figure with a unit in the prose (sizes in a code block are the
    // command's inputs or its printed output); a source anywhere in the
    // section, code blocks included (`$ headroom calibrate` above its output).
    let figure =
        regex::Regex::new(r"\d[\d,.]*\s?(%|ms\b|ns\b|s\b|MiB|GiB|KiB|GB\b|MB\b|KB\b|B\b)").unwrap();
    let sources = [
        "`cargo ",
        "`headroom ",
        "$ cargo ",
        "$ headroom ",
        "benches/",
        "examples/",
        "tests/",
        "src/",
        ".ci/",
        "docs/",
        "seeds/",
        "profiles/",
        ".cpp",
    ];
    struct Section {
        heading: String,
        prose: String,
        all: String,
    }
    let text = readme();
    let mut sections = vec![Section {
        heading: "(top)".into(),
        prose: String::new(),
        all: String::new(),
    }];
    let mut in_code = false;
    for line in text.lines() {
        if line.starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && line.starts_with('#') {
            sections.push(Section {
                heading: line.to_string(),
                prose: String::new(),
                all: String::new(),
            });
            continue;
        }
        let s = sections.last_mut().unwrap();
        if !in_code {
            s.prose.push_str(line);
            s.prose.push('\n');
        }
        s.all.push_str(line);
        s.all.push('\n');
    }
    let missing: Vec<&str> = sections
        .iter()
        .filter(|s| figure.is_match(&s.prose))
        .filter(|s| !sources.iter().any(|m| s.all.contains(m)))
        .map(|s| s.heading.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "sections quoting figures without naming where they come from: {missing:?}"
    );
}

/// The README's transcripts of `plan`, `check` and `diagnose` (a code block
/// that is one `$ headroom ...` line and its whole output) are what the
/// binary prints today: a changed estimate or message makes this fail until
/// the transcript is regenerated. Excerpts (`...`) are skipped.
#[test]
fn the_readme_transcripts_are_what_the_binary_prints() {
    let text = readme();
    let mut checked = 0;
    let mut block: Option<Vec<&str>> = None;
    for line in text.lines() {
        if line.starts_with("```") {
            match block.take() {
                None => block = Some(vec![]),
                Some(b) => checked += check_transcript(&b) as usize,
            }
            continue;
        }
        if let Some(b) = block.as_mut() {
            b.push(line);
        }
    }
    assert!(checked >= 3, "only {checked} transcripts found");
}

/// Runs the block's command and compares; false when the block is not a
/// whole transcript of a deterministic verb.
fn check_transcript(block: &[&str]) -> bool {
    let Some(cmd) = block.first().and_then(|l| l.strip_prefix("$ headroom ")) else {
        return false;
    };
    let args: Vec<&str> = cmd.split_whitespace().collect();
    let deterministic = ["plan", "check", "diagnose"].contains(&args[0]);
    let whole = block[1..]
        .iter()
        .all(|l| !l.starts_with("$ ") && !l.trim_start().starts_with("..."));
    if !deterministic || !whole || block.len() < 2 {
        return false;
    }
    let out = crate::util::headroom()
        .args(&args)
        .current_dir(root())
        .output()
        .unwrap();
    let got =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        got.trim_end(),
        block[1..].join("\n").trim_end(),
        "README transcript of `headroom {cmd}` is stale"
    );
    true
}

/// The seed-story table's peak column is `plan <job> --format json`'s peak
/// (host, or GPU where the row says GPU) and the phase it names.
#[test]
fn the_seed_table_peaks_are_what_plan_predicts() {
    let text = readme();
    // The table's rows name a job and its settings: "| `seed-001-fix` (256G, ...".
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            let mut parts = l.split('`').skip(1);
            let job = parts.next().unwrap_or("");
            job.starts_with("seed-")
                && !job.contains(' ')
                && parts.next().is_some_and(|r| r.starts_with(" ("))
        })
        .collect();
    assert!(rows.len() >= 6, "{rows:?}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let job = cells[1].split('`').nth(1).unwrap();
        let r =
            crate::util::json_of(crate::util::headroom().args(["plan", job, "--format", "json"]));
        let want = if cells[2].ends_with("GPU") {
            format!(
                "{} GPU",
                headroom::units::fmt_bytes(r["peak_gpu_bytes"].as_u64().unwrap())
            )
        } else {
            format!(
                "{} ({}",
                headroom::units::fmt_bytes(r["peak_host_bytes"].as_u64().unwrap()),
                r["peak_phase"].as_str().unwrap()
            )
        };
        assert!(
            cells[2].starts_with(&want),
            "{job}: README says {:?}, plan says {want:?}",
            cells[2]
        );
    }
}
