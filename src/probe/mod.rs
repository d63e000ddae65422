//! The probe inside a real Python training job (`watch --probe`): a
//! `sitecustomize` module written to a private temporary directory that goes
//! first on the job's PYTHONPATH, the events it records read back
//! (`events`), the job they describe as an ordinary job spec (`observed`),
//! and the per-phase comparison of headroom's prediction with the memory
//! `watch` measured (`phases`). `report` turns a finished probed run
//! directory into `job.yaml` and `phases.json`; `calibrate --from` reads it.

pub mod events;
pub mod observed;
pub mod phases;
pub mod report;
mod spec;

use std::ffi::OsString;
use std::path::Path;

use crate::error::{Error, Result};

/// The probe's source, written as `sitecustomize.py`.
pub const SITECUSTOMIZE: &str = include_str!("sitecustomize.py");

/// The probe's events in a probed run directory.
pub const EVENTS_FILE: &str = "probe.jsonl";
/// The timeline (JSONL) of a probed run.
pub const TIMELINE_FILE: &str = "timeline.jsonl";
/// What was run, where and when.
pub const RUN_FILE: &str = "run.json";
/// The observed job spec.
pub const JOB_FILE: &str = "job.yaml";
/// The per-phase table.
pub const PHASES_FILE: &str = "phases.json";

/// The probe installed for one run; its directory goes when this is dropped.
pub struct Installed {
    dir: tempfile::TempDir,
    /// Variables to set in the job's environment.
    pub env: Vec<(OsString, OsString)>,
}

impl Installed {
    /// The directory holding `sitecustomize.py`.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Writes the probe into a new private directory and returns the job's
/// environment: PYTHONPATH with that directory first (the user's entries
/// kept after it) and HEADROOM_PROBE_FILE naming `events`.
pub fn install(events: &Path) -> Result<Installed> {
    let dir = tempfile::Builder::new()
        .prefix("headroom-probe-")
        .tempdir()
        .map_err(|e| Error::io(Path::new("temporary directory"), e))?;
    let file = dir.path().join("sitecustomize.py");
    std::fs::write(&file, SITECUSTOMIZE).map_err(|e| Error::io(&file, e))?;
    let mut path = dir.path().as_os_str().to_os_string();
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    let events = std::path::absolute(events).map_err(|e| Error::io(events, e))?;
    Ok(Installed {
        dir,
        env: vec![
            ("PYTHONPATH".into(), path),
            ("HEADROOM_PROBE_FILE".into(), events.into_os_string()),
        ],
    })
}

/// The phases of a probed run in `dir` as (from, to, name) in seconds after
/// the job started, for the plot; empty when the probe saw no phase.
pub fn phase_spans(dir: &Path) -> Vec<(f64, f64, String)> {
    let read = |name: &str| crate::input::read_text(&dir.join(name), "probe file", false).ok();
    let (Some(run), Some(events)) = (read(RUN_FILE), read(EVENTS_FILE)) else {
        return Vec::new();
    };
    let Ok(run) = serde_json::from_str::<report::RunInfo>(&run) else {
        return Vec::new();
    };
    let Ok(observed) = observed::observe(&events::parse(&events)) else {
        return Vec::new();
    };
    let start = run.started_epoch_s;
    observed
        .spans
        .iter()
        .map(|s| (s.from - start, s.to - start, s.phase.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_goes_first_and_keeps_the_users_path() {
        let out = tempfile::tempdir().unwrap();
        let p = install(&out.path().join(EVENTS_FILE)).unwrap();
        let written = std::fs::read_to_string(p.dir().join("sitecustomize.py")).unwrap();
        assert_eq!(written, SITECUSTOMIZE);
        let py = p.env.iter().find(|(k, _)| k == "PYTHONPATH").unwrap();
        assert!(
            py.1.to_string_lossy()
                .starts_with(&*p.dir().to_string_lossy())
        );
        let dir = p.dir().to_path_buf();
        drop(p);
        assert!(!dir.exists(), "the probe's directory is removed with it");
    }
}
