//! Container launchers on a launch line: `apptainer exec|run` and
//! `singularity exec|run` (the HPC centres' way to run a training image),
//! their options and image skipped to the command they run, and their
//! `--bind HOST:CONTAINER` mounts kept, so that `python /workspace/train.py`
//! inside the image is read from the host directory bound there.

/// apptainer/singularity options that take a value as the next word.
const VALUED: &[&str] = &[
    "-B",
    "--bind",
    "--mount",
    "--env",
    "--env-file",
    "-H",
    "--home",
    "--pwd",
    "-o",
    "--overlay",
    "-W",
    "--workdir",
    "-S",
    "--scratch",
    "--security",
    "--network",
    "--network-args",
    "--hostname",
    "--app",
    "--apply-cgroups",
    "--dns",
];

/// A host directory bound into the container: (host, path inside).
pub(super) type Bind = (String, String);

/// When `words[*i]` starts a container launch (`apptainer exec`), moves `*i`
/// past it (subcommand, options, image) to the command it runs, adding its
/// binds; false (nothing moved) when it does not.
pub(super) fn skip_container(words: &[String], i: &mut usize, binds: &mut Vec<Bind>) -> bool {
    let base = words[*i].rsplit('/').next().unwrap_or(&words[*i]);
    let sub = words.get(*i + 1).map(String::as_str);
    if !matches!(base, "apptainer" | "singularity") || !matches!(sub, Some("exec" | "run")) {
        return false;
    }
    let mut j = *i + 2;
    while j < words.len() && words[j].starts_with('-') {
        let (opt, inline) = match words[j].split_once('=') {
            Some((o, v)) => (o, Some(v.to_string())),
            None => (words[j].as_str(), None),
        };
        j += 1;
        let value = match inline {
            Some(v) => Some(v),
            None if VALUED.contains(&opt) && j < words.len() => {
                j += 1;
                Some(words[j - 1].clone())
            }
            None => None,
        };
        if matches!(opt, "-B" | "--bind")
            && let Some(v) = value
        {
            binds.extend(v.split(',').filter_map(bind_of));
        }
    }
    // The image, then the command run in it.
    *i = j + 1;
    true
}

/// `HOST[:CONTAINER[:OPTS]]`; a bare HOST is bound at the same path.
fn bind_of(spec: &str) -> Option<Bind> {
    let mut parts = spec.split(':');
    let host = parts.next().filter(|h| !h.is_empty())?;
    let inside = parts.next().filter(|c| !c.is_empty()).unwrap_or(host);
    Some((host.to_string(), inside.to_string()))
}

/// `path` as the host sees it: the longest bind whose container side holds it.
pub(super) fn on_host(path: &str, binds: &[Bind]) -> String {
    binds
        .iter()
        .filter_map(|(host, inside)| {
            let inside = inside.trim_end_matches('/');
            let rest = path.strip_prefix(inside)?;
            (rest.is_empty() || rest.starts_with('/'))
                .then(|| (inside.len(), format!("{host}{rest}")))
        })
        .max_by_key(|(n, _)| *n)
        .map_or_else(|| path.to_string(), |(_, p)| p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn apptainer_exec_is_skipped_to_its_command_with_its_binds() {
        let w = words(
            "apptainer exec --nv --bind /home/u/proj:/workspace -B /scratch/d:/data,/tmp img.sif python /workspace/train.py --x 1",
        );
        let (mut i, mut binds) = (0, Vec::new());
        assert!(skip_container(&w, &mut i, &mut binds));
        assert_eq!(w[i], "python");
        assert_eq!(binds.len(), 3);
        assert_eq!(
            on_host("/workspace/train.py", &binds),
            "/home/u/proj/train.py"
        );
        assert_eq!(
            on_host("/workspacex/train.py", &binds),
            "/workspacex/train.py"
        );
        assert_eq!(on_host("/tmp/a.py", &binds), "/tmp/a.py");
    }

    #[test]
    fn other_commands_and_other_subcommands_are_not_containers() {
        let (mut i, mut binds) = (0, Vec::new());
        assert!(!skip_container(
            &words("apptainer build x.sif x.def"),
            &mut i,
            &mut binds
        ));
        assert!(!skip_container(
            &words("python train.py"),
            &mut i,
            &mut binds
        ));
        assert_eq!(i, 0);
    }
}
