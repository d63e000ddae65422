//! Slurm accounting: what its states prove, its sizes, and `seff` reports
//! (sacct's tables are read in [`super::sacct`]). States such as
//! OUT_OF_MEMORY and TIMEOUT are proof; MaxRSS and ReqMem are the numbers.
//!
//! sacct prints sizes with binary suffixes (`263G`, `1234K`); ReqMem may end
//! in `n` (per node) or `c` (per CPU). seff prints "GB" but divides by 1024,
//! so its units are read as binary too.

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

/// What an accounting state proves. sacct's default layout cuts a state to
/// its column and marks the cut with `+` (`OUT_OF_ME+`), so a cut word is
/// matched by its prefix.
pub fn state_meaning(state: &str) -> Option<(&'static str, Category, Confidence)> {
    use Confidence::*;
    let word = state.split_whitespace().next().unwrap_or("");
    let (word, cut) = match word.strip_suffix('+') {
        Some(w) => (w, true),
        None => (word, false),
    };
    let is = |full: &str| word == full || (cut && word.len() >= 6 && full.starts_with(word));
    Some(if is("OUT_OF_MEMORY") {
        ("sacct_out_of_memory", Category::HostOomCgroup, Certain)
    } else if is("TIMEOUT") {
        ("sacct_timeout", Category::TimeLimit, Certain)
    } else if is("PREEMPTED") {
        ("sacct_preempted", Category::TimeLimit, Certain)
    } else if is("CANCELLED") {
        ("sacct_cancelled", Category::TimeLimit, Likely)
    } else if is("FAILED") {
        // Ended by itself with a nonzero status, or killed by a signal Slurm
        // did not attribute (a polling kill reads FAILED 0:9): weak alone.
        ("sacct_failed", Category::PythonError, Possible)
    } else {
        return None;
    })
}

/// `263G`, `1234K`, `256Gn`, `4000Mc`, `127.87 GB`: binary units; a bare
/// number is KiB as sacct's MaxRSS reports it.
pub fn binary_size(text: &str) -> Option<u64> {
    let t = text.trim().trim_end_matches(['n', 'c']).trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().ok()?;
    let shift = match unit
        .trim()
        .to_ascii_uppercase()
        .trim_end_matches("IB")
        .trim_end_matches('B')
    {
        "" | "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return None,
    };
    let b = v * (1u64 << shift) as f64;
    (b.is_finite() && b < 1e19).then(|| b.round() as u64)
}

/// Reads one line of `seff` output.
pub fn seff_line(at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix("State: ") {
        let meaning = state_meaning(rest);
        if let Some((kind, cat, strength)) = meaning {
            out.push(Evidence::line(kind, cat, strength, at, line));
        }
        // seff prints only the exit half of Slurm's `exit:signal`: for a job
        // the OOM handler, a polling kill or the time limit ended it is 0 and
        // says nothing (`State: FAILED (exit code 0)` after a SIGKILL). The
        // code is the job's status only when the job COMPLETED, or FAILED
        // with a nonzero code.
        let failed = rest.starts_with("FAILED");
        if let Some(code) = rest
            .split("(exit code ")
            .nth(1)
            .and_then(|s| s.strip_suffix(')'))
            && (rest.starts_with("COMPLETED") || (failed && code != "0"))
            && let Ok(status) = ExitStatus::parse(code)
        {
            out.exit_status(status, at, line);
        }
    } else if let Some(rest) = t.strip_prefix("Job ID: ") {
        out.push(
            Evidence::line(
                "slurm_job_id",
                Category::Unknown,
                Confidence::Possible,
                at,
                line,
            )
            .with("slurm_job_id", rest.trim().parse().ok()),
        );
    } else if let Some(rest) = t.strip_prefix("Memory Utilized: ") {
        out.push(
            Evidence::line(
                "seff_memory_utilized",
                Category::Unknown,
                Confidence::Possible,
                at,
                line,
            )
            .with("max_rss_bytes", binary_size(rest)),
        );
    } else if let Some(rest) = t.strip_prefix("Memory Efficiency: ") {
        let of = rest.split(" of ").nth(1).and_then(binary_size);
        out.push(
            Evidence::line(
                "seff_memory_efficiency",
                Category::Unknown,
                Confidence::Possible,
                at,
                line,
            )
            .with("req_mem_bytes", of),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::binary_size;

    #[test]
    fn sacct_and_seff_sizes_are_binary() {
        assert_eq!(binary_size("263G"), Some(263 << 30));
        assert_eq!(binary_size("256Gn"), Some(256 << 30));
        assert_eq!(binary_size("4000Mc"), Some(4000 << 20));
        assert_eq!(binary_size("1234K"), Some(1234 << 10));
        assert_eq!(binary_size("1234"), Some(1234 << 10));
        // 128.00 GB in seff = 128 GiB.
        assert_eq!(binary_size("128.00 GB"), Some(128 << 30));
        assert_eq!(binary_size(""), None);
        assert_eq!(binary_size("lots"), None);
    }
}
