//! Names in an expression: `args.x` (argparse, also after `args.x = ...`
//! reassigns it), attributes of a config (`cfg.loader.batch_size`, each
//! value traced to its line in the config file), names bound by assignment
//! (in the function, then the module, then the module they are imported
//! from), and function parameters (eval_params.rs).

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::project::Imported;
use super::py::{Found, Value, call_args, callee_name};

/// One change to a dict bound to a name, made between its binding and a use.
#[derive(Debug, Clone, Copy)]
pub(super) enum DictChange<'t> {
    /// `name.update(...)`: the call.
    Update(Node<'t>),
    /// `name[key] = value`: the key and the value.
    Item(Node<'t>, Node<'t>),
}

impl<'t> Eval<'t> {
    pub(super) fn attribute(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let object = node.child_by_field_name("object")?;
        let attr = self.text(node.child_by_field_name("attribute")?);
        if object.kind() == "identifier" && self.text(object) == "self" {
            return self.self_attr(node, attr, locals, d);
        }
        // `args.sizes = [...]` reassigned in the script: that value.
        let key: String = self
            .text(node)
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect();
        // Not one under a branch that does not run (`if args.gcn_layers == 1:
        // args.n_hidden = ...` with 2 layers).
        if let Some(a) = self.index_of(node).assignment_at(&key, node)
            && super::reachable_with(self, a.value, locals)
        {
            return self.eval_in(a.value, locals, d);
        }
        // `args.x` (or `opt.x`, `self.args.x`): an argparse destination, or
        // what the training script sets it to before handing `args` on
        // (`args.gnn_type = args.train_model_type`, read in a model module).
        if self.is_args(object) {
            if self.project.module_of(node) != 0
                && let Some(v) = self.script_sets_arg(attr, d)
            {
                return Some(v);
            }
            if let Some(v) = self.args.get(attr) {
                return Some(v.clone());
            }
        }
        // `cfg.BATCH_SIZE` with `import config as cfg`: the module's name.
        if object.kind() == "identifier"
            && let Some(Imported::Module(m)) = self.imported(object)
        {
            return self.global(m, attr, d);
        }
        if let Some(f) = self.instance_attr(object, attr, d) {
            return Some(f);
        }
        // `self.cfg.batch_size` with `self.cfg = config` in `__init__`: the
        // instance the class is given for `config` (`Trainer(cfg, ...)`
        // after `cfg = TrainingConfig(batch_size=args.batch_size)`).
        if object.kind() == "attribute"
            && object
                .child_by_field_name("object")
                .is_some_and(|o| self.text(o) == "self")
            && let Some(held) = self.self_assignment(object)
            && held.kind() == "identifier"
            && let Some(f) = self.instance_attr(held, attr, d + 1)
        {
            return Some(f);
        }
        // `cfg.loader.batch_size`: a config read as attributes (OmegaConf, SimpleNamespace).
        let container = self.eval_in(object, locals, d)?;
        let v = container.value.get(attr)?.clone();
        Some(self.member(&container, attr, v))
    }

    /// The dict `v` bound to `name` by `a`, with the `name.update(...)`
    /// calls and `name['key'] = value` assignments that run between `a`
    /// and `at` in its function applied in order
    /// (`kwargs.update({'num_neighbors': [5] * 2})` in the branch taken).
    /// An update the reader cannot compute leaves the dict as it was.
    fn updated(
        &self,
        name: &str,
        a: &super::index::Assign<'t>,
        at: Node<'t>,
        mut v: Found,
        locals: &Locals,
        d: usize,
    ) -> Found {
        if !matches!(v.value, Value::Dict(_)) {
            return v;
        }
        for change in self.dict_changes(name, a, at, locals) {
            let call = match change {
                DictChange::Update(call) => call,
                DictChange::Item(key, value) => {
                    self.set_item(&mut v, key, value, locals, d);
                    continue;
                }
            };
            let args = call_args(self.src(call), call);
            let mut parts = Vec::new();
            let mut entries = Vec::new();
            for p in args.positional.iter().take(1) {
                match self.eval_in(*p, locals, d + 1) {
                    Some(f) => match &f.value {
                        Value::Dict(e) => {
                            entries.extend(e.iter().cloned());
                            parts.push(f);
                        }
                        _ => return v,
                    },
                    None => return v,
                }
            }
            for (k, n) in &args.keywords {
                let Some(f) = self.eval_in(*n, locals, d + 1) else {
                    return v;
                };
                entries.push((k.clone(), f.value.clone()));
                parts.push(f);
            }
            if let Value::Dict(e) = &mut v.value {
                e.extend(entries);
            }
            v.from.push(self.at(call));
        }
        v
    }

    /// `dict[key] = value` applied to `v`, the assignment's place added
    /// (the key's line names it: `python_member`); a value the reader
    /// cannot compute takes the key out, so that it is named as unknown
    /// rather than read at its earlier value.
    fn set_item(&self, v: &mut Found, key: Node<'t>, value: Node<'t>, locals: &Locals, d: usize) {
        let Some(k) = self.item_key(key, locals, d) else {
            return;
        };
        let value = self.eval_in(value, locals, d + 1);
        if let Value::Dict(e) = &mut v.value {
            e.retain(|(o, _)| *o != k);
            if let Some(f) = value {
                e.push((k, f.value));
            }
        }
        v.from.push(self.at(key));
    }

    /// The key of `name[key] = ...`, when it is a string the reader computes.
    pub(super) fn item_key(&self, key: Node<'t>, locals: &Locals, d: usize) -> Option<String> {
        match self.eval_in(key, locals, d + 1)?.value {
            Value::Str(k) => Some(k),
            _ => None,
        }
    }

    /// The `name.update(...)` calls and `name[key] = value` assignments
    /// that run after `a` binds `name` and before `at`, in the same
    /// function, in source order.
    /// The value the training script (module 0) gives the parsed argument
    /// `attr` by assignment (`args.attr = ...`), the last one that runs.
    fn script_sets_arg(&self, attr: &str, d: usize) -> Option<Found> {
        let suffix = format!(".{attr}");
        let idx = &self.project.indexes[0];
        let mut found = None;
        for (key, all) in &idx.assigns {
            let Some(obj) = key.strip_suffix(&suffix) else {
                continue;
            };
            if !obj.chars().all(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            for a in all {
                let object = self
                    .parent(a.value)
                    .and_then(|p| p.child_by_field_name("left"))
                    .and_then(|l| l.child_by_field_name("object"));
                if object.is_some_and(|o| self.is_args(o))
                    && super::reachable(self, a.value)
                    && found.is_none_or(|f: super::index::Assign<'t>| f.start < a.start)
                {
                    found = Some(*a);
                }
            }
        }
        self.eval_in(found?.value, &Vec::new(), d + 1)
    }

    /// Whether the list bound to `name` by `a` is grown before `at` in its
    /// function (`groups.append(...)`, `.extend`, `.insert`, `groups +=
    /// ...`): its literal (`groups = []`) is then not its value there, and
    /// `if groups:` is not known to be false.
    fn list_grown(&self, name: &str, a: &super::index::Assign<'t>, at: Node<'t>) -> bool {
        let scope = a.scope.map(|s| s.id());
        let (start, end) = (a.end, at.start_byte());
        if start >= end {
            return false;
        }
        let grown_by_call = self.index_of(at).calls.iter().any(|&call| {
            call.start_byte() >= start
                && call.end_byte() <= end
                && self.enclosing_function(call).map(|f| f.id()) == scope
                && call
                    .child_by_field_name("function")
                    .filter(|f| f.kind() == "attribute")
                    .is_some_and(|f| {
                        f.child_by_field_name("object")
                            .is_some_and(|o| self.text(o) == name)
                            && f.child_by_field_name("attribute").is_some_and(|m| {
                                matches!(self.text(m), "append" | "extend" | "insert")
                            })
                    })
        });
        let text = self.src(at).text.get(start..end).unwrap_or("");
        grown_by_call
            || text.lines().any(|l| {
                l.trim_start()
                    .strip_prefix(name)
                    .is_some_and(|r| r.trim_start().starts_with("+="))
            })
    }

    pub(super) fn dict_changes(
        &self,
        name: &str,
        a: &super::index::Assign<'t>,
        at: Node<'t>,
        locals: &Locals,
    ) -> Vec<DictChange<'t>> {
        let target = format!("{name}.update");
        let scope = a.scope.map(|s| s.id());
        let between = |n: Node<'t>| n.start_byte() >= a.end && n.end_byte() <= at.start_byte();
        let index = self.index_of(at);
        let updates = index
            .calls
            .iter()
            .copied()
            .filter(|&call| {
                between(call)
                    && self.enclosing_function(call).map(|f| f.id()) == scope
                    && call.child_by_field_name("function").map(|f| self.text(f))
                        == Some(target.as_str())
            })
            .map(|call| (call, DictChange::Update(call)));
        let items = index
            .items
            .get(name)
            .into_iter()
            .flatten()
            .filter(|(_, s)| between(s.value) && s.scope.map(|f| f.id()) == scope)
            .map(|&(key, s)| (s.value, DictChange::Item(key, s.value)));
        let mut out: Vec<(Node<'t>, DictChange<'t>)> = updates
            .chain(items)
            .filter(|(n, _)| super::reachable_with(self, *n, locals))
            .collect();
        out.sort_by_key(|(n, _)| n.start_byte());
        out.into_iter().map(|(_, c)| c).collect()
    }

    /// `v`, taken by `key` from a dict written in the project's Python
    /// (`configs['Reddit']['batch_size']`): named at the key's line, the
    /// first at or after the dict's first line that writes `'key':`, in
    /// place of every line of the dict; other files' places (where the key
    /// came from) stay.
    fn python_member(&self, from: Vec<String>, label: &str, key: &str, v: Value) -> Found {
        let line_of = |f: &str| {
            f.strip_prefix(label)
                .and_then(|r| r.strip_prefix(':'))
                .and_then(|n| n.parse::<usize>().ok())
        };
        let (Some(start), Some(src)) = (
            from.iter().filter_map(|f| line_of(f)).min(),
            self.project.sources.iter().find(|s| s.label == label),
        ) else {
            return Found { value: v, from };
        };
        let quoted = [format!("'{key}'"), format!("\"{key}\"")];
        // `name['key'] = value` among the places: the last one sets the key.
        let item = from.iter().rev().filter_map(|f| line_of(f)).find(|&n| {
            src.text.lines().nth(n.saturating_sub(1)).is_some_and(|l| {
                quoted.iter().any(|q| {
                    l.match_indices(&format!("[{q}]"))
                        .any(|(i, m)| l[i + m.len()..].trim_start().starts_with('='))
                })
            })
        });
        if let Some(n) = item {
            let mut out = vec![format!("{label}:{n}")];
            out.extend(from.into_iter().filter(|f| line_of(f).is_none()));
            return Found {
                value: v,
                from: out,
            };
        }
        let at = src
            .text
            .lines()
            .enumerate()
            .skip(start.saturating_sub(1))
            .find(|(_, l)| {
                quoted.iter().any(|q| {
                    l.match_indices(q.as_str())
                        .any(|(i, _)| l[i + q.len()..].trim_start().starts_with(':'))
                })
            });
        let Some((i, _)) = at else {
            return Found { value: v, from };
        };
        let mut out = vec![format!("{label}:{}", i + 1)];
        out.extend(from.into_iter().filter(|f| line_of(f).is_none()));
        Found {
            value: v,
            from: out,
        }
    }

    /// What the identifier `name` was imported as in its module.
    pub(super) fn imported(&self, name: Node<'t>) -> Option<Imported> {
        let m = self.project.module_of(name);
        self.project.imports[m].get(self.text(name)).cloned()
    }

    /// The module-level value of `name` in module `m` (or a module it
    /// imports it from, or with `*`).
    pub(super) fn global(&self, m: usize, name: &str, d: usize) -> Option<Found> {
        let idx = &self.project.indexes[m];
        if let Some(a) = idx
            .assigns
            .get(name)
            .and_then(|v| v.iter().rfind(|a| a.scope.is_none()))
        {
            return self.eval_in(a.value, &Vec::new(), d + 1);
        }
        match self.project.imports[m].get(name) {
            Some(Imported::Name(n, orig)) if *n != m => return self.global(*n, orig, d + 1),
            _ => {}
        }
        self.project.stars[m]
            .iter()
            .filter(|s| **s != m)
            .find_map(|s| self.global(*s, name, d + 1))
    }

    /// `v`, taken from `container` by `key`: when the container came from
    /// a config file, its origin is the key's line there (the first line
    /// after the container's own that starts with `key:`); a Hydra group
    /// merged under `key` is its own file.
    pub(super) fn member(&self, container: &Found, key: &str, v: Value) -> Found {
        let mut from = container.from.clone();
        let Some(first) = from.first().cloned() else {
            return Found { value: v, from };
        };
        let (label, after) = match first.rsplit_once(':') {
            Some((l, n)) if n.parse::<usize>().is_ok() => (l.to_string(), n.parse().unwrap_or(0)),
            _ => (first.clone(), 0),
        };
        let Some((_, text)) = self.config_files.iter().find(|(l, _)| *l == label) else {
            return self.python_member(from, &label, key, v);
        };
        if after == 0
            && let Some(group) = self.config_groups.get(key)
            && Some(group) != Some(&label)
        {
            from[0] = group.clone();
            return Found { value: v, from };
        }
        // Inside the container's own mapping, through its merge keys.
        if after > 0
            && let Some(i) = super::yaml_lines::key_line(text, after - 1, key)
        {
            from[0] = format!("{label}:{}", i + 1);
            return Found { value: v, from };
        }
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

    /// Whether `object` holds the parsed arguments: a name assigned from
    /// `parse_args()`/`parse_known_args()` (or a function of the script that
    /// returns one), a parameter named like them, or `self.args` set from one.
    pub(super) fn is_args(&self, object: Node<'t>) -> bool {
        self.is_args_within(object, 0)
    }

    /// [`Self::is_args`], `d` names followed so far (a function that
    /// returns a name assigned from a call of itself ends).
    fn is_args_within(&self, object: Node<'t>, d: usize) -> bool {
        if self.args.is_empty() || d > 4 {
            return false;
        }
        // `self.args = (args)`.
        if object.kind() == "parenthesized_expression" {
            return object
                .named_child(0)
                .is_some_and(|o| self.is_args_within(o, d + 1));
        }
        if object.kind() == "attribute" {
            let o = object.child_by_field_name("object");
            return o.is_some_and(|o| self.text(o) == "self")
                && self
                    .self_assignment(object)
                    .is_some_and(|v| self.is_args_within(v, d + 1));
        }
        if object.kind() != "identifier" {
            return false;
        }
        let name = self.text(object);
        // `parser.parse_args()`, or the dict of it: `vars(parser.parse_args())`.
        let parses = |call: Node<'t>| match callee_name(self.src(call), call) {
            "parse_args" | "parse_known_args" => true,
            "vars" => call_args(self.src(call), call)
                .positional
                .first()
                .is_some_and(|a| {
                    a.kind() == "call"
                        && matches!(
                            callee_name(self.src(*a), *a),
                            "parse_args" | "parse_known_args"
                        )
                        || self.is_args_within(*a, d + 1)
                }),
            _ => false,
        };
        // A parameter not reassigned before `object` is the argument its
        // function is given, not the module's name of the same spelling.
        let idx = self.index_of(object);
        let is_param = self
            .enclosing_function(object)
            .is_some_and(|f| self.param_position(name, f).is_some());
        let assigned = match idx.local_assignment(name, object) {
            Some(a) => Some(a),
            None if is_param => None,
            None => idx.assignment_at(name, object),
        };
        match assigned {
            Some(a) if a.value.kind() == "call" => {
                parses(a.value)
                    || self.callee_def(a.value).is_some_and(|f| {
                        // `return parser.parse_args()`, or `args =
                        // parser.parse_args(); args.device = ...; return args`.
                        self.returns_of(f).iter().any(|r| {
                            r.named_child(0).is_some_and(|v| {
                                (v.kind() == "call" && parses(v))
                                    || (v.kind() == "identifier" && self.is_args_within(v, d + 1))
                            })
                        })
                    })
            }
            Some(a) if a.value.kind() == "identifier" => self.is_args_within(a.value, d + 1),
            Some(_) => false,
            // A parameter (`def main(args)`) named like the parsed arguments.
            None => {
                matches!(
                    name,
                    "args" | "opt" | "opts" | "FLAGS" | "flags" | "hparams" | "argv"
                ) || self.enclosing_function(object).is_none() && name == "args"
            }
        }
    }

    /// The last assignment of `name` before `at` in its function that runs:
    /// one inside `if x is None:` is passed over when `x` was set before it
    /// (a fallback that does not run), the last one when none is known to run.
    fn reached_assignment(
        &self,
        name: &str,
        at: Node<'t>,
        locals: &Locals,
    ) -> Option<super::index::Assign<'t>> {
        let mut all = self
            .index_of(at)
            .local_assignments(name, at)
            .take(4)
            .peekable();
        let last = *all.peek()?;
        Some(
            all.find(|a| super::reachable_with(self, a.value, locals))
                .unwrap_or(last),
        )
    }

    /// The assignment that gives `name` its value at `at`: the function's
    /// own that runs, else the module's (not for a parameter of the
    /// function, which is its argument).
    pub(super) fn assignment_of(
        &self,
        name: &str,
        at: Node<'t>,
        locals: &Locals,
    ) -> Option<super::index::Assign<'t>> {
        self.reached_assignment(name, at, locals).or_else(|| {
            let is_param = self
                .enclosing_function(at)
                .is_some_and(|f| self.param_position(name, f).is_some());
            (!is_param)
                .then(|| self.index_of(at).module_assignment(name, at))
                .flatten()
        })
    }

    pub(super) fn name(
        &self,
        name: &str,
        at: Node<'t>,
        locals: &Locals,
        d: usize,
    ) -> Option<Found> {
        let func = self.enclosing_function(at);
        let is_param = func.is_some_and(|f| self.param_position(name, f).is_some());
        if let Some(a) = self.assignment_of(name, at, locals) {
            // `model, data, config = load(...)`: the item alone.
            if a.position > 0
                && a.value.kind() == "call"
                && let Some(v) = self.returned_item(a.value, a.position, locals, d)
            {
                return Some(v);
            }
            let v = self.eval_in(a.value, locals, d)?;
            if matches!(v.value, Value::List(_)) && self.list_grown(name, &a, at) {
                return None;
            }
            if a.position == 0 && !matches!(a.value.kind(), "tuple" | "expression_list") {
                return Some(self.updated(name, &a, at, v, locals, d));
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
        if let Some(f) = func
            && is_param
        {
            return self.parameter(name, f, d);
        }
        let m = self.project.module_of(at);
        match self.project.imports[m].get(name) {
            Some(Imported::Name(n, orig)) => self.global(*n, orig, d),
            Some(_) => None,
            None => self.project.stars[m]
                .iter()
                .find_map(|s| self.global(*s, name, d)),
        }
    }
}
