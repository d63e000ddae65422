//! End-to-end tests of `headroom watch`.
