//! The vocabulary of causes shared by `diagnose`, `watch` and `calibrate`:
//! what killed a job, and how sure headroom is about it.

use serde::{Deserialize, Serialize};

/// Why a job ended. Serialized as the snake_case names the JSON promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Killed by a memory cgroup's OOM killer (Slurm, Kubernetes, systemd limits).
    HostOomCgroup,
    /// Killed by the kernel's global OOM killer, or evicted by the kubelet:
    /// the whole node ran out.
    HostOomKernel,
    /// Killed by Slurm's jobacct_gather polling: the summed RSS of the job's
    /// processes passed its limit (shared pages counted once per process).
    HostOomRssSum,
    /// An allocation refused without a kill (`DefaultCPUAllocator: not enough
    /// memory`, `MemoryError`, ENOMEM): the process died of the exception.
    HostAllocFailed,
    /// CUDA out of memory: the tensors do not fit the card.
    CudaOomCapacity,
    /// CUDA out of memory although enough memory was reserved but unusable.
    CudaOomFragmentation,
    /// CUDA out of memory because another process holds much of the card.
    CudaOomOtherProcess,
    /// A DataLoader worker died (killed by a signal) and took the job with it.
    DataloaderWorkerKilled,
    /// /dev/shm too small: SIGBUS in a worker (exit 135).
    ShmBusError,
    /// SIGPIPE: the reader of a pipe went away (exit 141).
    Sigpipe,
    /// Time limit, preemption or cancellation (SIGTERM, exit 143).
    TimeLimit,
    /// SIGSEGV (exit 139), in the main process or a worker.
    Segfault,
    /// NCCL errors and watchdog timeouts in distributed training.
    Nccl,
    /// A Python exception that is none of the above (exit 1).
    PythonError,
    /// The job ended normally (exit 0).
    Success,
    /// No evidence for any cause.
    Unknown,
}

impl Category {
    /// The snake_case name used in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Category::HostOomCgroup => "host_oom_cgroup",
            Category::HostOomKernel => "host_oom_kernel",
            Category::HostOomRssSum => "host_oom_rss_sum",
            Category::HostAllocFailed => "host_alloc_failed",
            Category::CudaOomCapacity => "cuda_oom_capacity",
            Category::CudaOomFragmentation => "cuda_oom_fragmentation",
            Category::CudaOomOtherProcess => "cuda_oom_other_process",
            Category::DataloaderWorkerKilled => "dataloader_worker_killed",
            Category::ShmBusError => "shm_bus_error",
            Category::Sigpipe => "sigpipe",
            Category::TimeLimit => "time_limit",
            Category::Segfault => "segfault",
            Category::Nccl => "nccl",
            Category::PythonError => "python_error",
            Category::Success => "success",
            Category::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Category {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How sure a verdict is. `Certain` needs proof the kernel or Slurm left
/// (an oom_kill counter, a "Killed process" line, an "oom_kill event" line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Confidence {
    /// Consistent with the evidence, but other causes fit as well.
    Possible,
    /// The evidence points here, without proof.
    Likely,
    /// Proven by a counter or a log line that only this cause writes.
    Certain,
}

impl std::fmt::Display for Confidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Confidence::Possible => "possible",
            Confidence::Likely => "likely",
            Confidence::Certain => "certain",
        })
    }
}
