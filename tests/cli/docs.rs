//! README.md and every page of docs/ against the things they describe: each
//! section that quotes a measured figure names where the figure comes from
//! (a command, a benchmark, a test or a source file), so a stale figure can
//! be found and regenerated; each whole transcript of `plan`, `check` or
//! `diagnose` is what the binary prints today (benches/readme_transcripts.py
//! regenerates them); the seed stories' table is what `plan` predicts.

use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every Markdown page under docs/, with their text.
pub fn pages() -> Vec<(PathBuf, String)> {
    let mut paths = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

fn page(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap()
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
    let mut missing = Vec::new();
    for (path, text) in pages() {
        let name = path.strip_prefix(root()).unwrap().display().to_string();
        missing.extend(
            sections_of(&text)
                .iter()
                .filter(|s| figure.is_match(&s.prose))
                .filter(|s| !sources.iter().any(|m| s.all.contains(m)))
                .map(|s| format!("{name} {}", s.heading)),
        );
    }
    assert!(
        missing.is_empty(),
        "sections quoting figures without naming where they come from: {missing:?}"
    );
}

struct Section {
    heading: String,
    prose: String,
    all: String,
}

/// A page cut at its headings (a `#` line outside a code block); the text
/// before the first is "(top)".
fn sections_of(text: &str) -> Vec<Section> {
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
    sections
}

/// The transcripts of `plan`, `check` and `diagnose` in the README and in
/// docs/ (a code block that is one `$ headroom ...` line and its whole
/// output) are what the binary prints today: a changed estimate or message
/// makes this fail until the transcript is regenerated. Excerpts (`...`) are
/// skipped. The README's own workflows are among them.
#[test]
fn the_transcripts_are_what_the_binary_prints() {
    let mut checked = 0;
    for (path, text) in pages() {
        let mut block: Option<Vec<&str>> = None;
        let mut here = 0;
        for line in text.lines() {
            if line.starts_with("```") {
                match block.take() {
                    None => block = Some(vec![]),
                    Some(b) => here += check_transcript(&path, &b) as usize,
                }
                continue;
            }
            if let Some(b) = block.as_mut() {
                b.push(line);
            }
        }
        if path.ends_with("README.md") {
            assert!(here >= 2, "README: only {here} whole transcripts");
        }
        checked += here;
    }
    assert!(checked >= 5, "only {checked} transcripts found");
}

/// Runs the block's command and compares; false when the block is not a
/// whole transcript of a deterministic verb.
fn check_transcript(page: &Path, block: &[&str]) -> bool {
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
        "{}: transcript of `headroom {cmd}` is stale (python3 benches/readme_transcripts.py)",
        page.display()
    );
    true
}

/// docs/plan.md's seed-story table: its peak column is `plan <job> --format json`'s peak
/// (host, or GPU where the row says GPU) and the phase it names.
#[test]
fn the_seed_table_peaks_are_what_plan_predicts() {
    let text = page("docs/plan.md");
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
