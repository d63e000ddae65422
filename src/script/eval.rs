//! Computing the value of a Python expression without running Python: the
//! literals, names bound by assignments (in the function, then the module),
//! function parameters bound at the function's call sites (or
//! `mp.spawn(fn, args=(...))`) or by their defaults, `args.x` from argparse
//! and the launch line, a loaded config file (`cfg['x']`, `cfg.get('x', d)`,
//! `cfg.x`), `os.environ.get`, the arithmetic and list building scripts use
//! for fanouts (`[args.fanout] * args.num_layers`, `[int(x) for x in
//! s.split(',')]`), and a conditional whose condition is known. Anything
//! else is unknown (None), never guessed.

use std::collections::HashMap;

use tree_sitter::Node;

use super::index::Index;
use super::py::{Found, Source, Value, call_args, callee_name, children};

/// Deep enough for real scripts; stops `x = x + 1` and mutual references.
const MAX_DEPTH: usize = 40;

/// What an expression can refer to beyond the script itself.
pub struct Eval<'t> {
    /// The script.
    pub src: &'t Source,
    /// Its index.
    pub index: &'t Index<'t>,
    /// argparse destinations with the values the script runs with.
    pub args: HashMap<String, Found>,
    /// The config file the script loads, when there is one.
    pub config: Option<Found>,
    /// Its text, to trace a key to its line.
    pub config_text: Option<String>,
    /// Environment variables the launch sets (`SLURM_CPUS_PER_TASK`...).
    pub env: HashMap<String, Found>,
}

type Locals = Vec<(String, Found)>;

impl<'t> Eval<'t> {
    /// The value of `node`, if it can be known.
    pub fn eval(&self, node: Node<'t>) -> Option<Found> {
        self.eval_in(node, &Vec::new(), 0)
    }

    fn eval_in(&self, node: Node<'t>, locals: &Locals, depth: usize) -> Option<Found> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = depth + 1;
        let at = || self.src.at(node);
        let text = self.src.text_of(node);
        match node.kind() {
            "integer" => Some(Found::at(Value::Int(parse_int(text)?), at())),
            "float" => Some(Found::at(
                Value::Float(text.replace('_', "").parse().ok()?),
                at(),
            )),
            "true" => Some(Found::at(Value::Bool(true), at())),
            "false" => Some(Found::at(Value::Bool(false), at())),
            "none" => Some(Found::at(Value::None, at())),
            "string" => Some(Found::at(Value::Str(string_value(self.src, node)?), at())),
            "concatenated_string" => {
                let parts: Option<Vec<String>> = children(node)
                    .into_iter()
                    .map(|s| string_value(self.src, s))
                    .collect();
                Some(Found::at(Value::Str(parts?.concat()), at()))
            }
            "parenthesized_expression" => self.eval_in(node.named_child(0)?, locals, d),
            "list" | "tuple" => {
                let items: Option<Vec<Found>> = children(node)
                    .into_iter()
                    .filter(|c| c.kind() != "comment")
                    .map(|c| self.eval_in(c, locals, d))
                    .collect();
                let items = items?;
                let refs: Vec<&Found> = items.iter().collect();
                let values = items.iter().map(|f| f.value.clone()).collect();
                let mut found = Found::joined(Value::List(values), &refs);
                if found.from.is_empty() {
                    found.from.push(at());
                }
                Some(found)
            }
            "dictionary" => {
                let mut entries = Vec::new();
                let mut parts = Vec::new();
                for pair in children(node).into_iter().filter(|c| c.kind() == "pair") {
                    let key = self.eval_in(pair.child_by_field_name("key")?, locals, d)?;
                    let value = self.eval_in(pair.child_by_field_name("value")?, locals, d)?;
                    let Value::Str(k) = key.value else {
                        return None;
                    };
                    entries.push((k, value.value.clone()));
                    parts.push(value);
                }
                let refs: Vec<&Found> = parts.iter().collect();
                let mut found = Found::joined(Value::Dict(entries), &refs);
                found.from.insert(0, at());
                Some(found)
            }
            "unary_operator" => {
                let v = self.eval_in(node.child_by_field_name("argument")?, locals, d)?;
                let op = node
                    .child_by_field_name("operator")
                    .map(|o| self.src.text_of(o));
                let value = match (op, &v.value) {
                    (Some("-"), Value::Int(i)) => Value::Int(i.checked_neg()?),
                    (Some("-"), Value::Float(f)) => Value::Float(-f),
                    (Some("+"), x) => x.clone(),
                    _ => return None,
                };
                Some(Found { value, ..v })
            }
            "not_operator" => {
                let v = self.eval_in(node.child_by_field_name("argument")?, locals, d)?;
                Some(Found {
                    value: Value::Bool(!v.value.truthy()),
                    ..v
                })
            }
            "binary_operator" => self.binary(node, locals, d),
            "comparison_operator" => self.compare(node, locals, d),
            "boolean_operator" => {
                let left = self.eval_in(node.child_by_field_name("left")?, locals, d)?;
                let op = node
                    .child_by_field_name("operator")
                    .map(|o| self.src.text_of(o));
                let take_left = match op {
                    Some("or") => left.value.truthy(),
                    Some("and") => !left.value.truthy(),
                    _ => return None,
                };
                if take_left {
                    Some(left)
                } else {
                    self.eval_in(node.child_by_field_name("right")?, locals, d)
                }
            }
            "conditional_expression" => {
                let parts = children(node);
                let cond = self.eval_in(*parts.get(1)?, locals, d)?;
                let chosen = if cond.value.truthy() {
                    parts[0]
                } else {
                    *parts.get(2)?
                };
                let v = self.eval_in(chosen, locals, d)?;
                Some(Found::joined(v.value.clone(), &[&v, &cond]))
            }
            "identifier" => {
                if let Some((_, f)) = locals.iter().rev().find(|(n, _)| n == text) {
                    return Some(f.clone());
                }
                self.name(text, node, d)
            }
            "attribute" => self.attribute(node, locals, d),
            "subscript" => {
                let value = node.child_by_field_name("value")?;
                let key = self.eval_in(node.child_by_field_name("subscript")?, locals, d)?;
                if matches!(self.src.text_of(value), "os.environ" | "environ") {
                    let Value::Str(k) = &key.value else {
                        return None;
                    };
                    return self.env.get(k).cloned();
                }
                let container = self.eval_in(value, locals, d)?;
                let item = match (&container.value, &key.value) {
                    (Value::Dict(_), Value::Str(k)) => {
                        let v = container.value.get(k)?.clone();
                        let member = self.member(&container, k, v);
                        return Some(Found::joined(member.value.clone(), &[&member, &key]));
                    }
                    (Value::List(v), Value::Int(i)) => {
                        let i = if *i < 0 { v.len() as i64 + i } else { *i };
                        v.get(usize::try_from(i).ok()?)?.clone()
                    }
                    _ => return None,
                };
                Some(Found::joined(item, &[&container, &key]))
            }
            "call" => self.call(node, locals, d),
            "list_comprehension" => self.comprehension(node, locals, d),
            _ => None,
        }
    }

    fn binary(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let l = self.eval_in(node.child_by_field_name("left")?, locals, d)?;
        let r = self.eval_in(node.child_by_field_name("right")?, locals, d)?;
        let op = self.src.text_of(node.child_by_field_name("operator")?);
        use Value::*;
        let value = match (op, &l.value, &r.value) {
            ("+", Int(a), Int(b)) => Int(a.checked_add(*b)?),
            ("-", Int(a), Int(b)) => Int(a.checked_sub(*b)?),
            ("*", Int(a), Int(b)) => Int(a.checked_mul(*b)?),
            ("//", Int(a), Int(b)) if *b != 0 => Int(a.div_euclid(*b)),
            ("/", a, b) => Float(a.as_float()? / b.as_float().filter(|x| *x != 0.0)?),
            ("+", Str(a), Str(b)) => Str(format!("{a}{b}")),
            ("+", List(a), List(b)) => List(a.iter().chain(b).cloned().collect()),
            ("*", List(a), Int(n)) | ("*", Int(n), List(a)) if (0..=64).contains(n) => List(
                a.iter()
                    .cycle()
                    .take(a.len() * *n as usize)
                    .cloned()
                    .collect(),
            ),
            ("+" | "-" | "*", a, b) => {
                let (a, b) = (a.as_float()?, b.as_float()?);
                Float(match op {
                    "+" => a + b,
                    "-" => a - b,
                    _ => a * b,
                })
            }
            _ => return Option::None,
        };
        Some(Found::joined(value, &[&l, &r]))
    }

    /// `a > 0`, `x == 'cpu'`, `y is None`: two operands only.
    fn compare(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let [a, b] = children(node)[..] else {
            return Option::None;
        };
        let op = self.src.text.get(a.end_byte()..b.start_byte())?.trim();
        let l = self.eval_in(a, locals, d)?;
        let r = self.eval_in(b, locals, d)?;
        let ord = match (l.value.as_float(), r.value.as_float()) {
            (Some(x), Some(y)) if !matches!(l.value, Value::Str(_)) => x.partial_cmp(&y),
            _ => Option::None,
        };
        let truth = match op {
            "==" | "is" => l.value == r.value,
            "!=" | "is not" => l.value != r.value,
            "<" => ord? == std::cmp::Ordering::Less,
            ">" => ord? == std::cmp::Ordering::Greater,
            "<=" => ord? != std::cmp::Ordering::Greater,
            ">=" => ord? != std::cmp::Ordering::Less,
            _ => return Option::None,
        };
        Some(Found::joined(Value::Bool(truth), &[&l, &r]))
    }

    fn comprehension(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let body = node.child_by_field_name("body")?;
        let clauses: Vec<Node> = children(node).into_iter().skip(1).collect();
        let [clause] = clauses.as_slice() else {
            return None;
        };
        if clause.kind() != "for_in_clause" {
            return None;
        }
        let var = clause.child_by_field_name("left")?;
        if var.kind() != "identifier" {
            return None;
        }
        let iter = self.eval_in(clause.child_by_field_name("right")?, locals, d)?;
        let Value::List(items) = &iter.value else {
            return None;
        };
        let mut out = Vec::new();
        let mut inner = locals.clone();
        for item in items {
            inner.push((
                self.src.text_of(var).to_string(),
                Found {
                    value: item.clone(),
                    ..iter.clone()
                },
            ));
            out.push(self.eval_in(body, &inner, d)?.value);
            inner.pop();
        }
        Some(Found {
            value: Value::List(out),
            ..iter
        })
    }

    fn attribute(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let object = node.child_by_field_name("object")?;
        let attr = self.src.text_of(node.child_by_field_name("attribute")?);
        // `args.x` (or `opt.x`, `FLAGS.x`): an argparse destination.
        if object.kind() == "identifier" && self.is_args(object) {
            return self.args.get(attr).cloned();
        }
        // `cfg.loader.batch_size`: a config read as attributes (OmegaConf, SimpleNamespace).
        let container = self.eval_in(object, locals, d)?;
        let v = container.value.get(attr)?.clone();
        Some(self.member(&container, attr, v))
    }

    /// `v`, taken from `container` by `key`: when the container came from
    /// the config file, its origin is the key's line there (the first line
    /// after the container's own that starts with `key:`).
    fn member(&self, container: &Found, key: &str, v: Value) -> Found {
        let mut from = container.from.clone();
        let (Some(cfg), Some(text), Some(first)) = (&self.config, &self.config_text, from.first())
        else {
            return Found { value: v, from };
        };
        let Some(label) = cfg.from.first() else {
            return Found { value: v, from };
        };
        let after = match first.strip_prefix(label.as_str()) {
            Some("") => 0,
            Some(rest) => match rest.strip_prefix(':').and_then(|n| n.parse().ok()) {
                Some(n) => n,
                None => return Found { value: v, from },
            },
            None => return Found { value: v, from },
        };
        let line = text.lines().enumerate().skip(after).find(|(_, l)| {
            let t = l.trim_start().trim_start_matches(['"', '\'']);
            t.strip_prefix(key).is_some_and(|r| {
                r.trim_start_matches(['"', '\''])
                    .trim_start()
                    .starts_with(':')
            })
        });
        if let Some((i, _)) = line {
            from[0] = format!("{label}:{}", i + 1);
        }
        Found { value: v, from }
    }

    /// Whether identifier `object` holds the parsed arguments.
    fn is_args(&self, object: Node<'t>) -> bool {
        let name = self.src.text_of(object);
        if self.args.is_empty() {
            return false;
        }
        match self.index.assignment_at(name, object) {
            Some(a) => {
                a.value.kind() == "call"
                    && matches!(
                        callee_name(self.src, a.value),
                        "parse_args" | "parse_known_args"
                    )
            }
            // A parameter (`def main(args)`) named like the parsed arguments.
            None => matches!(
                name,
                "args" | "opt" | "opts" | "FLAGS" | "flags" | "hparams"
            ),
        }
    }

    fn name(&self, name: &str, at: Node<'t>, d: usize) -> Option<Found> {
        if let Some(a) = self.index.assignment_at(name, at) {
            let v = self.eval_in(a.value, &Vec::new(), d)?;
            if a.position == 0 && !matches!(a.value.kind(), "tuple" | "expression_list") {
                return Some(v);
            }
            // `args, _ = parser.parse_known_args()` names the first of a pair.
            return match v.value {
                Value::List(items) => Some(Found {
                    value: items.get(a.position)?.clone(),
                    ..v
                }),
                _ => None,
            };
        }
        self.parameter(name, self.index.enclosing_function(at)?, d)
    }

    /// A parameter of `func`, bound at its first call site or by its default.
    fn parameter(&self, name: &str, func: Node<'t>, d: usize) -> Option<Found> {
        let params = children(func.child_by_field_name("parameters")?);
        let pos = params
            .iter()
            .position(|p| param_name(self.src, *p) == Some(name))?;
        let fname = super::index::def_name(self.src, func);
        // Only calls of `fname` itself, or of a `*spawn` that may start it.
        let sites = self
            .index
            .calls_of(fname)
            .chain(self.index.calls_of_suffix("spawn"));
        for call in sites {
            if self.index.enclosing_function(call) == Some(func) {
                continue;
            }
            let args = call_args(self.src, call);
            let callee = call
                .child_by_field_name("function")
                .map(|f| self.src.text_of(f));
            if callee == Some(fname) {
                if let Some((_, v)) = args.keywords.iter().find(|(k, _)| k == name) {
                    return self.eval_in(*v, &Vec::new(), d);
                }
                if let Some(v) = args.positional.get(pos) {
                    return self.eval_in(*v, &Vec::new(), d);
                }
            }
            // mp.spawn(fn, args=(a, b), nprocs=n): fn(rank, a, b).
            let spawned = callee.is_some_and(|c| c.ends_with("spawn"))
                && args.positional.first().map(|f| self.src.text_of(*f)) == Some(fname);
            if spawned
                && pos > 0
                && let Some((_, tuple)) = args.keywords.iter().find(|(k, _)| k == "args")
                && let Some(v) = children(*tuple).get(pos - 1)
            {
                return self.eval_in(*v, &Vec::new(), d);
            }
        }
        let default = params[pos].child_by_field_name("value")?;
        self.eval_in(default, &Vec::new(), d)
    }

    fn call(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
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

/// The name of one entry of a `parameters` list.
pub fn param_name<'a>(src: &'a Source, p: Node) -> Option<&'a str> {
    match p.kind() {
        "identifier" => Some(src.text_of(p)),
        "default_parameter" | "typed_default_parameter" => {
            Some(src.text_of(p.child_by_field_name("name")?))
        }
        "typed_parameter" => children(p)
            .into_iter()
            .find(|c| c.kind() == "identifier")
            .map(|c| src.text_of(c)),
        _ => None,
    }
}

/// `1_000`, `0x10` → the int.
fn parse_int(text: &str) -> Option<i64> {
    let t = text.replace('_', "").to_ascii_lowercase();
    if let Some(h) = t.strip_prefix("0x") {
        return i64::from_str_radix(h, 16).ok();
    }
    t.parse().ok()
}

/// The value of a plain string literal (no f-string interpolation, simple escapes).
pub fn string_value(src: &Source, node: Node) -> Option<String> {
    if node.kind() != "string" {
        return None;
    }
    let mut out = String::new();
    for c in children(node) {
        match c.kind() {
            "string_content" => out.push_str(src.text_of(c)),
            "escape_sequence" => out.push_str(match src.text_of(c) {
                "\\n" => "\n",
                "\\t" => "\t",
                other => other.get(1..).unwrap_or(""),
            }),
            "interpolation" => return None,
            _ => {}
        }
    }
    Some(out)
}

/// Map helper for callers that build environments.
pub fn env_of(pairs: &[(String, Found)]) -> HashMap<String, Found> {
    pairs.iter().cloned().collect()
}
