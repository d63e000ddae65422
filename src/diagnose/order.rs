//! Sentences the verdict adds when the evidence is more than one line: which
//! rank of a distributed job failed first, and, when causes compete, the
//! order their lines appeared in, so the reader sees why the root cause is
//! the one named and not the line printed last (a worker's "killed by
//! signal" often comes before Slurm's proof that the OOM killer sent it).

use std::collections::BTreeMap;

use super::category::Category;
use super::evidence::Evidence;

/// "Rank 3 (local rank 3) failed first." when torchrun said which.
pub fn rank_sentence(numbers: &BTreeMap<String, u64>) -> Option<String> {
    let rank = numbers.get("failed_rank");
    let local = numbers.get("failed_local_rank");
    Some(match (rank, local) {
        (Some(r), Some(l)) => format!(
            " Rank {r} (local rank {l}) failed first; the other ranks were stopped after it."
        ),
        (None, Some(l)) => {
            format!(" Local rank {l} failed first; the other ranks were stopped after it.")
        }
        (Some(r), None) => format!(" Rank {r} failed first."),
        (None, None) => return None,
    })
}

/// The first line of the root cause and of each competing cause, in the
/// order they appear, when there is more than one cause to order.
pub fn evidence_order(items: &[Evidence], root: Category, chain: &[Category]) -> Option<String> {
    if chain.is_empty() {
        return None;
    }
    let mut firsts: Vec<&Evidence> = Vec::new();
    for cat in std::iter::once(root).chain(chain.iter().copied()) {
        let first = items
            .iter()
            .filter(|e| e.category == cat && e.line.is_some())
            .min_by_key(|e| (e.source.clone(), e.line));
        firsts.extend(first);
    }
    if firsts.len() < 2 {
        return None;
    }
    firsts.sort_by_key(|e| (e.source.clone(), e.line));
    let listed: Vec<String> = firsts
        .iter()
        .map(|e| format!("{} ({}, {})", e.category, e.kind, e.location()))
        .collect();
    Some(format!(
        " Evidence in the order it appears: {}; {} is named the root cause because its evidence is the strongest and most fundamental, not because of its place.",
        listed.join(", then "),
        root
    ))
}
