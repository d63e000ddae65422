//! End-to-end tests of the `headroom` binary: one test binary, one module per
//! verb, shared helpers in `util`.

mod util;

mod alloc;
mod calibrate;
mod corpus;
mod diagnose;
mod hostile;
mod plan;
mod probe;
mod script;
mod watch;
mod watch_faults;
