//! Names in an expression: `args.x` (argparse), attributes of a config
//! (`cfg.loader.batch_size`, each value traced to its line in the config
//! file), names bound by assignment, and function parameters bound at the
//! function's call sites (or `mp.spawn(fn, args=(...))`) or by defaults.

use tree_sitter::Node;

use super::eval::{Eval, Locals, param_name};
use super::py::{Found, Value, call_args, callee_name, children};

impl<'t> Eval<'t> {
    pub(super) fn attribute(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
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
    pub(super) fn member(&self, container: &Found, key: &str, v: Value) -> Found {
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
    pub(super) fn is_args(&self, object: Node<'t>) -> bool {
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

    pub(super) fn name(&self, name: &str, at: Node<'t>, d: usize) -> Option<Found> {
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
    pub(super) fn parameter(&self, name: &str, func: Node<'t>, d: usize) -> Option<Found> {
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
}
