//! End-to-end tests of the `headroom` binary: one test binary, one module per
//! verb, shared helpers in `util`.

mod util;

mod alloc;
mod batch_sizes;
mod calibrate;
mod corpus;
mod diagnose;
mod diagnose_sacct;
mod docs;
mod github;
mod hostile;
mod output_formats;
mod plan;
mod plan_shapes;
mod plan_truth;
mod probe;
mod probe_gin;
mod profiles_embedded;
mod readme;
mod script;
mod script_patterns;
mod script_structure;
mod shell;
mod slurm_cli_filter;
mod slurm_live;
mod slurm_request;
mod slurm_sealed;
mod slurm_watch;
mod watch;
mod watch_attach;
mod watch_faults;
mod watch_gpu;
mod wheel;
