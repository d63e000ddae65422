//! Kernel log lines (dmesg, journalctl -k, Kubernetes status and events): the OOM
//! killer's report from mm/oom_kill.c in its current and older wordings, the
//! memory cgroup's usage line, and segfault reports.
//!
//! Current kernels print `oom-kill:constraint=CONSTRAINT_MEMCG,...` and then
//! `Memory cgroup out of memory: Killed process 1234 (python) total-vm:..kB,
//! anon-rss:..kB, file-rss:..kB, shmem-rss:..kB, UID:0 pgtables:..kB
//! oom_score_adj:0` (global: `Out of memory: Killed process ...`). Before
//! 4.19 the first line was `Kill process 1234 (python) score 900 or sacrifice
//! child`, followed by a separate `Killed process ...` line with the sizes.

use std::sync::LazyLock;

use regex::Regex;

use super::Sink;
use crate::diagnose::category::{Category, Confidence};
use crate::diagnose::evidence::{Evidence, Location};

struct Patterns {
    verdict_line: Regex,
    killed_sizes: Regex,
    constraint: Regex,
    task_pid: Regex,
    memcg_job: Regex,
    memcg_usage: Regex,
    segfault: Regex,
}

static RE: LazyLock<Patterns> = LazyLock::new(|| {
    let r = |p: &str| Regex::new(p).expect("static regex");
    Patterns {
        verdict_line: r(
            r"(Memory cgroup out of memory|Out of memory(?: \([a-z_]+\))?): Kill(?:ed)? process (\S+) \(([^)]*)\)",
        ),
        killed_sizes: r(
            r"Killed process ([0-9]+) \([^)]*\),?(?: UID [0-9]+,)? total-vm:([0-9]+)kB, anon-rss:([0-9]+)kB, file-rss:([0-9]+)kB(?:, shmem-rss:([0-9]+)kB)?",
        ),
        constraint: r(r"oom-kill:constraint=CONSTRAINT_([A-Z]+)"),
        task_pid: r(r",pid=([0-9]+)"),
        // Slurm's job cgroup of the killed task (task_memcg) or of the limit
        // that was hit (oom_memcg): `…/slurm_node/uid_0/job_4/step_batch/…`.
        memcg_job: r(r"(?:task_memcg|oom_memcg)=[^,]*/job_([0-9]+)(?:[/,]|$)"),
        memcg_usage: r(r"memory: usage ([0-9]+)kB, limit ([0-9]+)kB, failcnt ([0-9]+)"),
        segfault: r(r"\[([0-9]+)\]: segfault at [0-9a-f]+ ip"),
    }
});

fn kib(n: Option<regex::Match<'_>>) -> Option<u64> {
    n?.as_str().parse::<u64>().ok()?.checked_mul(1024)
}

fn num(n: Option<regex::Match<'_>>) -> Option<u64> {
    n?.as_str().parse().ok()
}

/// Reads one kernel log line.
pub fn parse(at: &Location<'_>, line: &str, out: &mut Sink<'_>) {
    use Confidence::*;
    let re = &*RE;
    if let Some(c) = re.verdict_line.captures(line) {
        let cgroup = c[1].starts_with("Memory cgroup");
        let (kind, category) = if cgroup {
            ("kernel_cgroup_oom_kill", Category::HostOomCgroup)
        } else {
            ("kernel_global_oom_kill", Category::HostOomKernel)
        };
        let mut ev = Evidence::line(kind, category, Certain, at, line)
            .with("killed_pid", num(c.get(2)))
            .with_label(c[3].to_string());
        if let Some(s) = re.killed_sizes.captures(line) {
            ev = sizes(ev, &s);
        }
        out.push(ev);
    } else if let Some(s) = re.killed_sizes.captures(line) {
        // Old kernels: the sizes on a line of their own, after "or sacrifice child".
        let ev = Evidence::line(
            "kernel_killed_process",
            Category::HostOomKernel,
            Likely,
            at,
            line,
        )
        .with("killed_pid", num(s.get(1)));
        out.push(sizes(ev, &s));
    } else if let Some(c) = re.constraint.captures(line) {
        let category = if &c[1] == "MEMCG" {
            Category::HostOomCgroup
        } else {
            Category::HostOomKernel
        };
        out.push(
            Evidence::line("kernel_oom_constraint", category, Certain, at, line)
                .with(
                    "killed_pid",
                    re.task_pid.captures(line).and_then(|p| num(p.get(1))),
                )
                .with(
                    "oom_job_id",
                    re.memcg_job.captures(line).and_then(|j| num(j.get(1))),
                ),
        );
    } else if let Some(c) = re.memcg_usage.captures(line) {
        out.push(
            Evidence::line(
                "kernel_memcg_usage",
                Category::HostOomCgroup,
                Possible,
                at,
                line,
            )
            .with("cgroup_usage_bytes", kib(c.get(1)))
            .with("cgroup_limit_bytes", kib(c.get(2)))
            .with("cgroup_failcnt", num(c.get(3))),
        );
    } else if line.contains("invoked oom-killer") {
        // Both the cgroup and the global killer write this; the lines that
        // follow say which one it was.
        out.push(Evidence::line(
            "kernel_oom_invoked",
            Category::HostOomKernel,
            Likely,
            at,
            line,
        ));
    } else if line.contains("low on resource: memory") || line.contains("[MemoryPressure]") {
        // The kubelet evicting pods because the node ran short: no cgroup
        // limit was hit, the node as a whole was out.
        out.push(Evidence::line(
            "kubelet_memory_eviction",
            Category::HostOomKernel,
            Certain,
            at,
            line,
        ));
    } else if line.contains("OOMKilled") || line.contains("\"OOM Killed\"") {
        out.push(Evidence::line(
            "kubernetes_oomkilled",
            Category::HostOomCgroup,
            Certain,
            at,
            line,
        ));
    } else if let Some(c) = re.segfault.captures(line) {
        out.push(
            Evidence::line("kernel_segfault", Category::Segfault, Certain, at, line)
                .with("segfault_pid", num(c.get(1))),
        );
    }
}

fn sizes(ev: Evidence, s: &regex::Captures<'_>) -> Evidence {
    ev.with("killed_total_vm_bytes", kib(s.get(2)))
        .with("killed_anon_rss_bytes", kib(s.get(3)))
        .with("killed_file_rss_bytes", kib(s.get(4)))
        .with("killed_shmem_rss_bytes", kib(s.get(5)))
}
