//! Following an sbatch script to the Python program it runs: the `#SBATCH`
//! directives, the variables the script sets (and `SLURM_*` variables Slurm
//! will set from the directives), `cd`, and the launch line through its
//! launchers: `srun`, `mpirun`/`mpiexec`, `torchrun` or `python -m
//! torch.distributed.run` (`--nproc_per_node`), `accelerate launch`
//! (`--num_processes`), `env`, then `python [-u] script.py` or `python -m
//! package.module`. Words are split as the shell splits them (`shlex`), after
//! `$VAR`, `${VAR}`, `${VAR:-default}` substitution.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::py::{Found, Value};

/// The Python program an sbatch script runs.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The entry point (`train.py`, or `pkg/mod.py` for `-m pkg.mod`).
    pub script: PathBuf,
    /// The arguments it gets.
    pub argv: Vec<String>,
    /// `train.sbatch:14`, the launch line.
    pub at: String,
    /// Ranks per node the launcher starts, and where that was read.
    pub ranks: Option<Found>,
    /// `#SBATCH` directives: (option without dashes, value, `file:line`).
    pub directives: Vec<(String, String, String)>,
    /// Environment the program sees, by name.
    pub env: HashMap<String, Found>,
    /// The directory it runs in (relative paths it opens start there).
    pub cwd: PathBuf,
}

/// Reads `text` (the sbatch script at `path`); None when no line launches Python.
pub fn follow(text: &str, path: &Path) -> Option<Launch> {
    let label = path
        .file_name()
        .map_or("script".into(), |n| n.to_string_lossy().to_string());
    let dir = path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    // sbatch runs the script from the submit directory; the script's own
    // directory is the guess (the usual `cd $SLURM_SUBMIT_DIR` then lands there).
    let dir = if dir.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        dir
    };
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let mut env: HashMap<String, Found> = HashMap::new();
    let mut directives = Vec::new();
    let mut cwd = dir.clone();
    env.insert(
        "SLURM_SUBMIT_DIR".into(),
        Found::at(Value::Str(dir.display().to_string()), "sbatch"),
    );
    // Continuation lines keep the line number of their first line.
    let mut lines: Vec<(usize, String)> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        match lines.last_mut() {
            Some((_, prev)) if prev.ends_with('\\') => {
                prev.pop();
                prev.push(' ');
                prev.push_str(raw.trim());
            }
            _ => lines.push((n + 1, raw.trim().to_string())),
        }
    }
    for (n, line) in lines {
        let at = format!("{label}:{n}");
        if let Some(rest) = line.strip_prefix("#SBATCH") {
            let words = shlex::split(rest.split(" #").next().unwrap_or(rest)).unwrap_or_default();
            for (k, v) in options(&words) {
                slurm_env(&k, &v, &at, &mut env);
                directives.push((k, v, at.clone()));
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let line = substitute(&line, &env);
        let Some(words) = shlex::split(&line) else {
            continue;
        };
        let words: Vec<String> = words
            .into_iter()
            .take_while(|w| !matches!(w.as_str(), "|" | ">" | "&&" | ";" | "2>&1"))
            .collect();
        let first = words.first().map(String::as_str).unwrap_or("");
        let first = first.strip_prefix("export ").unwrap_or(first);
        if words.len() == 2 && first == "export" {
            assign(&words[1], &at, &mut env);
            continue;
        }
        if first == "cd" {
            if let Some(d) = words.get(1) {
                cwd = cwd.join(d);
            }
            continue;
        }
        if words.len() == 1 && assign(&words[0], &at, &mut env) {
            continue;
        }
        if let Some(launch) = super::launchers::launch_line(&words, &at, &cwd, &env) {
            return Some(Launch {
                directives,
                env,
                ..launch
            });
        }
    }
    None
}

/// `NAME=value` into `env`; false when `word` is not an assignment.
fn assign(word: &str, at: &str, env: &mut HashMap<String, Found>) -> bool {
    let Some((name, value)) = word.split_once('=') else {
        return false;
    };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return false;
    }
    env.insert(
        name.to_string(),
        Found::at(Value::Str(value.to_string()), at),
    );
    true
}

/// The variables Slurm sets from directives the script reads (sbatch(1), "OUTPUT ENVIRONMENT VARIABLES").
fn slurm_env(key: &str, value: &str, at: &str, env: &mut HashMap<String, Found>) {
    let mut set = |name: &str, v: String| {
        env.insert(
            name.to_string(),
            Found::at(Value::Str(v), format!("{at} (#SBATCH --{key})")),
        );
    };
    match key {
        "c" | "cpus-per-task" => set("SLURM_CPUS_PER_TASK", value.to_string()),
        "ntasks-per-node" => set("SLURM_NTASKS_PER_NODE", value.to_string()),
        "N" | "nodes" => set("SLURM_JOB_NUM_NODES", value.to_string()),
        "gres" | "gpus-per-node" | "G" | "gpus" => {
            let req = super::gres::parse_request(value, key == "gres");
            if let Some(n) = req.and_then(|r| r.count) {
                set("SLURM_GPUS_ON_NODE", n.to_string());
            }
        }
        _ => {}
    }
}

/// `--mem=256G`, `--mem 256G`, `-c 8`, `-c8` → (mem, 256G), (c, 8).
fn options(words: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = &words[i];
        i += 1;
        if let Some(long) = w.strip_prefix("--") {
            match long.split_once('=') {
                Some((k, v)) => out.push((k.to_string(), v.to_string())),
                None if i < words.len() && !words[i].starts_with('-') => {
                    out.push((long.to_string(), words[i].clone()));
                    i += 1;
                }
                None => out.push((long.to_string(), String::new())),
            }
        } else if let Some(short) = w.strip_prefix('-') {
            let (k, v) = short.split_at(short.len().min(1));
            if !v.is_empty() {
                out.push((k.to_string(), v.trim_start_matches('=').to_string()));
            } else if i < words.len() {
                out.push((k.to_string(), words[i].clone()));
                i += 1;
            }
        }
    }
    out
}

/// `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`, `${VAR:=default}`.
pub fn substitute(text: &str, env: &HashMap<String, Found>) -> String {
    let get = |n: &str| match env.get(n).map(|f| &f.value) {
        Some(Value::Str(s)) => Some(s.clone()),
        _ => None,
    };
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(inner) = after.strip_prefix('{')
            && let Some(end) = inner.find('}')
        {
            let body = &inner[..end];
            let (name, default) = match body.find([':', '-', '=']) {
                Some(i) => (
                    &body[..i],
                    Some(body[i..].trim_start_matches([':', '-', '='])),
                ),
                None => (body, None),
            };
            match (get(name), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => out.push_str(&rest[pos..pos + 2 + end + 1]),
            }
            rest = &inner[end + 1..];
            if out.len() > crate::limits::MAX_VARIABLE_BYTES {
                break;
            }
            continue;
        }
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        match get(&after[..end]) {
            Some(v) if end > 0 => out.push_str(&v),
            _ => {
                out.push('$');
                out.push_str(&after[..end]);
            }
        }
        rest = &after[end..];
        if out.len() > crate::limits::MAX_VARIABLE_BYTES {
            break;
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(text: &str) -> Launch {
        follow(text, Path::new("/jobs/run.sbatch")).unwrap()
    }

    #[test]
    fn launchers_are_followed_to_the_script() {
        let l = launch(
            "#!/bin/bash\n#SBATCH -c 8\n#SBATCH --gres=gpu:a100:4\nBS=${BATCH:-2048}\n\
            srun --ntasks-per-node=1 torchrun --standalone --nproc_per_node gpu \\\n  src/train.py --batch_size $BS --workers $SLURM_CPUS_PER_TASK\n",
        );
        assert_eq!(l.script, PathBuf::from("/jobs/src/train.py"));
        assert_eq!(l.argv, ["--batch_size", "2048", "--workers", "8"]);
        assert_eq!(l.at, "run.sbatch:5");
        assert_eq!(
            l.ranks.unwrap().value,
            Value::Int(4),
            "gpu = the GPUs of the node"
        );
        let l = launch("cd code\npython -u -m trainer.main --config 'cfg a.yaml'\n");
        assert_eq!(l.script, PathBuf::from("/jobs/code/trainer/main.py"));
        assert_eq!(l.argv, ["--config", "cfg a.yaml"]);
        let l = launch("accelerate launch --multi_gpu --num_processes 2 train.py\n");
        assert_eq!(l.ranks.unwrap().value, Value::Int(2));
        let l = launch("mpirun -np 4 python3 train.py -b 8\n");
        assert_eq!(l.argv, ["-b", "8"]);
        let l = launch("python -m torch.distributed.run --nproc-per-node=3 train.py\n");
        assert_eq!(l.ranks.unwrap().value, Value::Int(3));
        assert!(follow("#SBATCH --mem=1G\necho hi\n", Path::new("s")).is_none());
    }

    #[test]
    fn substitution_takes_defaults_and_leaves_unknowns() {
        let mut env = HashMap::new();
        env.insert("A".to_string(), Found::at(Value::Str("1".into()), "s:1"));
        assert_eq!(
            substitute("$A ${A} ${B:-7} ${C-x} $D ${E}", &env),
            "1 1 7 x $D ${E}"
        );
    }
}
