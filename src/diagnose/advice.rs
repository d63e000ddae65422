//! What a person reads: the one-line verdict, why this confidence, the fix
//! and what to collect next, per cause, with the numbers the evidence gave.
//! The CUDA OOM arithmetic (batch fraction, recovered headroom) is in
//! `cuda_advice`.

use std::collections::BTreeMap;

use super::category::{Category, Confidence};
use super::cuda_advice;
use super::evidence::Evidence;
use super::exit::ExitStatus;
use super::parse::cuda_oom::CudaOom;
use crate::units::fmt_bytes;

/// The sentences of a diagnosis.
pub struct Advice {
    pub verdict: String,
    pub confidence_reason: String,
    pub fix: Vec<String>,
    pub next_steps: Vec<String>,
}

const COLLECT_137: &str = "collect proof: `dmesg -T | grep -iE 'killed process|oom'` on the node (as soon as possible, the ring buffer wraps), `sacct -j JOBID -o JobID,State,ExitCode,MaxRSS,ReqMem -P`, or rerun under `headroom watch -- CMD`, which reads the cgroup's oom_kill counter";

/// Whether any root evidence line is of `kind`.
fn has(root: &[&Evidence], kind: &str) -> bool {
    root.iter().any(|e| e.kind == kind)
}

/// Writes the verdict, confidence reason, fix and next steps for `category`.
pub fn advise(
    category: Category,
    confidence: Confidence,
    root: &[&Evidence],
    numbers: &BTreeMap<String, u64>,
    cuda: Option<&CudaOom>,
    exit: Option<&ExitStatus>,
) -> Advice {
    let n = |k: &str| numbers.get(k).copied();
    let b = |k: &str| n(k).map(fmt_bytes);
    let name = root
        .iter()
        .find(|e| e.kind.ends_with("oom_kill"))
        .and_then(|e| e.label.clone());
    let killed = match (name, n("killed_pid")) {
        (Some(name), Some(p)) => format!(" ({name}, pid {p})"),
        (None, Some(p)) => format!(" (pid {p})"),
        _ => String::new(),
    };
    let mut next = Vec::new();
    let (verdict, fix): (String, Vec<String>) = match category {
        Category::HostOomCgroup => (
            format!(
                "Host RAM: the job's memory cgroup{} was full and the OOM killer killed a process{killed}; GPU memory is not the problem.",
                b("cgroup_limit_bytes").or(b("slurm_limit_bytes")).or(b("req_mem_bytes")).map_or(String::new(), |l| format!(" (limit {l})"))
            ),
            vec![
                "lower the job's peak host RAM: fewer DataLoader workers, persistent_workers=False on eval loaders, build val/test loaders only when needed, smaller batch size or fanout".into(),
                "or request more memory (--mem); `headroom plan` (or `diagnose --job`) computes a setting that fits".into(),
            ],
        ),
        Category::HostOomKernel if has(root, "kubelet_memory_eviction") => (
            "Host RAM: the node ran short of memory and the kubelet evicted the pod (node memory pressure). No container limit was hit and the kernel's OOM killer did not act: the kubelet stopped the pod before the node ran out.".into(),
            vec![
                "set the pod's memory request to its real peak (`headroom plan`), so the scheduler places it on a node with room; pods using more than they request are evicted first".into(),
                "or lower the job's peak host RAM (workers, batch size, resident loaders)".into(),
            ],
        ),
        Category::HostOomKernel if has(root, "ray_memory_monitor_kill") => (
            "Host RAM: the node's memory use passed Ray's threshold (RAY_memory_usage_threshold, 0.95 by default) and Ray's memory monitor killed workers to keep the node alive; the kernel's OOM killer did not act.".into(),
            vec![
                "run fewer tasks or actors at once on the node (request more CPUs or memory per task), or lower each worker's peak host RAM".into(),
            ],
        ),
        Category::HostOomKernel if confidence == Confidence::Certain => (
            format!("Host RAM: the whole node ran out of memory and the kernel's OOM killer killed a process{killed}."),
            vec![
                "the node had no per-job limit or was shared: request --mem explicitly (or --exclusive) and lower the job's peak host RAM (workers, batch size, resident loaders)".into(),
            ],
        ),
        Category::HostOomKernel => {
            next.push(COLLECT_137.to_string());
            (
                "Killed by SIGKILL, most likely by the out-of-memory killer (host RAM), but no kernel or Slurm line proves it.".to_string(),
                vec!["if it was memory: lower peak host RAM (workers, batch size, resident loaders) or raise --mem; confirm first".into()],
            )
        }
        Category::HostOomRssSum => (
            format!(
                "Host RAM as Slurm's accounting counts it: jobacct_gather summed the RSS of every process in the job{} and killed it at the limit. Not a cgroup OOM: pages shared between processes (a dataset forked into DataLoader workers, /dev/shm batches) were counted once per process.",
                match (b("slurm_measured_bytes"), b("slurm_limit_bytes")) {
                    (Some(m), Some(l)) => format!(" ({m} > {l})"),
                    _ => String::new(),
                }
            ),
            vec![
                "request --mem above the summed RSS (workers x shared dataset), or ask the admins for JobAcctGatherParams=UsePss (or NoShared), which counts shared pages once".into(),
                "or share less per process: fewer DataLoader workers, num_workers=0 for eval loaders, no persistent_workers; `headroom plan --accounting rss_sum` sizes the job as this cluster counts it".into(),
            ],
        ),
        Category::HostAllocFailed => (
            format!(
                "Host RAM: an allocation{} was refused and the process died of the error (no OOM killer involved): the machine's RAM plus swap or page file, or a ulimit, was exhausted.",
                b("alloc_requested_bytes").map_or(String::new(), |r| format!(" of {r}"))
            ),
            vec![
                "lower the peak host RAM: smaller batch, load or memory-map the dataset instead of copying it, fewer DataLoader workers".into(),
                "on Windows enlarge the page file (the commit limit is RAM + page file); on Linux check `ulimit -v` and vm.overcommit_memory; or use a machine with more RAM".into(),
            ],
        ),
        Category::CudaOomOtherProcess => cuda_advice::other_process(cuda),
        Category::CudaOomCapacity => cuda_advice::capacity(cuda, confidence),
        Category::CudaOomFragmentation => cuda_advice::fragmentation(cuda),
        Category::DataloaderWorkerKilled => {
            next.push("find who killed the worker: `dmesg -T | grep -i 'killed process'` on the node; a SIGKILLed worker is almost always the OOM killer".into());
            (
                format!("A DataLoader worker{} was killed by a signal and the main process died with it.", n("worker_pid").map_or(String::new(), |p| format!(" (pid {p})"))),
                vec!["workers cost host RAM each (their interpreter plus every page they write): fewer workers, smaller prefetch_factor, or num_workers=0 to see the real error".into()],
            )
        }
        Category::ShmBusError => (
            "/dev/shm is too small: a DataLoader worker died of SIGBUS (bus error) writing a batch to shared memory.".into(),
            vec![
                "give the job a larger /dev/shm (docker --shm-size=16g, a bigger tmpfs), or fewer workers and a smaller prefetch_factor".into(),
                "or torch.multiprocessing.set_sharing_strategy('file_system'), or num_workers=0".into(),
            ],
        ),
        Category::Sigpipe => (
            "SIGPIPE: the job wrote to a pipe whose reader had gone away (exit 141), not a memory problem.".into(),
            vec!["do not pipe training output into `head` or a tee that may die; write to a file (`> log 2>&1`) and read it separately; check `set -o pipefail` in the script".into()],
        ),
        Category::TimeLimit => (
            "Time limit, preemption or cancellation: Slurm (or a user) stopped the job; it did not crash.".into(),
            vec!["ask for a longer --time, or checkpoint every epoch and resubmit with --requeue / a resume flag".into()],
        ),
        Category::Segfault => (
            match n("worker_pid") {
                Some(p) => format!("Segmentation fault in a DataLoader worker (pid {p}): native code in the worker (a collate function, a decoder, an extension) crashed, the worker was killed by SIGSEGV and the main process died of the lost worker."),
                None => "Segmentation fault in native code (an extension, a driver or a DataLoader worker).".into(),
            },
            vec!["run with `python -X faulthandler` (and num_workers=0 for worker crashes) to get the crashing stack; check that torch, torch_geometric, torch_sparse/pyg-lib and CUDA versions match".into()],
        ),
        Category::Nccl => (
            format!("NCCL failure in distributed training{}.", n("nccl_timeout_ms").map_or(String::new(), |t| format!(": a collective waited past its {} s timeout", t / 1000))),
            vec!["one rank is usually the culprit: look at every rank's log for an OOM or crash that came first; rerun with NCCL_DEBUG=INFO and TORCH_NCCL_ASYNC_ERROR_HANDLING=1".into()],
        ),
        Category::PythonError
            if !root.iter().any(|e| e.kind.contains("exception") || e.kind == "cuda_device_assert")
                && exit.is_some_and(|x| x.code.is_some_and(|c| c != 1) && x.signal.is_none()) =>
        {
            let code = exit.and_then(|x| x.code).unwrap_or(0);
            (
                format!("The program ended itself with exit status {code}: no signal, no kill, no memory limit; its own error handling (sys.exit, a check that failed) stopped it."),
                vec!["read the last lines the program wrote to stderr: they say which check failed".into()],
            )
        }
        Category::PythonError => {
            let exc = root.iter().find_map(|e| e.label.clone().filter(|_| e.kind == "python_exception"));
            (
                format!("The program died of an uncaught Python exception{}.", exc.map_or(String::new(), |x| format!(" ({x})"))),
                vec!["fix the exception the traceback names (its last lines are in the evidence)".into()],
            )
        }
        Category::Success => ("The job exited normally (status 0).".into(), Vec::new()),
        Category::Unknown => {
            next.push(if exit.is_some_and(|e| e.signal == Some(9)) {
                COLLECT_137.to_string()
            } else {
                "give headroom more to read: the Slurm output file, `dmesg -T` or `journalctl -k` from the node, `sacct -P` output, the exit status (--exit-code); or rerun under `headroom watch -- CMD`".to_string()
            });
            ("No evidence of a known cause in the inputs.".into(), Vec::new())
        }
    };
    Advice {
        verdict,
        confidence_reason: reason(confidence, root, category),
        fix,
        next_steps: next,
    }
}

fn reason(confidence: Confidence, root: &[&Evidence], category: Category) -> String {
    let best = root
        .iter()
        .filter(|e| e.category == category || root.len() == 1)
        .min_by_key(|e| std::cmp::Reverse(e.strength))
        .or(root.first());
    let at = best.map_or("no line".to_string(), |e| {
        format!("{} at {}", e.kind, e.location())
    });
    match confidence {
        Confidence::Certain => format!("certain: {at} is written only by this cause"),
        Confidence::Likely => {
            format!("likely: the evidence points here ({at}) but no line proves it")
        }
        Confidence::Possible => {
            format!("possible: only weak signs ({at}); other causes fit as well")
        }
    }
}
