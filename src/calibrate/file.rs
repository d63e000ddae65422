//! The calibration file `calibrate` writes: the coefficients `plan` reads
//! (the `coefficients` and `gpu` keys of [`CalibrationFile`]), and beside
//! them what they belong to — the date, the stack the runs ran on, the
//! machine, the runs themselves — which `plan` reads back to warn when the
//! job's stack is another one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::gpu::GpuFacts;
use super::machine::Machine;
use crate::error::{Error, Result};
use crate::estimate::{Coefficients, GpuProvenance, default_calibration_path};
use crate::spec::Stack;

/// What is written.
#[derive(Debug, Clone, Serialize)]
pub struct Written {
    /// When, UTC.
    pub date: String,
    /// The stack the runs ran on (none: the probe never saw PyG imported).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<Stack>,
    /// The machine's facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// The probed runs the fit read.
    pub runs: Vec<String>,
    /// The coefficients, each with its provenance.
    pub coefficients: Coefficients,
    /// The GPU the GPU figures came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuProvenance>,
    /// What the GPU step measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_facts: Option<GpuFacts>,
}

/// Writes `w` to `path`, creating its directory.
pub fn write(path: &Path, w: &Written) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let text =
        crate::yaml::to_string(w).map_err(|e| Error::Internal(format!("calibration file: {e}")))?;
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}

/// The part of a calibration file the stack check reads.
#[derive(Debug, Deserialize)]
struct Header {
    #[serde(default)]
    date: Option<String>,
    #[serde(default)]
    stack: Option<Stack>,
}

/// The calibration file a plan uses: `explicit`, else the default one if it exists.
pub fn in_use(explicit: Option<&Path>) -> Option<PathBuf> {
    match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => default_calibration_path().filter(|p| p.is_file()),
    }
}

/// What a plan says about the calibration file's stack against the job's:
/// the fields that differ, or (the job's stack unknown) which stack the
/// file is for. None without a file, or for a file that cannot be read
/// (loading its coefficients reports that).
pub fn stack_note(explicit: Option<&Path>, job: Option<&Stack>) -> Option<String> {
    let path = in_use(explicit)?;
    let text = crate::input::read_text(&path, "a calibration file", true).ok()?;
    let h: Header = crate::yaml::from_str(&text).ok()?;
    let shown = crate::output::shown(&path.display().to_string());
    let when = h.date.map(|d| format!(" on {d}")).unwrap_or_default();
    let Some(file) = h.stack.filter(|s| !s.is_empty()) else {
        return Some(format!(
            "calibration {shown} records no stack (written before headroom recorded one): it may be another stack's"
        ));
    };
    match job.filter(|s| !s.is_empty()) {
        None => Some(format!(
            "calibration {shown} was measured{when} on {}; the job's stack is not known (watch --probe records it in job.yaml)",
            file.line()
        )),
        Some(j) => {
            let diff = file.differences(j);
            (!diff.is_empty()).then(|| {
                let what: Vec<String> = diff
                    .iter()
                    .map(|(k, f, j)| format!("{k} {f} there, {j} here"))
                    .collect();
                format!(
                    "calibration {shown} was measured{when} on another stack ({}): its framework constants may not hold for this job; run headroom calibrate with the job's Python",
                    what.join(", ")
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, stack: &str) -> PathBuf {
        let p = dir.join("cal.yaml");
        std::fs::write(
            &p,
            format!("date: 2026-11-25\n{stack}coefficients:\n  runtime_bytes: 400000000\n"),
        )
        .unwrap();
        p
    }

    #[test]
    fn a_plan_is_told_when_the_stacks_differ_and_which_stack_a_file_is_for() {
        let t = tempfile::tempdir().unwrap();
        let p = file(
            t.path(),
            "stack:\n  python: 3.11.7\n  torch: 2.15.0\n  torch_geometric: 2.8.1\n",
        );
        let mut job = Stack {
            python: Some("3.11.7".into()),
            torch: Some("2.4.1".into()),
            ..Stack::default()
        };
        let n = stack_note(Some(&p), Some(&job)).unwrap();
        assert!(n.contains("torch 2.15.0 there, 2.4.1 here"), "{n}");
        assert!(!n.contains("python"), "{n}");
        job.torch = Some("2.15.0".into());
        assert_eq!(stack_note(Some(&p), Some(&job)), None);
        let n = stack_note(Some(&p), None).unwrap();
        assert!(
            n.contains("on 2026-11-25 on python 3.11.7, torch 2.15.0, PyG 2.8.1"),
            "{n}"
        );
        let old = file(t.path(), "");
        assert!(
            stack_note(Some(&old), Some(&job))
                .unwrap()
                .contains("records no stack")
        );
        // A missing file is for the coefficients' loader to report.
        assert_eq!(stack_note(Some(&t.path().join("none.yaml")), None), None);
    }
}
