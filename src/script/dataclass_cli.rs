//! Configs made of a function's or a dataclass's own signature: jsonargparse's
//! `CLI(main)` / `auto_cli(main)` (each parameter of `main` an option,
//! `--batch_size 512` or `--batch_size=512`, its default the parameter's),
//! `tyro.cli(Config)` / `CLI(Config)` over a dataclass (each field an
//! option, its default the field's: `batch_size: int = 1024`,
//! `field(default=...)`, `field(default_factory=lambda: [15, 10])`), and a
//! dataclass instantiated directly (`cfg = Config(batch_size=512)`).

use tree_sitter::Node;

use super::argparse::Argument;
use super::eval::{Eval, param_name};
use super::py::{Found, Value, call_args, callee_name, children};

/// Calls that build options from a signature.
const CLIS: &[&str] = &["CLI", "auto_cli", "cli", "parse_args_into_dataclasses"];

/// The options `CLI(f)` / `tyro.cli(C)` calls define.
pub fn definitions<'t>(ev: &Eval<'t>) -> Vec<Argument> {
    let mut out = Vec::new();
    for call in ev.calls() {
        if !CLIS.contains(&callee_name(ev.src(call), call)) {
            continue;
        }
        let Some(target) = call_args(ev.src(call), call).positional.first().copied() else {
            continue;
        };
        if target.kind() != "identifier" {
            continue;
        }
        let m = ev.project.module_of(call);
        let name = ev.text(target);
        if let Some(f) = ev.def_named(m, name) {
            out.extend(signature(ev, f));
        } else if let Some(c) = ev.class_named(m, name) {
            out.extend(fields(ev, c));
        }
    }
    out
}

/// Each parameter of `f` an option.
fn signature<'t>(ev: &Eval<'t>, f: Node<'t>) -> Vec<Argument> {
    let Some(params) = f.child_by_field_name("parameters") else {
        return vec![];
    };
    children(params)
        .into_iter()
        .filter_map(|p| {
            let name = param_name(ev.src(f), p)?.to_string();
            let kind = p
                .child_by_field_name("type")
                .map_or("str", |t| ev.text(t))
                .to_string();
            let default = p
                .child_by_field_name("value")
                .and_then(|v| ev.eval(v))
                .or_else(|| Some(Found::at(Value::None, ev.at(p))));
            Some(option(name, kind, default))
        })
        .collect()
}

/// Each annotated field of the class body of `c` an option.
fn fields<'t>(ev: &Eval<'t>, c: Node<'t>) -> Vec<Argument> {
    let Some(body) = c.child_by_field_name("body") else {
        return vec![];
    };
    let mut out = Vec::new();
    for stmt in children(body) {
        let Some(a) = stmt.named_child(0).filter(|a| a.kind() == "assignment") else {
            continue;
        };
        let (Some(left), Some(ty)) = (a.child_by_field_name("left"), a.child_by_field_name("type"))
        else {
            continue;
        };
        let default = a.child_by_field_name("right").and_then(|v| ev.eval(v));
        out.push(option(
            ev.text(left).to_string(),
            ev.text(ty).to_string(),
            default,
        ));
    }
    out
}

fn option(name: String, kind: String, default: Option<Found>) -> Argument {
    let list = kind.starts_with("List")
        || kind.starts_with("list")
        || kind.starts_with("Sequence")
        || kind.starts_with("tuple");
    let kind = if kind.contains("int") {
        "int"
    } else if kind.contains("float") {
        "float"
    } else if kind.contains("bool") {
        "ast.literal_eval"
    } else {
        "str"
    };
    Argument {
        options: vec![format!("--{name}"), format!("--{}", name.replace('_', "-"))],
        dest: name,
        kind: kind.into(),
        list,
        flag: None,
        default,
    }
}

impl<'t> Eval<'t> {
    /// The value of option `name` when `func` is what a `CLI(func)` runs.
    pub(super) fn cli_parameter(&self, name: &str, func: Node<'t>) -> Option<Found> {
        let fname = super::index::def_name(self.src(func), func);
        let runs = self.calls().any(|c| {
            CLIS.contains(&callee_name(self.src(c), c))
                && call_args(self.src(c), c)
                    .positional
                    .first()
                    .is_some_and(|t| self.text(*t) == fname)
        });
        runs.then(|| self.args.get(name).cloned()).flatten()
    }

    /// `obj.x` where `obj` is a dataclass instance (`Config(...)`, `tyro.cli(Config)`).
    pub(super) fn dataclass_attr(&self, call: Node<'t>, attr: &str, d: usize) -> Option<Found> {
        let a = call_args(self.src(call), call);
        let m = self.project.module_of(call);
        let (class, from_cli) = match self.class_of_call(call) {
            Some(c) => (c, false),
            None if CLIS.contains(&callee_name(self.src(call), call)) => {
                let t = a.positional.first().filter(|t| t.kind() == "identifier")?;
                (self.class_named(m, self.text(*t))?, true)
            }
            None => return None,
        };
        if from_cli {
            return self.args.get(attr).cloned();
        }
        // Only a field the class body declares (a dataclass's): the call's
        // keyword for it, else its default.
        let cname = super::index::def_name(self.src(class), class);
        let field = self
            .index_of(class)
            .assigns
            .get(&format!("{cname}.{attr}"))?
            .first()?;
        if let Some((_, v)) = a.keywords.iter().find(|(k, _)| k == attr) {
            return self.eval_in(*v, &Vec::new(), d + 1);
        }
        self.eval_in(field.value, &Vec::new(), d + 1)
    }
}
