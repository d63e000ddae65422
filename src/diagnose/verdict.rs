//! The verdict: from all evidence, the root cause, how sure, and the chain of
//! consequences. Pure: no I/O, so `watch` can call it with the facts it
//! measured (exit status, the cgroup's oom_kill counter) and a stderr tail.
//!
//! Ranking: a cause backed by at least "likely" evidence beats a consequence
//! (a DataLoader worker killed, a Python traceback), because a worker killed
//! by the OOM killer makes the main process die of "worker killed"; among
//! causes, stronger evidence wins, then the more fundamental cause (host OOM
//! over CUDA OOM over /dev/shm over time limit ...).

use std::collections::BTreeMap;

use super::advice;
use super::category::{Category, Confidence};
use super::evidence::{Evidence, EvidenceSet};
use super::exit::ExitStatus;
use super::parse::cuda_oom::CudaOom;
use super::report::Diagnosis;

/// What a scan of the logs found (see [`super::LogScanner::finish`]).
#[derive(Debug, Default)]
pub struct Findings {
    /// The evidence lines, bounded per kind.
    pub evidence: EvidenceSet,
    /// The last exit status a log reported (torchrun, srun, sacct, seff).
    pub exit_from_logs: Option<ExitStatus>,
    /// The numbers of the CUDA OOM message, when there was one.
    pub cuda_oom: Option<CudaOom>,
}

/// Facts measured rather than read from logs (flags, `watch`'s counters).
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// The job's exit status (`--exit-code`, or what `watch` saw).
    pub exit: Option<ExitStatus>,
    /// How many OOM kills the job's memory cgroup counted during the run
    /// (v1 `memory.oom_control` oom_kill, v2 `memory.events` oom_kill).
    pub cgroup_oom_kills: Option<u64>,
    /// The cgroup's memory limit, when known.
    pub cgroup_limit_bytes: Option<u64>,
}

/// How fundamental a cause is, for breaking ties between equally strong ones.
fn depth(c: Category) -> u8 {
    match c {
        Category::HostOomCgroup | Category::HostOomRssSum => 12,
        Category::HostOomKernel => 11,
        Category::CudaOomOtherProcess => 10,
        Category::CudaOomFragmentation | Category::CudaOomCapacity => 10,
        Category::HostAllocFailed => 9,
        Category::ShmBusError => 9,
        Category::TimeLimit => 8,
        Category::Segfault => 7,
        Category::Nccl => 6,
        Category::Sigpipe => 5,
        Category::DataloaderWorkerKilled => 3,
        Category::PythonError => 2,
        Category::Success => 1,
        Category::Unknown => 0,
    }
}

/// Categories that are usually the consequence of another cause.
fn is_consequence(c: Category) -> bool {
    matches!(
        c,
        Category::DataloaderWorkerKilled | Category::PythonError | Category::Success
    )
}

/// Two categories that are one event seen at two levels.
fn same_family(a: Category, b: Category) -> bool {
    let host = |c| {
        matches!(
            c,
            Category::HostOomCgroup | Category::HostOomKernel | Category::HostOomRssSum
        )
    };
    let cuda = |c| {
        matches!(
            c,
            Category::CudaOomCapacity
                | Category::CudaOomFragmentation
                | Category::CudaOomOtherProcess
        )
    };
    a == b || (host(a) && host(b)) || (cuda(a) && cuda(b))
}

/// Names the root cause and the chain from everything found.
pub fn verdict_from_evidence(findings: Findings, facts: &Facts) -> Diagnosis {
    let Findings {
        evidence,
        exit_from_logs,
        cuda_oom,
    } = findings;
    let dropped = evidence.dropped();
    let mut items = evidence.into_items();
    let foreign = super::attribution::foreign_kills(&mut items);
    let units = super::attribution::polling_units(&mut items);
    items.extend(super::attribution::accounting_kill(&items));
    let exit = facts.exit.clone().or(exit_from_logs);
    if let Some(status) = &facts.exit
        && let Some((cat, strength)) = status.hint()
    {
        let ev = Evidence::fact("exit_status", cat, strength, "--exit-code", &status.meaning);
        items.push(ev.with_label(status.raw.clone()));
    }
    if let Some(kills) = facts.cgroup_oom_kills.filter(|&k| k > 0) {
        let text = format!("the job's memory cgroup counted {kills} oom_kill event(s)");
        let ev = Evidence::fact(
            "cgroup_oom_kill_counter",
            Category::HostOomCgroup,
            Confidence::Certain,
            "cgroup",
            &text,
        );
        items.push(
            ev.with("oom_kill_events", Some(kills))
                .with("cgroup_limit_bytes", facts.cgroup_limit_bytes),
        );
    }
    let strengths = category_strengths(&items, exit.as_ref());
    let root = pick_root(&strengths);
    let (category, confidence) = root.unwrap_or((Category::Unknown, Confidence::Possible));
    let chain: Vec<Category> = strengths
        .iter()
        .filter(|(c, s)| {
            !same_family(**c, category)
                && **s >= Confidence::Likely
                && !matches!(
                    c,
                    Category::PythonError | Category::Success | Category::Unknown
                )
        })
        .map(|(c, _)| *c)
        .collect();
    // Root evidence first, then the chain's, then context; stable within each.
    let rank = |e: &Evidence| {
        if same_family(e.category, category) {
            0
        } else if chain.contains(&e.category) {
            1
        } else {
            2
        }
    };
    items.sort_by_key(|e| (rank(e), std::cmp::Reverse(e.strength)));
    // One line can be read by two parsers (the CUDA OOM message is also the
    // traceback's exception line): show it once, under its strongest reading.
    let mut shown = std::collections::HashSet::new();
    items.retain(|e| e.line.is_none() || shown.insert((e.source.clone(), e.line)));
    let mut numbers = BTreeMap::new();
    for ev in &items {
        for (k, v) in &ev.numbers {
            numbers.entry(k.to_string()).or_insert(*v);
        }
    }
    let cuda_oom = cuda_oom.filter(|_| {
        same_family(category, Category::CudaOomCapacity)
            || chain
                .iter()
                .any(|c| same_family(*c, Category::CudaOomCapacity))
    });
    let root_items: Vec<&Evidence> = items
        .iter()
        .filter(|e| same_family(e.category, category))
        .collect();
    let advice = advice::advise(
        category,
        confidence,
        &root_items,
        &numbers,
        cuda_oom.as_ref(),
        exit.as_ref(),
    );
    let mut verdict = advice.verdict;
    if category == Category::HostOomRssSum {
        verdict.extend(units);
    }
    verdict.extend(poll_missed(category, &numbers));
    if !foreign.is_empty() {
        let jobs: Vec<String> = foreign.iter().map(|j| format!("job {j}")).collect();
        verdict.push_str(&format!(
            " The node's kernel log also holds OOM kills of other cgroups ({}); they are not this job's.",
            jobs.join(", ")
        ));
    } else if items
        .iter()
        .any(|e| e.label.as_deref() == Some("not this job's"))
    {
        verdict.push_str(" The node's kernel log also holds OOM kills of other cgroups; they are not this job's.");
    }
    verdict.extend(super::order::rank_sentence(&numbers));
    verdict.extend(super::order::evidence_order(&items, category, &chain));
    Diagnosis {
        category,
        confidence,
        verdict,
        confidence_reason: advice.confidence_reason,
        exit,
        chain,
        evidence: items,
        evidence_not_shown: dropped,
        numbers,
        expandable_what_if: cuda_oom
            .as_ref()
            .and_then(super::cuda_advice::expandable_what_if),
        cuda_oom,
        fix: advice.fix,
        next_steps: advice.next_steps,
        recommendation: None,
        recommended: None,
        inputs: Vec::new(),
    }
}

/// A cgroup kill with a peak RSS below the request: the accounting poll
/// sampled before the growth the kernel saw; MaxRSS is no measure of it.
fn poll_missed(category: Category, numbers: &BTreeMap<String, u64>) -> Option<String> {
    let req = *numbers.get("req_mem_bytes")?;
    let rss = numbers.get("max_rss_bytes").copied().unwrap_or(0);
    (category == Category::HostOomCgroup && rss < req).then(|| {
        format!(
            " Slurm's recorded peak ({}) is below the {} limit: its accounting poll sampled before the growth the kernel's OOM killer saw, so that figure understates the job.",
            crate::units::fmt_bytes(rss),
            crate::units::fmt_bytes(req)
        )
    })
}

/// The strongest evidence per category, after the combinations the issue
/// names: a bare "Killed" line with a SIGKILL status is "likely" kernel OOM;
/// a traceback with exit status 1 is certainly a Python error.
fn category_strengths(
    items: &[Evidence],
    exit: Option<&ExitStatus>,
) -> BTreeMap<Category, Confidence> {
    let mut best: BTreeMap<Category, Confidence> = BTreeMap::new();
    for ev in items {
        let slot = best.entry(ev.category).or_insert(ev.strength);
        *slot = (*slot).max(ev.strength);
    }
    let has = |kind: &str| items.iter().any(|e| e.kind == kind);
    let sigkill = exit.is_some_and(|s| s.signal == Some(9));
    if sigkill && (has("bare_killed") || has("srun_task_killed")) {
        let slot = best
            .entry(Category::HostOomKernel)
            .or_insert(Confidence::Likely);
        *slot = (*slot).max(Confidence::Likely);
    }
    if exit.is_some_and(|s| s.code == Some(1) && s.signal.is_none()) && has("python_exception") {
        best.insert(Category::PythonError, Confidence::Certain);
    }
    best.remove(&Category::Unknown);
    best
}

fn pick_root(strengths: &BTreeMap<Category, Confidence>) -> Option<(Category, Confidence)> {
    let key = |(c, s): (&Category, &Confidence)| (*s, depth(*c));
    let causes = strengths
        .iter()
        .filter(|(c, s)| !is_consequence(**c) && **s >= Confidence::Likely)
        .max_by_key(|p| key(*p));
    causes
        .or_else(|| strengths.iter().max_by_key(|p| key(*p)))
        .map(|(c, s)| (*c, *s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::LogScanner;

    /// What `watch` does: a stderr tail plus the facts it measured.
    #[test]
    fn watch_facts_make_a_worker_death_a_certain_cgroup_oom() {
        let mut scanner = LogScanner::new();
        scanner.feed_line(
            "stderr",
            1,
            "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.",
        );
        let facts = Facts {
            exit: Some(ExitStatus::parse("-9").unwrap()),
            cgroup_oom_kills: Some(1),
            cgroup_limit_bytes: Some(8 << 30),
        };
        let d = verdict_from_evidence(scanner.finish(), &facts);
        assert_eq!(d.category, Category::HostOomCgroup);
        assert_eq!(d.confidence, Confidence::Certain);
        assert_eq!(d.chain, vec![Category::DataloaderWorkerKilled]);
        assert_eq!(d.numbers.get("cgroup_limit_bytes"), Some(&(8u64 << 30)));
        assert_eq!(d.evidence[0].kind, "cgroup_oom_kill_counter");
    }

    #[test]
    fn a_zero_counter_proves_nothing_and_sigkill_alone_stays_possible() {
        let facts = Facts {
            exit: Some(ExitStatus::parse("137").unwrap()),
            cgroup_oom_kills: Some(0),
            cgroup_limit_bytes: None,
        };
        let d = verdict_from_evidence(Findings::default(), &facts);
        assert_eq!(
            (d.category, d.confidence),
            (Category::HostOomKernel, Confidence::Possible)
        );
        assert!(!d.next_steps.is_empty());
    }

    #[test]
    fn nothing_at_all_is_unknown() {
        let d = verdict_from_evidence(Findings::default(), &Facts::default());
        assert_eq!(d.category, Category::Unknown);
    }
}
