//! End-to-end tests of `headroom calibrate`.
