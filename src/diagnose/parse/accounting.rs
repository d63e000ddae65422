//! Slurm accounting: `sacct -P` tables (any column order, found by header)
//! and `seff` reports. States such as OUT_OF_MEMORY and TIMEOUT are proof;
//! ExitCode is Slurm's `exit:signal`; MaxRSS and ReqMem are the numbers.
//!
//! sacct prints sizes with binary suffixes (`263G`, `1234K`); ReqMem may end
//! in `n` (per node) or `c` (per CPU). seff prints "GB" but divides by 1024,
//! so its units are read as binary too.

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};
use crate::diagnose::exit::ExitStatus;

/// Column positions of a `sacct -P` header.
#[derive(Debug, Default, Clone)]
pub struct SacctTable {
    state: Option<usize>,
    exit_code: Option<usize>,
    max_rss: Option<usize>,
    req_mem: Option<usize>,
    job_id: Option<usize>,
}

impl SacctTable {
    /// Reads a header line (`JobID|State|ExitCode|MaxRSS|ReqMem`), if it is one.
    pub fn from_header(line: &str) -> Option<Self> {
        if !line.contains('|') {
            return None;
        }
        let mut t = SacctTable::default();
        for (i, name) in line.trim().split('|').enumerate() {
            match name.trim() {
                "State" => t.state = Some(i),
                "ExitCode" => t.exit_code = Some(i),
                "MaxRSS" => t.max_rss = Some(i),
                "ReqMem" => t.req_mem = Some(i),
                "JobID" | "JobIDRaw" => t.job_id = Some(i),
                _ => {}
            }
        }
        (t.state.is_some() || t.exit_code.is_some()).then_some(t)
    }

    /// Reads one data row.
    pub fn row(&self, at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
        let fields: Vec<&str> = line.trim().split('|').collect();
        let get = |i: Option<usize>| i.and_then(|i| fields.get(i)).map(|s| s.trim());
        let state = get(self.state).unwrap_or("");
        let numbers = |ev: Evidence| {
            ev.with("max_rss_bytes", get(self.max_rss).and_then(binary_size))
                .with("req_mem_bytes", get(self.req_mem).and_then(binary_size))
        };
        if let Some((kind, cat, strength)) = state_meaning(state) {
            out.push(numbers(Evidence::line(kind, cat, strength, at, line)));
        } else if get(self.max_rss).is_some_and(|s| !s.is_empty()) {
            out.push(numbers(Evidence::line(
                "sacct_row",
                Category::Unknown,
                Confidence::Possible,
                at,
                line,
            )));
        }
        // The allocation's own row (no `.batch`/`.0`) carries the job's status.
        let is_job_row = get(self.job_id).is_none_or(|id| !id.contains('.'));
        if let (true, Some(code)) = (is_job_row, get(self.exit_code))
            && let Ok(status) = ExitStatus::parse(code)
        {
            out.exit_status(status, at, line);
        }
    }
}

/// What an accounting state proves.
fn state_meaning(state: &str) -> Option<(&'static str, Category, Confidence)> {
    use Confidence::*;
    let word = state.split_whitespace().next().unwrap_or("");
    Some(match word {
        "OUT_OF_MEMORY" => ("sacct_out_of_memory", Category::HostOomCgroup, Certain),
        "TIMEOUT" => ("sacct_timeout", Category::TimeLimit, Certain),
        "PREEMPTED" => ("sacct_preempted", Category::TimeLimit, Certain),
        "CANCELLED" => ("sacct_cancelled", Category::TimeLimit, Likely),
        _ => return None,
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
        if let Some((kind, cat, strength)) = state_meaning(rest) {
            out.push(Evidence::line(kind, cat, strength, at, line));
        }
        if let Some(code) = rest
            .split("(exit code ")
            .nth(1)
            .and_then(|s| s.strip_suffix(')'))
            && let Ok(status) = ExitStatus::parse(code)
        {
            out.exit_status(status, at, line);
        }
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
