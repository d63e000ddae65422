//! GPU requests by name, as an sbatch script writes them: `--gres=gpu:a100:1`,
//! `--gres=gpu:v100:2`, MIG slices (`gpu:a100_3g.40gb:1`, `gpu:1g.10gb:1`),
//! `--gpus-per-node=h100:4`, `--gpus=2`, and sites' own type names
//! (`nvidia_a100-sxm4-80gb`, `tesla_v100`). Each maps to a GPU profile name
//! or a size, with the assumption stated when the name leaves a choice (an
//! A100 with no size is planned as the 40 GB one, the smaller: the safe side).
//! Slurm's syntax: `--gres=gpu[:type]:count`, `--gpus-per-node=[type:]count`
//! (sbatch(1), "--gres" and "--gpus-per-node").

/// What a GPU request names.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuRequest {
    /// The type as written (`a100_3g.40gb`), when the request names one.
    pub written: Option<String>,
    /// GPUs per node requested.
    pub count: Option<u32>,
}

/// How a written type maps to a profile.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuName {
    /// A profile name (or size) that needs no comment.
    Exact(String),
    /// A profile chosen among several, with the sentence saying which and why.
    Assumed(String, String),
    /// No profile fits: the user must say.
    Unknown,
}

/// Parses the value of `--gres`, `--gpus`, `--gpus-per-node` or `--gpus-per-task`.
/// `gres` is true for `--gres`, whose values start with the resource name.
pub fn parse_request(value: &str, gres: bool) -> Option<GpuRequest> {
    // --gres may list several resources: `gpu:a100:2,nvme:1`.
    let item = value
        .split(',')
        .map(str::trim)
        .find(|i| !gres || i.starts_with("gpu"))?;
    let mut parts: Vec<&str> = item.split(':').collect();
    if gres {
        parts.remove(0);
    }
    // A count may carry a suffix (`gpu:2(S:0-1)`); the digits are what counts.
    let count_of = |s: &str| -> Option<u32> {
        let digits: String = s.chars().take_while(|c| c.is_ascii_digit()).collect();
        (!digits.is_empty()).then(|| digits.parse().ok()).flatten()
    };
    match parts.as_slice() {
        [] => Some(GpuRequest {
            written: None,
            count: Some(1),
        }),
        [one] => match count_of(one) {
            Some(n) => Some(GpuRequest {
                written: None,
                count: Some(n),
            }),
            None => Some(GpuRequest {
                written: Some(one.to_string()),
                count: Some(1),
            }),
        },
        [t, n, ..] => Some(GpuRequest {
            written: Some(t.to_string()),
            count: count_of(n),
        }),
    }
}

/// Maps a written GPU type to a profile name or size.
pub fn profile_for(written: &str) -> GpuName {
    let mut name = written.trim().to_ascii_lowercase().replace('_', "-");
    for prefix in ["nvidia-", "tesla-", "geforce-"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            name = rest.to_string();
        }
    }
    // MIG slices: `3g.40gb`, `a100-3g.40gb`, `1g.10gb`. NVIDIA names a slice
    // by its memory (MIG user guide, "Supported MIG Profiles"); the memory a
    // process sees is a little below the name, so the planned size is 95% of it.
    if let Some(pos) = name.find("g.") {
        let tail = &name[pos + 2..];
        let gb: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(gb) = gb.parse::<u64>()
            && gb > 0
        {
            let usable = gb * 1000 * 95 / 100;
            return GpuName::Assumed(
                format!("{usable}MB"),
                format!(
                    "MIG slice '{written}': planned as {usable} MB, 95% of the {gb} GB its name gives"
                ),
            );
        }
    }
    let contains = |s: &str| name.contains(s);
    let sized = |big: &str, small: &str| -> Option<bool> {
        if contains(big) {
            Some(true)
        } else if contains(small) {
            Some(false)
        } else {
            None
        }
    };
    let pick = |family: &str, big: &str, small: &str, what: &str| -> GpuName {
        match sized(big, small) {
            Some(true) => GpuName::Exact(format!("{family}-{big}")),
            Some(false) => GpuName::Exact(format!("{family}-{small}")),
            None => GpuName::Assumed(
                format!("{family}-{small}"),
                format!(
                    "GPU '{written}' does not say its size: planned as the {what} (give --gpu {family}-{big} if yours has more)"
                ),
            ),
        }
    };
    if contains("a100") {
        return pick("a100", "80gb", "40gb", "A100 40 GB");
    }
    if contains("v100") {
        return pick("v100", "32gb", "16gb", "V100 16 GB");
    }
    if contains("h100") {
        return GpuName::Exact(
            if contains("pcie") {
                "h100-pcie"
            } else {
                "h100-80gb"
            }
            .into(),
        );
    }
    if contains("h200") || contains("gh200") {
        return GpuName::Exact("h200".into());
    }
    let table = [
        ("a10g", "a10g"),
        ("a6000", "rtx-a6000"),
        ("l40s", "l40s"),
        ("a40", "a40"),
        ("a10", "a10"),
        ("3090", "rtx-3090"),
        ("4090", "rtx-4090"),
        ("t4", "t4"),
        ("l4", "l4"),
    ];
    for (needle, profile) in table {
        if contains(needle) {
            return GpuName::Exact(profile.into());
        }
    }
    GpuName::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(v: &str, gres: bool) -> (Option<String>, Option<u32>) {
        let r = parse_request(v, gres).unwrap();
        (r.written, r.count)
    }

    #[test]
    fn requests_as_sbatch_writes_them() {
        assert_eq!(req("gpu:a100:1", true), (Some("a100".into()), Some(1)));
        assert_eq!(req("gpu:2", true), (None, Some(2)));
        assert_eq!(req("gpu", true), (None, Some(1)));
        assert_eq!(
            req("nvme:1,gpu:v100:2", true),
            (Some("v100".into()), Some(2))
        );
        assert_eq!(req("h100:4", false), (Some("h100".into()), Some(4)));
        assert_eq!(req("4", false), (None, Some(4)));
        assert_eq!(
            req("gpu:a100_3g.40gb:1", true).0.as_deref(),
            Some("a100_3g.40gb")
        );
        assert_eq!(parse_request("nvme:1", true), None);
    }

    #[test]
    fn names_map_to_profiles_with_the_choice_stated() {
        assert!(
            matches!(profile_for("a100"), GpuName::Assumed(p, why) if p == "a100-40gb" && why.contains("a100-80gb"))
        );
        assert_eq!(
            profile_for("nvidia_a100-sxm4-80gb"),
            GpuName::Exact("a100-80gb".into())
        );
        assert_eq!(
            profile_for("tesla_v100-sxm2-32gb"),
            GpuName::Exact("v100-32gb".into())
        );
        assert!(matches!(profile_for("v100"), GpuName::Assumed(p, _) if p == "v100-16gb"));
        assert_eq!(profile_for("a40"), GpuName::Exact("a40".into()));
        assert_eq!(profile_for("a10g"), GpuName::Exact("a10g".into()));
        assert_eq!(profile_for("h100"), GpuName::Exact("h100-80gb".into()));
        assert_eq!(profile_for("mi250x"), GpuName::Unknown);
        // Every name a profile for must resolve to an embedded profile.
        for n in [
            "a100",
            "v100-32gb",
            "h100",
            "a40",
            "a6000",
            "l40s",
            "t4",
            "l4",
            "3090",
        ] {
            let p = match profile_for(n) {
                GpuName::Exact(p) | GpuName::Assumed(p, _) => p,
                GpuName::Unknown => panic!("{n}"),
            };
            assert!(crate::profiles::resolve_gpu(&p).is_ok(), "{n} -> {p}");
        }
    }

    #[test]
    fn mig_slices_are_sized_by_their_name() {
        for (name, mb) in [
            ("a100_3g.40gb", 38000),
            ("1g.10gb", 9500),
            ("a100-7g.80gb", 76000),
        ] {
            match profile_for(name) {
                GpuName::Assumed(size, why) => {
                    assert_eq!(size, format!("{mb}MB"));
                    assert!(why.contains("MIG"));
                    let g = crate::profiles::resolve_gpu(&size).unwrap();
                    assert_eq!(g.pytorch_total_bytes, Some(mb * 1_000_000));
                }
                other => panic!("{name}: {other:?}"),
            }
        }
    }
}
