//! End-to-end tests of `headroom plan`.
