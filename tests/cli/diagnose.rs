//! End-to-end tests of `headroom diagnose`.
