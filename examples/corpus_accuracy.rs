//! Prints docs/accuracy.md's tables: every run of the real-run corpus
//! (tests/fixtures/pyg/corpus.jsonl) planned with the default coefficients,
//! its measured and predicted peak per accounting mode, and the summary.
//!
//!     cargo run --release --example corpus_accuracy [CORPUS.jsonl]
//!
//! With `--phases` it prints every phase of every run instead (measured and
//! predicted), the view for finding which mechanism a wrong peak comes from.
//! With `--summary` it prints only the summary (a sealed set's score: its
//! rows are not to be looked at one by one). A row headroom cannot plan
//! (its job spec is refused) is counted apart, by reason, not dropped.

use headroom::calibrate::corpus::{accuracy, compare};
use headroom::estimate::Coefficients;
use headroom::units::fmt_bytes;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let flag = |f: &str| std::env::args().any(|a| a == f);
    let (phases, summary) = (flag("--phases"), flag("--summary"));
    let text = match std::env::args().skip(1).find(|a| !a.starts_with("--")) {
        Some(path) => std::fs::read_to_string(path)?,
        None => headroom::calibrate::corpus::EMBEDDED.to_string(),
    };
    let mut rows = Vec::new();
    let mut refused = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match compare(line, &Coefficients::default()) {
            Ok(r) => rows.extend(r),
            Err(e) => refused.push(e.to_string()),
        }
    }
    if summary {
        print_summary(&rows);
        println!();
        println!("rows headroom could not plan: {}", refused.len());
        for e in &refused {
            // The reason only (the spec field refused), not the row's figures.
            println!("  {}", e.split(": job: ").nth(1).unwrap_or(e));
        }
        return Ok(());
    }
    for e in &refused {
        eprintln!("not planned: {e}");
    }
    if phases {
        println!("| run | accounting | phase | measured | predicted | error |");
        println!("|---|---|---|---:|---:|---:|");
        for r in &rows {
            for (phase, m, p) in &r.phases {
                let e = 100.0 * (*p as f64 - *m as f64) / *m as f64;
                let (m, p) = (fmt_bytes(*m), fmt_bytes(*p));
                println!(
                    "| {} | {} | {phase} | {m} | {p} | {e:+.1} % |",
                    r.id, r.accounting
                );
            }
        }
        return Ok(());
    }
    println!("| run | accounting | measured | predicted | error | peak phase |");
    println!("|---|---|---:|---:|---:|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {:+.1} % | {} |",
            r.id,
            r.accounting,
            fmt_bytes(r.measured),
            fmt_bytes(r.predicted),
            100.0 * r.error(),
            r.phase
        );
    }
    println!();
    print_summary(&rows);
    Ok(())
}

fn print_summary(rows: &[headroom::calibrate::corpus::Compared]) {
    println!("| accounting | runs | median abs error | max abs error | predicted > 5 % low |");
    println!("|---|---:|---:|---:|---:|");
    for mode in ["cgroup", "rss_sum"] {
        let a = accuracy(rows, mode);
        println!(
            "| {mode} | {} | {:.1} % | {:.1} % | {} |",
            a.rows,
            100.0 * a.median_abs,
            100.0 * a.max_abs,
            a.under_5pct
        );
    }
}
