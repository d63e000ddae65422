//! Tracebacks Python prints for exceptions it ignores (`Exception ignored
//! in: ...__del__`, `Exception in thread ...`) are not how the program
//! ended. tests/fixtures/diagnose/lingering_loader_worker_exit.log holds the
//! real lines of one drawn job (sealed-linger-2611265, draw 33: on-demand
//! loaders with persistent workers, never collected): the first 81 lines of
//! a run of it alone (FutureWarning lines left out), then the tail that the
//! corpus runner kept of the run that died (its traceback's head cut).

use serde_json::Value;

use crate::util::{fixture, headroom, json_of};

fn report(path: &std::path::Path) -> Value {
    json_of(
        headroom()
            .arg("diagnose")
            .arg(path)
            .args(["--exit-code", "1", "--format", "json"]),
    )
}

/// The evidence lines of kind python_exception stronger than "possible".
fn strong_exceptions(r: &Value) -> Vec<u64> {
    r["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "python_exception" && e["strength"] != "possible")
        .filter_map(|e| e["line"].as_u64())
        .collect()
}

#[test]
fn an_exception_ignored_in_del_is_not_the_cause() {
    let r = report(&fixture("diagnose/lingering_loader_worker_exit.log"));
    // Line 11: AssertionError: can only test a child process, printed under
    // "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__".
    let strong = strong_exceptions(&r);
    assert!(!strong.contains(&11), "{strong:?}");
    let text = serde_json::to_string(&r["verdict"]).unwrap_or_default();
    assert!(!text.contains("AssertionError"), "{text}");
}

#[test]
fn the_exception_printed_last_is_the_one_that_ended_the_program() {
    // The ignored blocks of the real run, then python_error.log's traceback
    // (KeyError: 'paper'): the KeyError ended the run, not what came before.
    let ignored =
        std::fs::read_to_string(fixture("diagnose/lingering_loader_worker_exit.log")).unwrap();
    let head: Vec<&str> = ignored.lines().take(81).collect();
    let tail = std::fs::read_to_string(fixture("diagnose/python_error.log")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("joined.log");
    std::fs::write(&path, format!("{}\n{tail}", head.join("\n"))).unwrap();
    let r = report(&path);
    assert_eq!(r["category"], "python_error");
    assert_eq!(strong_exceptions(&r), vec![81 + 6], "{}", r["evidence"]);
}
