//! Calls in an expression: the builtins scripts build numbers and lists
//! with (`int`, `float`, `str`, `list`, `dict(k=v)`, `len`, `min`, `max`),
//! `os.environ.get`/`os.getenv`, `len(os.sched_getaffinity(0))` and
//! `torch.cuda.device_count()` from Slurm's variables, a config loaded by
//! yaml/json/OmegaConf, `s.split(sep)` and `d.get(k, default)`.

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::py::{Found, Value, call_args, callee_name};

impl<'t> Eval<'t> {
    pub(super) fn call(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let function = node.child_by_field_name("function")?;
        let ftext = self.src.text_of(function);
        let args = call_args(self.src, node);
        let arg = |i: usize| -> Option<Found> { self.eval_in(*args.positional.get(i)?, locals, d) };
        let name = callee_name(self.src, node);
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
                found.from.insert(0, self.src.at(node));
                return Some(found);
            }
            "min" | "max" => {
                let a = arg(0)?;
                let b = arg(1)?;
                let (x, y) = (a.value.as_int()?, b.value.as_int()?);
                let v = if ftext == "min" { x.min(y) } else { x.max(y) };
                return Some(Found::joined(Value::Int(v), &[&a, &b]));
            }
            "len" => {
                // len(os.sched_getaffinity(0)): Slurm binds the task to its CPUs.
                let inner = *args.positional.first()?;
                if self.src.text_of(inner).starts_with("os.sched_getaffinity") {
                    return self.env.get("SLURM_CPUS_PER_TASK").cloned();
                }
                let v = arg(0)?;
                let n = match &v.value {
                    Value::List(l) => l.len(),
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
            _ => None,
        }
    }
}
