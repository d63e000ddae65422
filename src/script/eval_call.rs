//! Calls in an expression: the builtins scripts build numbers and lists
//! with (`int`, `float`, `str`, `list`, `dict(k=v)`, `len`, `min`, `max`,
//! `range`, `vars(args)`), `os.environ.get`/`os.getenv`,
//! `len(os.sched_getaffinity(0))` and `os.cpu_count()` (the task's CPUs
//! under Slurm or `--cpus`) and `torch.cuda.device_count()` (the node's
//! GPUs from the gres), a config loaded by yaml/json/OmegaConf,
//! `s.split(sep)`, `s.lower()`, `d.get(k, default)`, `d.copy()`, and the
//! return value of the project's own functions (eval_return.rs).

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::py::{Found, Value, call_args, callee_name};

impl<'t> Eval<'t> {
    pub(super) fn call(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let function = node.child_by_field_name("function")?;
        let ftext = self.text(function);
        let args = call_args(self.src(node), node);
        let arg = |i: usize| -> Option<Found> { self.eval_in(*args.positional.get(i)?, locals, d) };
        let name = callee_name(self.src(node), node);
        match ftext {
            "int" => {
                let v = arg(0)?;
                let i = match &v.value {
                    Value::Float(f) => f.trunc() as i64,
                    other => other.as_int()?,
                };
                return Some(Found {
                    value: Value::Int(i),
                    ..v
                });
            }
            "float" => {
                let v = arg(0)?;
                return Some(Found {
                    value: Value::Float(v.value.as_float()?),
                    ..v
                });
            }
            "str" => {
                let v = arg(0)?;
                let s = match &v.value {
                    Value::Str(s) => s.clone(),
                    Value::Int(i) => i.to_string(),
                    _ => return None,
                };
                return Some(Found {
                    value: Value::Str(s),
                    ..v
                });
            }
            "list" | "tuple" => return arg(0).filter(|v| matches!(v.value, Value::List(_))),
            // Attribute-access dicts (addict's Dict, EasyDict, DotMap,
            // ml_collections' ConfigDict, OmegaConf.create) around a dict:
            // read as that dict (attribute access reads its keys).
            "Dict"
            | "EasyDict"
            | "edict"
            | "DotMap"
            | "AttrDict"
            | "Munch"
            | "ConfigDict"
            | "OmegaConf.create"
            | "omegaconf.OmegaConf.create"
                if self.callee_def(node).is_none()
                    && args.keywords.is_empty()
                    && args.positional.len() == 1 =>
            {
                return arg(0).filter(|v| matches!(v.value, Value::Dict(_)));
            }
            "dict" => {
                let mut entries = Vec::new();
                let mut parts = Vec::new();
                for (k, v) in &args.keywords {
                    let f = self.eval_in(*v, locals, d)?;
                    entries.push((k.clone(), f.value.clone()));
                    parts.push(f);
                }
                let refs: Vec<&Found> = parts.iter().collect();
                let mut found = Found::joined(Value::Dict(entries), &refs);
                found.from.insert(0, self.at(node));
                return Some(found);
            }
            "min" | "max" => {
                let vals: Option<Vec<Found>> = (0..args.positional.len()).map(arg).collect();
                let vals = vals?;
                let mut ints = Vec::new();
                for v in &vals {
                    ints.push(v.value.as_int()?);
                }
                let v = if ftext == "min" {
                    ints.iter().min()?
                } else {
                    ints.iter().max()?
                };
                let refs: Vec<&Found> = vals.iter().collect();
                return Some(Found::joined(Value::Int(*v), &refs));
            }
            "range" => {
                // Every bound counts as a source: `range(1, num_layers)` is
                // decided where num_layers is, not by the literal 1.
                let founds: Option<Vec<Found>> = (0..args.positional.len()).map(arg).collect();
                let founds = founds?;
                let vals: Option<Vec<i64>> = founds.iter().map(|f| f.value.as_int()).collect();
                let (start, end) = match vals?.as_slice() {
                    [e] => (0, *e),
                    [s, e, ..] => (*s, *e),
                    _ => return None,
                };
                if end - start > 64 {
                    return None;
                }
                let refs: Vec<&Found> = founds.iter().collect();
                return Some(Found::joined(
                    Value::List((start..end.max(start)).map(Value::Int).collect()),
                    &refs,
                ));
            }
            "vars"
                if args.positional.first().is_some_and(|a| {
                    self.is_args(*a)
                        || a.kind() == "call"
                            && matches!(
                                callee_name(self.src(*a), *a),
                                "parse_args" | "parse_known_args"
                            )
                }) =>
            {
                let mut entries: Vec<(String, Value)> = self
                    .args
                    .iter()
                    .map(|(k, v)| (k.clone(), v.value.clone()))
                    .collect();
                entries.sort_by(|a, b| a.0.cmp(&b.0));
                return Some(Found::at(Value::Dict(entries), self.at(node)));
            }
            // dataclasses.field(default=...) / field(default_factory=lambda: [...]).
            "field" | "dataclasses.field" => {
                if let Some((_, v)) = args.keywords.iter().find(|(k, _)| k == "default") {
                    return self.eval_in(*v, locals, d);
                }
                let (_, f) = args.keywords.iter().find(|(k, _)| k == "default_factory")?;
                return match f.kind() {
                    "lambda" => self.eval_in(f.child_by_field_name("body")?, locals, d),
                    _ if matches!(self.text(*f), "list" | "tuple") => {
                        Some(Found::at(Value::List(vec![]), self.at(*f)))
                    }
                    _ => None,
                };
            }
            "os.cpu_count" | "multiprocessing.cpu_count" | "mp.cpu_count" => {
                if let Some(c) = self.env.get("SLURM_CPUS_PER_TASK") {
                    return Some(self.counted_at(c, node));
                }
                // Outside Slurm (no directive set a SLURM_* variable) the
                // script runs where it is planned: this machine's CPUs, as
                // os.cpu_count() counts them (online ones).
                if self
                    .env
                    .keys()
                    .any(|k| k.starts_with("SLURM_") && k != "SLURM_SUBMIT_DIR")
                {
                    return None;
                }
                use nix::unistd::{SysconfVar, sysconf};
                let n = sysconf(SysconfVar::_NPROCESSORS_ONLN).ok().flatten()?;
                let why = format!("{} (os.cpu_count() on this machine: {n})", self.at(node));
                return (n > 0).then(|| Found::at(Value::Int(n), why));
            }
            "len" => {
                // len(os.sched_getaffinity(0)): Slurm binds the task to its CPUs.
                let inner = *args.positional.first()?;
                if self.text(inner).starts_with("os.sched_getaffinity") {
                    return self
                        .env
                        .get("SLURM_CPUS_PER_TASK")
                        .map(|c| self.counted_at(c, node));
                }
                let v = arg(0)?;
                let n = match &v.value {
                    Value::List(l) => l.len(),
                    Value::Dict(l) => l.len(),
                    Value::Str(s) => s.chars().count(),
                    _ => return None,
                };
                return Some(Found {
                    value: Value::Int(n as i64),
                    ..v
                });
            }
            "os.environ.get" | "os.getenv" | "environ.get" | "getenv" => {
                let key = arg(0)?;
                let Value::Str(k) = &key.value else {
                    return None;
                };
                return self.env.get(k).cloned().or_else(|| arg(1));
            }
            "torch.cuda.device_count" => return self.env.get("SLURM_GPUS_ON_NODE").cloned(),
            _ => {}
        }
        // A config file loaded by yaml/json/OmegaConf.
        let loader_module = ["yaml.", "json.", "OmegaConf.", "omegaconf.", "toml."]
            .iter()
            .any(|m| ftext.starts_with(m));
        if loader_module && matches!(name, "safe_load" | "load" | "full_load" | "create") {
            return self.config.clone();
        }
        let object = function.child_by_field_name("object");
        match name {
            "split" => {
                let s = self.eval_in(object?, locals, d)?;
                let Value::Str(text) = &s.value else {
                    return None;
                };
                let parts: Vec<Value> = match arg(0) {
                    Some(Found {
                        value: Value::Str(sep),
                        ..
                    }) if !sep.is_empty() => text
                        .split(sep.as_str())
                        .map(|p| Value::Str(p.to_string()))
                        .collect(),
                    _ => text
                        .split_whitespace()
                        .map(|p| Value::Str(p.to_string()))
                        .collect(),
                };
                Some(Found {
                    value: Value::List(parts),
                    ..s
                })
            }
            "lower" | "upper" | "strip" if args.positional.is_empty() => {
                let s = self.eval_in(object?, locals, d)?;
                let Value::Str(text) = &s.value else {
                    return None;
                };
                let v = match name {
                    "lower" => text.to_lowercase(),
                    "upper" => text.to_uppercase(),
                    _ => text.trim().to_string(),
                };
                Some(Found {
                    value: Value::Str(v),
                    ..s
                })
            }
            "copy" | "to_container" | "deepcopy" => {
                let inner = args.positional.first().copied().or(object)?;
                self.eval_in(inner, locals, d)
            }
            "get" => {
                let container = self.eval_in(object?, locals, d)?;
                let key = arg(0)?;
                let Value::Str(k) = &key.value else {
                    return None;
                };
                match container.value.get(k) {
                    Some(v) => Some(self.member(&container, k, v.clone())),
                    None => arg(1),
                }
            }
            _ => self.returned(node, locals, d),
        }
    }
}

impl Eval<'_> {
    /// The task's CPUs (`c`, from `-c` or `--cpus`) as counted by the call
    /// at `node`: the call's line first, then where the count was given.
    fn counted_at(&self, c: &Found, node: Node) -> Found {
        let mut f = c.clone();
        f.from.insert(0, self.at(node));
        f
    }
}
