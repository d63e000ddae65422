//! The one door to the YAML crate: every job spec, profile and calibration
//! file is read, and every YAML report and file is written, through here.
//!
//! The crate is `serde-saphyr` (chosen 2026-11 over the alternatives, with
//! `cargo info`): `serde_yaml` is deprecated upstream; `serde_yml` has a
//! security advisory (RUSTSEC-2025-0068); `yaml_serde`, the YAML
//! organisation's fork, is the same code as `serde_yaml` (libyaml translated
//! to unsafe Rust) and keeps its one alias guard, which counts jumps to
//! anchors, not the nodes they expand to: a 23 KB file whose `dataset:`
//! mapping references a 10,000-element anchor 1,000 times made `serde_yaml`
//! build 10^7 values and abort at a 300 MB limit
//! (`tests/regressions/yaml_alias_bomb.yaml`, tests/cli/hostile.rs).
//! `serde-saphyr` is safe Rust on the `granit-parser` parser, streams the
//! document into the target type (nothing is built for a field that is
//! refused), and charges every event an alias replays to a budget
//! ([`crate::limits::MAX_YAML_ALIAS_REPLAY_EVENTS`]); its default budget also
//! bounds depth (64), nodes and events. headroom's own limits stay in front
//! of it: the text size ([`crate::limits::MAX_TEXT_FILE_BYTES`]) and the
//! count of flow collections (`spec/yaml_depth.rs`).

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The parser's settings: serde_yaml's reading where the two differ (only
/// `true`/`false` are booleans, not YAML 1.1's `yes`/`on`; a `<<` merge key
/// is refused rather than merged, as serde_yaml never merged it), a
/// one-line error (no source snippet: headroom prints one line per error),
/// and a replay budget small enough that no alias bomb gets near memory.
fn options() -> serde_saphyr::Options {
    let mut o = serde_saphyr::Options::default();
    o.with_snippet = false;
    o.strict_booleans = true;
    o.merge_keys = serde_saphyr::options::MergeKeyPolicy::Error;
    o.alias_limits.max_total_replayed_events = crate::limits::MAX_YAML_ALIAS_REPLAY_EVENTS;
    o
}

/// Reads one YAML document as `T`; the error is the crate's message on one
/// line.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    // The user-facing wording: the default one speaks to the programmer
    // ("set DuplicateKeyPolicy in Options").
    serde_saphyr::from_str_with_options(text, options())
        .map_err(|e| one_line(&e.render_with_formatter(&serde_saphyr::UserMessageFormatter)))
}

/// Reads a project's own config file (Hydra, OmegaConf, a `--config`
/// YAML) as Python reads it: PyYAML and OmegaConf expand YAML 1.1 merge
/// keys (`<<: *base`, `<<: [*a, *b]`, the first mapping winning), so the
/// values a run gets include the merged ones. headroom's own files keep
/// refusing `<<` ([`from_str`]).
pub fn config_from_str(text: &str) -> Result<serde_json::Value, String> {
    let mut o = options();
    o.merge_keys = serde_saphyr::options::MergeKeyPolicy::Merge;
    serde_saphyr::from_str_with_options(text, o)
        .map_err(|e| one_line(&e.render_with_formatter(&serde_saphyr::UserMessageFormatter)))
}

/// Writes `value` as one YAML document.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, String> {
    serde_saphyr::to_string(value).map_err(|e| one_line(&e.to_string()))
}

fn one_line(msg: &str) -> String {
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_anchor_replayed_a_hundred_times_is_refused_not_built() {
        // The shape that aborted serde_yaml: 10^4 elements here, replayed
        // 100 times, is 10^6 events, past the replay budget.
        let text = format!(
            "x: &a [{}]\ny: [{}]\n",
            vec!["1"; 10_000].join(","),
            vec!["*a"; 100].join(",")
        );
        let err = from_str::<serde_json::Value>(&text).unwrap_err();
        assert!(err.contains("too large or too complex"), "{err}");
        assert!(!err.contains('\n'));
        // A small anchor used twice still works.
        let v: serde_json::Value = from_str("a: &l [15, 10]\nb: *l\n").unwrap();
        assert_eq!(v["b"], serde_json::json!([15, 10]));
    }

    #[test]
    fn a_projects_config_merges_as_pyyaml_does_and_a_spec_refuses_merge_keys() {
        // The shape of a Hydra config in the fourth sealed corpus
        // (DenceGCN's conf/config.yaml): PyYAML gives layers 6 (the first
        // mapping of the list wins), hidden 128 and the key's own epochs.
        let text = "Reddit: &Reddit\n  n_layer: 6\n  hidden: 128\nAttGNN: &AttGNN\n  n_layer: 2\n  base: sage\nrun:\n  <<: [*Reddit, *AttGNN]\n  epochs: 20\n";
        let v = config_from_str(text).unwrap();
        assert_eq!(
            v["run"],
            serde_json::json!({"n_layer": 6, "hidden": 128, "base": "sage", "epochs": 20})
        );
        let err = from_str::<serde_json::Value>(text).unwrap_err();
        assert!(err.contains("merge key"), "{err}");
    }

    #[test]
    fn errors_speak_to_the_user_on_one_line() {
        for (text, want) in [
            ("a: 1\na: 2\n", "duplicate"),
            ("a: 1\n---\na: 2\n", "multiple"),
            ("a: [1,\n", "line"),
        ] {
            let err = from_str::<serde_json::Value>(text).unwrap_err();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(
                !err.contains("Options") && !err.contains("from_str"),
                "{err}"
            );
        }
    }

    #[test]
    fn yaml_1_1_spellings_read_as_serde_yaml_read_them() {
        assert!(from_str::<bool>("yes").is_err());
        assert!(from_str::<bool>("true").unwrap());
        let v: serde_json::Value = from_str("a: {x: 1}\nb:\n  <<: {x: 2}\n").unwrap_or_default();
        assert_ne!(v["b"]["x"], serde_json::json!(2), "merge key applied");
    }
}
