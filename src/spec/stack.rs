//! The software stack a job runs on (CPython, torch, PyG and its sampler
//! backend, glibc, the kernel): what the probe records in `job.yaml` and a
//! calibration file records beside its coefficients, so that a plan can say
//! when the two differ. The framework constants of the memory model are the
//! stack's, not the job's: a runtime measured under torch 2.15 says little
//! about torch 2.4.

use serde::{Deserialize, Serialize};

/// Versions of what a training process runs on; a field nobody could read is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stack {
    /// CPython's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// torch's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch: Option<String>,
    /// torch_geometric's version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_geometric: Option<String>,
    /// The neighbor sampler's backend: `pyg-lib` or `torch-sparse`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampler: Option<String>,
    /// pyg-lib's version, when installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pyg_lib: Option<String>,
    /// torch-sparse's version, when installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_sparse: Option<String>,
    /// The C library, as `os.confstr("CS_GNU_LIBC_VERSION")` gives it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glibc: Option<String>,
    /// The kernel's release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

impl Stack {
    /// Each field as (name, value), in the order people read them.
    pub fn fields(&self) -> [(&'static str, Option<&str>); 8] {
        [
            ("python", self.python.as_deref()),
            ("torch", self.torch.as_deref()),
            ("torch_geometric", self.torch_geometric.as_deref()),
            ("sampler", self.sampler.as_deref()),
            ("pyg_lib", self.pyg_lib.as_deref()),
            ("torch_sparse", self.torch_sparse.as_deref()),
            ("glibc", self.glibc.as_deref()),
            ("kernel", self.kernel.as_deref()),
        ]
    }

    /// The fields both record and that differ: (name, this one's, other's).
    /// A local build suffix (`2.15.0+cu132` against `2.15.0`) is a difference:
    /// another build may ship another allocator configuration.
    pub fn differences<'a>(&'a self, other: &'a Stack) -> Vec<(&'static str, &'a str, &'a str)> {
        self.fields()
            .into_iter()
            .zip(other.fields())
            .filter_map(|((name, a), (_, b))| match (a, b) {
                (Some(a), Some(b)) if a != b => Some((name, a, b)),
                _ => None,
            })
            .collect()
    }

    /// One line: `python 3.11.7, torch 2.15.0, PyG 2.8.1 (torch-sparse 0.6.18), glibc 2.36, kernel 6.1`.
    pub fn line(&self) -> String {
        let sampler = self.sampler.as_ref().map(|s| {
            let v = match s.as_str() {
                "pyg-lib" => self.pyg_lib.as_deref(),
                "torch-sparse" => self.torch_sparse.as_deref(),
                _ => None,
            };
            v.map_or(s.clone(), |v| format!("{s} {v}"))
        });
        let glibc = self
            .glibc
            .as_ref()
            .map(|g| g.trim_start_matches("glibc ").to_string());
        let parts: Vec<String> = [
            ("python", &self.python),
            ("torch", &self.torch),
            ("PyG", &self.torch_geometric),
            ("sampler", &sampler),
            ("glibc", &glibc),
            ("kernel", &self.kernel),
        ]
        .iter()
        .filter_map(|(label, v)| v.as_ref().map(|v| format!("{label} {v}")))
        .collect();
        if parts.is_empty() {
            "unknown stack".into()
        } else {
            parts.join(", ")
        }
    }

    /// Nothing recorded.
    pub fn is_empty(&self) -> bool {
        self.fields().iter().all(|(_, v)| v.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stack(torch: &str, sampler: &str) -> Stack {
        Stack {
            python: Some("3.11.7".into()),
            torch: Some(torch.into()),
            torch_geometric: Some("2.8.1".into()),
            sampler: Some(sampler.into()),
            torch_sparse: Some("0.6.18".into()),
            glibc: Some("glibc 2.36".into()),
            ..Stack::default()
        }
    }

    #[test]
    fn differences_are_the_fields_both_know_and_that_differ() {
        let a = stack("2.15.0", "torch-sparse");
        let mut b = stack("2.4.1", "pyg-lib");
        b.glibc = None;
        b.kernel = Some("6.1.0".into());
        assert_eq!(
            a.differences(&b),
            [
                ("torch", "2.15.0", "2.4.1"),
                ("sampler", "torch-sparse", "pyg-lib")
            ]
        );
        assert!(a.differences(&a).is_empty());
        assert_eq!(
            a.line(),
            "python 3.11.7, torch 2.15.0, PyG 2.8.1, sampler torch-sparse 0.6.18, glibc 2.36"
        );
        assert!(Stack::default().is_empty());
        assert_eq!(Stack::default().line(), "unknown stack");
    }
}
