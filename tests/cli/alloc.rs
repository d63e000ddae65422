//! End-to-end tests of `headroom alloc`.
