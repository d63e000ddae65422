//! Prints the README's accuracy table: every run of the real-run corpus
//! (tests/fixtures/pyg/corpus.jsonl) planned with the default coefficients,
//! its measured and predicted peak per accounting mode, and the summary.
//!
//!     cargo run --release --example corpus_accuracy [CORPUS.jsonl]

use headroom::calibrate::corpus::{accuracy, compare};
use headroom::estimate::Coefficients;
use headroom::units::fmt_bytes;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(path)?,
        None => headroom::calibrate::corpus::EMBEDDED.to_string(),
    };
    let rows = compare(&text, &Coefficients::default())?;
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
    println!("| accounting | runs | median abs error | max abs error | predicted > 5 % low |");
    println!("|---|---:|---:|---:|---:|");
    for mode in ["cgroup", "rss_sum"] {
        let a = accuracy(&rows, mode);
        println!(
            "| {mode} | {} | {:.1} % | {:.1} % | {} |",
            a.rows,
            100.0 * a.median_abs,
            100.0 * a.max_abs,
            a.under_5pct
        );
    }
    Ok(())
}
