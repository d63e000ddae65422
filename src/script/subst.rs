//! The variables a launch file sees and `$` substitution: `$VAR`, `${VAR}`,
//! `${VAR:-default}` (also `-`, `:=`), the positional arguments of a file
//! called with arguments (`$1`..`$9`, `${10}`, `$#`, and `"$@"`/`$*` as
//! the words they hold, quoted so they stay words), and the `SLURM_*`
//! variables Slurm sets from the directives (sbatch(1), "OUTPUT ENVIRONMENT
//! VARIABLES"). `$(cmd)` and `$((...))` are left as written: nothing runs.

use std::collections::HashMap;

use super::py::{Found, Value};

/// Variables by name, with where each was set.
#[derive(Debug, Clone, Default)]
pub struct Env {
    /// Named variables.
    pub vars: HashMap<String, Found>,
    /// `$1`, `$2`...: the arguments of the file being read.
    pub positional: Vec<String>,
}

impl Env {
    /// The variables `vars`, no positional arguments.
    pub fn new(vars: HashMap<String, Found>) -> Env {
        Env {
            vars,
            positional: Vec::new(),
        }
    }

    /// A copy for a file called with `args`.
    pub fn with_positional(&self, args: &[String]) -> Env {
        let mut e = self.clone();
        e.positional = args.to_vec();
        e
    }

    /// Sets `name` to `value`, read at `at`.
    pub fn set(&mut self, name: &str, value: &str, at: &str) {
        self.vars.insert(
            name.to_string(),
            Found::at(Value::Str(value.to_string()), at),
        );
    }

    /// Whether `word` is `NAME=value`.
    pub fn is_assignment(&self, word: &str) -> bool {
        word.split_once('=').is_some_and(|(n, _)| {
            !n.is_empty()
                && !n.starts_with(|c: char| c.is_ascii_digit())
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
    }

    /// `NAME=value` into the variables; false when `word` is not one.
    pub fn assign(&mut self, word: &str, at: &str) -> bool {
        if !self.is_assignment(word) {
            return false;
        }
        let (name, value) = word.split_once('=').unwrap_or((word, ""));
        self.set(name, value, at);
        true
    }

    /// The variables Slurm sets from directive `key`=`value` at `at`.
    pub fn slurm(&mut self, key: &str, value: &str, at: &str) {
        let from = format!("{at} (#SBATCH --{key})");
        let mut set = |name: &str, v: String| {
            self.vars
                .insert(name.to_string(), Found::at(Value::Str(v), from.clone()));
        };
        match key {
            "c" | "cpus-per-task" => set("SLURM_CPUS_PER_TASK", value.to_string()),
            "ntasks-per-node" => set("SLURM_NTASKS_PER_NODE", value.to_string()),
            "n" | "ntasks" => set("SLURM_NTASKS", value.to_string()),
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

    fn get(&self, name: &str) -> Option<String> {
        if let Ok(i) = name.parse::<usize>() {
            return i
                .checked_sub(1)
                .and_then(|i| self.positional.get(i))
                .cloned();
        }
        if name == "#" {
            return Some(self.positional.len().to_string());
        }
        match self.vars.get(name).map(|f| &f.value) {
            Some(Value::Str(s)) => Some(s.clone()),
            _ => None,
        }
    }

    /// The positional arguments as shell words, each quoted.
    fn all_args(&self) -> String {
        self.positional
            .iter()
            .map(|a| shlex::try_quote(a).map_or_else(|_| a.clone(), |q| q.to_string()))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `text` with its variables replaced; unknown ones left as written. Past
/// [`crate::limits::MAX_VARIABLE_BYTES`] the partial text is the error
/// (`A=$A$A` on 40 lines would make 2^40 bytes).
pub fn substitute(text: &str, env: &Env) -> Result<String, String> {
    let text = text
        .replace("\"$@\"", &env.all_args())
        .replace("\"${@}\"", &env.all_args())
        .replace("$@", &env.all_args())
        .replace("\"$*\"", &env.all_args())
        .replace("$*", &env.all_args());
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
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
            match (env.get(name), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => out.push_str(&rest[pos..pos + 2 + end + 1]),
            }
            rest = &inner[end + 1..];
        } else {
            let end = match after.chars().next() {
                Some(c) if c.is_ascii_digit() || c == '#' => 1,
                _ => after
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .unwrap_or(after.len()),
            };
            match env.get(&after[..end]) {
                Some(v) if end > 0 => out.push_str(&v),
                _ => {
                    out.push('$');
                    out.push_str(&after[..end]);
                }
            }
            rest = &after[end..];
        }
        if out.len() > crate::limits::MAX_VARIABLE_BYTES {
            return Err(out);
        }
    }
    out.push_str(rest);
    if out.len() > crate::limits::MAX_VARIABLE_BYTES {
        return Err(out);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_defaults_and_positional_arguments() {
        let mut env = Env::default();
        env.set("A", "1", "s:1");
        let env = env.with_positional(&["--x".into(), "a b".into()]);
        assert_eq!(
            substitute("$A ${A} ${B:-7} ${C-x} $D ${E} $1 $# $(date)", &env).unwrap(),
            "1 1 7 x $D ${E} --x 2 $(date)"
        );
        assert_eq!(
            substitute("python t.py \"$@\"", &env).unwrap(),
            "python t.py --x 'a b'"
        );
        assert_eq!(
            shlex::split(&substitute("python t.py $@ --y", &env).unwrap()).unwrap(),
            ["python", "t.py", "--x", "a b", "--y"]
        );
    }

    #[test]
    fn doubling_stops_at_the_limit() {
        let mut env = Env::default();
        env.set("A", &"x".repeat(1 << 20), "s:1");
        let text = "$A".repeat(4096);
        let partial = substitute(&text, &env).unwrap_err();
        assert!(partial.len() <= crate::limits::MAX_VARIABLE_BYTES + (1 << 20));
    }
}
