//! `headroom calibrate`: the memory model's coefficients measured on the
//! user's own stack. Without a job: a small designed set of real PyG
//! training runs (`design`, `train.py`) made with the user's Python, each
//! under the probe in its own memory cgroup (`runner`), the machine's facts
//! that need no torch (`machine`, `glibc`) and, where a GPU is found, the
//! card's and PyTorch's facts against the allocator simulator (`gpu`). With
//! `--from DIR...`: probed runs of the user's own job. Either way the runs
//! are fitted alike (`from_run`, `columns`, `fit`, `fit_runs`): what a run
//! shows directly is read, what the runs separate is fitted, the rest kept
//! with the reason, and the file records the stack it belongs to (`file`).

pub mod cli;
pub mod columns;
pub mod corpus;
pub mod design;
pub mod file;
pub mod fit;
pub mod fit_runs;
pub mod from_run;
pub mod glibc;
pub mod gpu;
mod gpu_text;
pub mod machine;
mod machine_text;
pub mod report;
pub mod ridge;
pub mod runner;
pub mod spread;
