//! Computing the value of a Python expression without running Python: the
//! literals, names bound by assignments (in the function, then the module),
//! function parameters bound at the function's call sites (or
//! `mp.spawn(fn, args=(...))`) or by their defaults, `args.x` from argparse
//! and the launch line, a loaded config file (`cfg['x']`, `cfg.get('x', d)`,
//! `cfg.x`), `os.environ.get`, the arithmetic and list building scripts use
//! for fanouts (`[args.fanout] * args.num_layers`, `[int(x) for x in
//! s.split(',')]`), and a conditional whose condition is known. Anything
//! else is unknown (None), never guessed. Names and attributes are resolved
//! in eval_names.rs (with `self.x` in eval_self.rs), calls in eval_call.rs
//! (the script's own functions' return values in eval_return.rs). The
//! script may span several files of its project (project.rs): every node
//! is looked up in the module it belongs to. A value can be computed in a
//! context: names bound for one call of a function or one pass of a loop.

use std::collections::HashMap;

use tree_sitter::Node;

use super::index::Index;
use super::project::Project;
use super::py::{Found, Source, Value, children};

/// Deep enough for real scripts; stops `x = x + 1` and mutual references.
const MAX_DEPTH: usize = 40;
/// Expressions evaluated in one reading, at most: following parameters to
/// their call sites can branch, and a reading must end (past this, what is
/// left is unknown, never guessed).
pub const MAX_STEPS: usize = 400_000;

/// What an expression can refer to beyond the script itself.
pub struct Eval<'t> {
    /// The script (module 0) and the project modules it imports.
    pub project: &'t Project<'t>,
    /// argparse destinations with the values the script runs with.
    pub args: HashMap<String, Found>,
    /// The config the script loads (a `--config` file, Hydra's), when there is one.
    pub config: Option<Found>,
    /// The config files read, (label, text), to trace a key to its line.
    pub config_files: Vec<(String, String)>,
    /// Hydra groups merged into the config: top-level key → its file's label.
    pub config_groups: HashMap<String, String>,
    /// Environment variables the launch sets (`SLURM_CPUS_PER_TASK`...).
    pub env: HashMap<String, Found>,
    /// The directory the program runs in (relative paths it opens start there).
    pub cwd: std::path::PathBuf,
    /// Expressions evaluated so far (see [`MAX_STEPS`]).
    pub steps: std::cell::Cell<usize>,
    /// Memos of what the walk over the project finds again and again.
    pub memo: super::eval_memo::Memo<'t>,
}

/// A name bound for one evaluation: a comprehension's variable, a loop's
/// variable for one pass, or a parameter for one call of its function.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The name.
    pub name: String,
    /// Its value; None when the bound expression cannot be computed (the
    /// name is then unknown here, not looked up elsewhere).
    pub value: Option<Found>,
    /// The function (node id) the name belongs to; None: the module.
    pub scope: Option<usize>,
    /// The expression bound, as written at the call site or loop.
    pub text: String,
    /// Where that expression is written (`file:line`), when it is an argument.
    pub at: Option<String>,
}

/// Names bound for the evaluation under way.
pub type Locals = Vec<Binding>;

impl<'t> Eval<'t> {
    /// The value of `node`, if it can be known.
    pub fn eval(&self, node: Node<'t>) -> Option<Found> {
        self.eval_in(node, &Vec::new(), 0)
    }

    /// The value of `node` with `locals` bound (one call, one loop pass).
    pub fn eval_with(&self, node: Node<'t>, locals: &Locals) -> Option<Found> {
        self.eval_in(node, locals, 0)
    }

    /// The source `node` is in.
    pub fn src(&self, node: Node) -> &'t Source {
        &self.project.sources[self.project.module_of(node)]
    }

    /// The index of the module `node` is in.
    pub fn index_of(&self, node: Node) -> &'t Index<'t> {
        &self.project.indexes[self.project.module_of(node)]
    }

    /// The training script.
    pub fn main(&self) -> &'t Source {
        &self.project.sources[0]
    }

    /// The text of `node`.
    pub fn text(&self, node: Node) -> &'t str {
        self.src(node).text_of(node)
    }

    /// `file.py:42` for `node`.
    pub fn at(&self, node: Node) -> String {
        self.src(node).at(node)
    }

    /// The parent of `node`.
    pub fn parent(&self, node: Node<'t>) -> Option<Node<'t>> {
        self.index_of(node).parent(node)
    }

    /// The innermost function definition around `node`.
    pub fn enclosing_function(&self, node: Node<'t>) -> Option<Node<'t>> {
        self.index_of(node).enclosing_function(node)
    }

    /// Every call of every module, in module then source order.
    pub fn calls(&self) -> impl Iterator<Item = Node<'t>> + '_ {
        self.project
            .indexes
            .iter()
            .flat_map(|i| i.calls.iter().copied())
    }

    /// Every `for` statement of every module.
    pub fn fors(&self) -> impl Iterator<Item = Node<'t>> + '_ {
        self.project
            .indexes
            .iter()
            .flat_map(|i| i.fors.iter().copied())
    }

    pub(super) fn eval_in(&self, node: Node<'t>, locals: &Locals, depth: usize) -> Option<Found> {
        let steps = self.steps.get() + 1;
        self.steps.set(steps);
        if depth > MAX_DEPTH || steps > MAX_STEPS {
            return None;
        }
        let d = depth + 1;
        let at = || self.at(node);
        let text = self.text(node);
        match node.kind() {
            "integer" => Some(Found::at(Value::Int(parse_int(text)?), at())),
            "float" => Some(Found::at(
                Value::Float(text.replace('_', "").parse().ok()?),
                at(),
            )),
            "true" => Some(Found::at(Value::Bool(true), at())),
            "false" => Some(Found::at(Value::Bool(false), at())),
            "none" => Some(Found::at(Value::None, at())),
            "string" => Some(Found::at(
                Value::Str(string_value(self.src(node), node)?),
                at(),
            )),
            "concatenated_string" => {
                let parts: Option<Vec<String>> = children(node)
                    .into_iter()
                    .map(|s| string_value(self.src(s), s))
                    .collect();
                Some(Found::at(Value::Str(parts?.concat()), at()))
            }
            "parenthesized_expression" => self.eval_in(node.named_child(0)?, locals, d),
            "list" | "tuple" | "expression_list" => {
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
                    // An edge type `('paper', 'cites', 'paper')` as a key is
                    // kept as PyG writes it in strings: `paper__cites__paper`.
                    let k = match key.value {
                        Value::Str(k) => k,
                        Value::List(parts) => parts
                            .iter()
                            .map(|p| match p {
                                Value::Str(s) => Some(s.as_str()),
                                _ => None,
                            })
                            .collect::<Option<Vec<_>>>()?
                            .join("__"),
                        _ => return None,
                    };
                    entries.push((k, value.value.clone()));
                    parts.push(value);
                }
                let refs: Vec<&Found> = parts.iter().collect();
                let mut found = Found::joined(Value::Dict(entries), &refs);
                if !found.from.contains(&at()) {
                    found.from.insert(0, at());
                }
                Some(found)
            }
            "unary_operator" => {
                let v = self.eval_in(node.child_by_field_name("argument")?, locals, d)?;
                let op = node.child_by_field_name("operator").map(|o| self.text(o));
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
                let op = node.child_by_field_name("operator").map(|o| self.text(o));
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
                if let Some(b) = self.local(text, node, locals) {
                    return b.value.clone();
                }
                self.name(text, node, locals, d)
            }
            "attribute" => self.attribute(node, locals, d),
            "subscript" => {
                let value = node.child_by_field_name("value")?;
                let sub = node.child_by_field_name("subscript")?;
                if sub.kind() == "slice" {
                    return self.slice(value, sub, locals, d);
                }
                let key = self.eval_in(sub, locals, d)?;
                if matches!(self.text(value), "os.environ" | "environ") {
                    let Value::Str(k) = &key.value else {
                        return None;
                    };
                    return self.env.get(k).cloned();
                }
                // `args['hops']` with `args = vars(parser.parse_args())`:
                // the argument, named at its own line.
                if let Value::Str(k) = &key.value
                    && self.is_args(value)
                    && let Some(v) = self.args.get(k)
                {
                    return Some(v.clone());
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

    /// `xs[a:b]` of a list or string (no step).
    fn slice(&self, value: Node<'t>, sub: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let container = self.eval_in(value, locals, d)?;
        let text = self.text(sub);
        let (a, b) = text.split_once(':')?;
        if b.contains(':') {
            return None;
        }
        let bound = |s: &str, node: Option<Node<'t>>| -> Option<Option<i64>> {
            if s.trim().is_empty() {
                return Some(None);
            }
            Some(Some(self.eval_in(node?, locals, d)?.value.as_int()?))
        };
        let parts = children(sub);
        let (na, nb) = match (a.trim().is_empty(), b.trim().is_empty()) {
            (false, false) => (parts.first().copied(), parts.get(1).copied()),
            (false, true) => (parts.first().copied(), None),
            (true, false) => (None, parts.first().copied()),
            (true, true) => (None, None),
        };
        let (lo, hi) = (bound(a, na)?, bound(b, nb)?);
        let cut = |len: usize| {
            let at = |v: i64| -> usize {
                if v < 0 {
                    (len as i64 + v).max(0) as usize
                } else {
                    (v as usize).min(len)
                }
            };
            (lo.map_or(0, at), hi.map_or(len, at))
        };
        let value = match &container.value {
            Value::List(items) => {
                let (s, e) = cut(items.len());
                Value::List(items.get(s..e.max(s))?.to_vec())
            }
            Value::Str(text) => {
                let chars: Vec<char> = text.chars().collect();
                let (s, e) = cut(chars.len());
                Value::Str(chars.get(s..e.max(s))?.iter().collect())
            }
            _ => return None,
        };
        Some(Found { value, ..container })
    }

    fn binary(&self, node: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        let l = self.eval_in(node.child_by_field_name("left")?, locals, d)?;
        let r = self.eval_in(node.child_by_field_name("right")?, locals, d)?;
        let op = self.text(node.child_by_field_name("operator")?);
        use Value::*;
        let value = match (op, &l.value, &r.value) {
            ("+", Int(a), Int(b)) => Int(a.checked_add(*b)?),
            ("-", Int(a), Int(b)) => Int(a.checked_sub(*b)?),
            ("*", Int(a), Int(b)) => Int(a.checked_mul(*b)?),
            ("//", Int(a), Int(b)) if *b != 0 => Int(a.div_euclid(*b)),
            ("//", a, b) => Float((a.as_float()? / b.as_float().filter(|x| *x != 0.0)?).floor()),
            ("%", Int(a), Int(b)) if *b != 0 => Int(a.rem_euclid(*b)),
            ("**", Int(a), Int(b)) if (0..=62).contains(b) => Int(a.checked_pow(*b as u32)?),
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
        let op = self
            .src(node)
            .text
            .get(a.end_byte()..b.start_byte())?
            .trim();
        let l = self.eval_in(a, locals, d)?;
        let r = self.eval_in(b, locals, d)?;
        let ord = match (l.value.as_float(), r.value.as_float()) {
            (Some(x), Some(y)) if !matches!(l.value, Value::Str(_)) => x.partial_cmp(&y),
            _ => Option::None,
        };
        let member = |v: &Value, c: &Value| match c {
            Value::List(items) => Some(items.contains(v)),
            Value::Dict(items) => {
                Some(matches!(v, Value::Str(k) if items.iter().any(|(n, _)| n == k)))
            }
            Value::Str(s) => match v {
                Value::Str(x) => Some(s.contains(x.as_str())),
                _ => None,
            },
            _ => None,
        };
        let truth = match op {
            "in" => member(&l.value, &r.value)?,
            "not in" => !member(&l.value, &r.value)?,
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
        // `[... for _ in range(n)]` and friends: ranges up to 64 items.
        let iter = self.eval_in(clause.child_by_field_name("right")?, locals, d)?;
        let Value::List(items) = &iter.value else {
            return None;
        };
        let mut out = Vec::new();
        let mut inner = locals.clone();
        let scope = self.enclosing_function(node).map(|f| f.id());
        for item in items {
            inner.push(Binding {
                name: self.text(var).to_string(),
                value: Some(Found {
                    value: item.clone(),
                    ..iter.clone()
                }),
                scope,
                text: String::new(),
                at: None,
            });
            out.push(self.eval_in(body, &inner, d)?);
            inner.pop();
        }
        // The elements' own places first (`[args.num_neighbors // 2**i for i
        // in range(args.num_layers)]` comes from both arguments).
        let mut parts: Vec<&Found> = out.iter().collect();
        parts.push(&iter);
        let values = out.iter().map(|f| f.value.clone()).collect();
        Some(Found::joined(Value::List(values), &parts))
    }
}

impl<'t> Eval<'t> {
    /// The binding of `name` visible at `node`: one of `locals` whose scope
    /// is the function `node` is in, else a function around that one.
    pub(super) fn local<'l>(
        &self,
        name: &str,
        node: Node<'t>,
        locals: &'l Locals,
    ) -> Option<&'l Binding> {
        let bound_in = |scope: Option<Node<'t>>| {
            let id = scope.map(|f| f.id());
            locals
                .iter()
                .rev()
                .find(|b| b.name == name && b.scope == id)
        };
        let mut scope = self.enclosing_function(node);
        if let Some(b) = bound_in(scope) {
            return Some(b);
        }
        // A closure reads its enclosing functions' names (Python's LEGB).
        while let Some(f) = scope {
            scope = self.parent(f).and_then(|p| self.enclosing_function(p));
            if let Some(b) = scope.and_then(|s| bound_in(Some(s))) {
                return Some(b);
            }
        }
        None
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
