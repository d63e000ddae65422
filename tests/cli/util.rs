//! Helpers shared by the end-to-end tests.

#![allow(dead_code)]

use std::path::PathBuf;

/// A `headroom` command ready to be given arguments.
pub fn headroom() -> assert_cmd::Command {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_headroom"))
}

/// The path of a fixture under `tests/fixtures`.
pub fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
}
