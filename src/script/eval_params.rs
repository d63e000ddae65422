//! Function parameters and the functions calls resolve to. A parameter is
//! bound at its function's first call site anywhere in the project (by
//! keyword, by position, or through a `**dict` of that call), a method's
//! skipping `self`: `__init__` at the class's instantiations and at
//! `super().__init__(...)` in its subclasses, other methods at
//! `x.method(...)`; a function started by `mp.spawn(fn, args=(...))` gets
//! the tuple after its rank; a `@hydra.main` function gets the config;
//! else the parameter's default. [`Eval::bind`] binds one call's arguments
//! instead, for the evaluations that follow that call (eval_return.rs,
//! loaders and models built in a function called several times).

use tree_sitter::Node;

use super::eval::{Binding, Eval, Locals, param_name};
use super::eval_names::DictChange;
use super::index::def_name;
use super::project::Imported;
use super::py::{Found, Value, call_args, callee_name, children};

impl<'t> Eval<'t> {
    /// The position of parameter `name` in `func`'s list.
    pub(super) fn param_position(&self, name: &str, func: Node<'t>) -> Option<usize> {
        let params = children(func.child_by_field_name("parameters")?);
        params
            .iter()
            .position(|p| param_name(self.src(func), *p) == Some(name))
    }

    /// 1 for a method (its first parameter is `self` or `cls`), else 0.
    pub(super) fn self_offset(&self, func: Node<'t>) -> usize {
        let first = func
            .child_by_field_name("parameters")
            .and_then(|p| p.named_child(0))
            .and_then(|p| param_name(self.src(func), p));
        usize::from(matches!(first, Some("self" | "cls")) && self.enclosing_class(func).is_some())
    }

    /// The calls that call `func`: (call, 1 for `mp.spawn(func, args=...)`).
    pub(super) fn call_sites(&self, func: Node<'t>) -> Vec<(Node<'t>, usize)> {
        if let Some(v) = self.memo.sites.borrow().get(&func.id()) {
            return v.clone();
        }
        let v = self.find_call_sites(func);
        self.memo.sites.borrow_mut().insert(func.id(), v.clone());
        v
    }

    fn find_call_sites(&self, func: Node<'t>) -> Vec<(Node<'t>, usize)> {
        let fname = def_name(self.src(func), func);
        let method = self.self_offset(func) == 1;
        let mut out = Vec::new();
        for call in self.calls() {
            // A helper module's own `__main__` test calls never run.
            if self.enclosing_function(call) == Some(func)
                || super::run_order::dead_main_block(self, call).is_some()
            {
                continue;
            }
            let Some(f) = call.child_by_field_name("function") else {
                continue;
            };
            let text = self.text(f);
            let last = callee_name(self.src(call), call);
            let hit = if fname == "__init__" {
                let own = self.enclosing_class(func);
                let class = own.map(|c| def_name(self.src(c), c));
                // `GraphSAGE(...)` builds the project's class of that name;
                // `pyg.nn.models.GraphSAGE(...)` builds the library's.
                Some(last) == class && (f.kind() == "identifier" || self.class_of_call(call) == own)
                    || text.replace(' ', "").ends_with("super().__init__")
                    || text.starts_with("super(") && last == "__init__"
            } else if method {
                f.kind() == "attribute" && last == fname
            } else {
                last == fname && self.callee_def(call) == Some(func)
            };
            if hit {
                out.push((call, 0));
            } else if last.ends_with("spawn")
                && call_args(self.src(call), call)
                    .positional
                    .first()
                    .is_some_and(|a| self.text(*a) == fname)
            {
                out.push((call, 1));
            }
        }
        out
    }

    /// As [`Eval::bind`], and each parameter this call does not pass bound to
    /// its default (`def dataloader(self, mask, shuffle, num_workers=6)`
    /// called without `num_workers` gets 6 here, whatever another call
    /// passes), unless a `*args`/`**kwargs` of the call may pass it.
    pub fn bind_with_defaults(&self, func: Node<'t>, call: Node<'t>, spawned: usize) -> Locals {
        let mut out = self.bind(func, call, spawned, &Vec::new(), 0);
        let a = call_args(self.src(call), call);
        if !a.splats.is_empty() || a.positional.iter().any(|p| p.kind() == "list_splat") {
            return out;
        }
        let Some(params) = func.child_by_field_name("parameters") else {
            return out;
        };
        for p in children(params) {
            let Some(name) = param_name(self.src(func), p) else {
                continue;
            };
            if out.iter().any(|b| b.name == name) {
                continue;
            }
            if let Some(default) = p.child_by_field_name("value") {
                out.push(Binding {
                    name: name.to_string(),
                    value: self.eval_in(default, &Vec::new(), 1),
                    scope: Some(func.id()),
                    text: self.text(default).to_string(),
                    at: Some(self.at(default)),
                });
            }
        }
        out
    }

    /// A parameter of `func`, bound at its first call site or by its default.
    pub(super) fn parameter(&self, name: &str, func: Node<'t>, d: usize) -> Option<Found> {
        let key = (func.id(), name.to_string());
        if let Some(v) = self.memo.params.borrow().get(&key) {
            return v.clone();
        }
        // A parameter met again while it is being computed is unknown there.
        self.memo.params.borrow_mut().insert(key.clone(), None);
        let v = self.find_parameter(name, func, d);
        self.memo.params.borrow_mut().insert(key, v.clone());
        v
    }

    fn find_parameter(&self, name: &str, func: Node<'t>, d: usize) -> Option<Found> {
        let pos = self.param_position(name, func)?;
        if pos == 0 && self.hydra_main(func) {
            return self.config.clone();
        }
        for (call, spawned) in self.call_sites(func) {
            let b = self.bind(func, call, spawned, &Vec::new(), d);
            if let Some(v) = b.into_iter().find(|b| b.name == name) {
                return v.value;
            }
        }
        if let Some(v) = self.cli_parameter(name, func) {
            return Some(v);
        }
        let params = children(func.child_by_field_name("parameters")?);
        let default = params.get(pos)?.child_by_field_name("value")?;
        self.eval_in(default, &Vec::new(), d + 1)
    }

    /// Whether `func` is decorated with `@hydra.main(...)`.
    pub(super) fn hydra_main(&self, func: Node<'t>) -> bool {
        self.parent(func)
            .filter(|p| p.kind() == "decorated_definition")
            .is_some_and(|p| self.text(p).trim_start().starts_with("@hydra.main"))
    }

    /// `func`'s parameters bound to the arguments of `call` (evaluated with
    /// `caller` bound); `spawned` is 1 for `mp.spawn(func, args=(...))`.
    pub fn bind(
        &self,
        func: Node<'t>,
        call: Node<'t>,
        spawned: usize,
        caller: &Locals,
        d: usize,
    ) -> Locals {
        let src = self.src(func);
        let params: Vec<Node> = func
            .child_by_field_name("parameters")
            .map(children)
            .unwrap_or_default();
        let names: Vec<&str> = params.iter().filter_map(|p| param_name(src, *p)).collect();
        let a = call_args(self.src(call), call);
        let scope = Some(func.id());
        let mut out: Locals = Vec::new();
        let mut put = |name: &str, node: Node<'t>, value: Option<Found>| {
            out.push(Binding {
                name: name.to_string(),
                value,
                scope,
                text: self.text(node).to_string(),
                at: Some(self.at(node)),
            });
        };
        let offset = self.self_offset(func);
        let positional: Vec<Node> = if spawned == 1 {
            // mp.spawn(fn, args=(a, b)): fn(rank, a, b).
            let t = a
                .keywords
                .iter()
                .find(|(k, _)| k == "args")
                .map(|(_, v)| *v);
            t.map(children).unwrap_or_default()
        } else {
            a.positional.clone()
        };
        let skip = offset + spawned;
        for (i, node) in positional.iter().enumerate() {
            if let Some(name) = names.get(i + skip) {
                put(name, *node, self.eval_in(*node, caller, d + 1));
            }
        }
        for (k, v) in &a.keywords {
            if names.contains(&k.as_str()) {
                put(k, *v, self.eval_in(*v, caller, d + 1));
            }
        }
        for s in &a.splats {
            let given = self.splat(*s, caller, d);
            for (k, f) in given {
                if names.contains(&k.as_str()) && !out.iter().any(|b| b.name == k) {
                    out.push(Binding {
                        name: k,
                        value: f,
                        scope,
                        text: self.text(*s).to_string(),
                        at: Some(self.at(*s)),
                    });
                }
            }
        }
        out
    }

    /// The entries of a `**x` argument: `vars(args)` keeps each argument's
    /// own origin; a dict written as a literal or `dict(...)` (directly or
    /// through the name it is bound to) keeps each entry's; another dict
    /// keeps its own.
    pub(super) fn splat(
        &self,
        s: Node<'t>,
        caller: &Locals,
        d: usize,
    ) -> Vec<(String, Option<Found>)> {
        let text = self.text(s).replace(' ', "");
        if text == "vars(args)" || text.ends_with(".__dict__") {
            return self
                .args
                .iter()
                .map(|(k, v)| (k.clone(), Some(v.clone())))
                .collect();
        }
        if let Some(entries) = self.dict_entries(s, caller, d) {
            return entries;
        }
        match self.eval_in(s, caller, d + 1) {
            Some(Found {
                value: Value::Dict(entries),
                from,
            }) => entries
                .into_iter()
                .map(|(k, v)| {
                    let f = self.member(
                        &Found {
                            value: Value::None,
                            from: from.clone(),
                        },
                        &k,
                        v,
                    );
                    (k, Some(f))
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The entries of `{...}` or `dict(...)` written at `node` or bound to
    /// the name `node` is, each with its own origin; an entry whose value
    /// cannot be computed (`data=dataset[0]`) is kept by its key with no
    /// value, so that the others still count and it is named as unknown.
    fn dict_entries(
        &self,
        node: Node<'t>,
        caller: &Locals,
        d: usize,
    ) -> Option<Vec<(String, Option<Found>)>> {
        let at = node;
        let mut node = node;
        // The name first reached and its binding: its `.update(...)` calls.
        let mut bound = None;
        // Through names, `x.copy()`, `dict(x)` and `copy.deepcopy(x)` to the literal.
        for _ in 0..8 {
            node = match node.kind() {
                "identifier" => {
                    let a = self.index_of(node).assignment_at(self.text(node), node)?;
                    bound.get_or_insert((self.text(node), a));
                    a.value
                }
                "call" => {
                    let f = node.child_by_field_name("function")?;
                    let a = call_args(self.src(node), node);
                    match (callee_name(self.src(node), node), a.positional.first()) {
                        ("copy", None) => f.child_by_field_name("object")?,
                        ("dict" | "deepcopy" | "copy", Some(x)) if a.keywords.is_empty() => *x,
                        _ => break,
                    }
                }
                _ => break,
            };
        }
        let mut out = Vec::new();
        match node.kind() {
            "dictionary" => {
                for pair in children(node) {
                    match pair.kind() {
                        "pair" => {}
                        "comment" => continue,
                        _ => return None,
                    }
                    let key = self.eval_in(pair.child_by_field_name("key")?, caller, d + 1)?;
                    let Value::Str(k) = key.value else {
                        return None;
                    };
                    out.push((
                        k,
                        self.eval_in(pair.child_by_field_name("value")?, caller, d + 1),
                    ));
                }
            }
            "call" if self.text(node.child_by_field_name("function")?) == "dict" => {
                for (k, v) in call_args(self.src(node), node).keywords {
                    out.push((k, self.eval_in(v, caller, d + 1)));
                }
            }
            _ => return None,
        }
        // `kwargs.update({'num_neighbors': [5] * 2})` and
        // `kwargs['batch_size'] = 1024` before the use, in order.
        if let Some((name, a)) = bound {
            for change in self.dict_changes(name, &a, at, caller) {
                let call = match change {
                    DictChange::Update(call) => call,
                    DictChange::Item(key, value) => {
                        // A key the reader cannot compute changes no entry it can name.
                        if let Some(k) = self.item_key(key, caller, d) {
                            let v = self.eval_in(value, caller, d + 1);
                            out.retain(|(o, _)| *o != k);
                            out.push((k, v));
                        }
                        continue;
                    }
                };
                let args = call_args(self.src(call), call);
                let mut added = match args.positional.first() {
                    Some(p) => self.dict_entries(*p, caller, d + 1)?,
                    None => Vec::new(),
                };
                for (k, v) in args.keywords {
                    added.push((k, self.eval_in(v, caller, d + 1)));
                }
                for (k, v) in added {
                    out.retain(|(o, _)| *o != k);
                    out.push((k, v));
                }
            }
        }
        Some(out)
    }

    /// The function of the project `call` calls, when it can be told:
    /// a name defined or imported in the call's module, `self.method`, or
    /// `module.function` of an imported project module.
    pub fn callee_def(&self, call: Node<'t>) -> Option<Node<'t>> {
        if let Some(v) = self.memo.callees.borrow().get(&call.id()) {
            return *v;
        }
        let v = self.find_callee_def(call);
        self.memo.callees.borrow_mut().insert(call.id(), v);
        v
    }

    fn find_callee_def(&self, call: Node<'t>) -> Option<Node<'t>> {
        let f = call.child_by_field_name("function")?;
        let m = self.project.module_of(call);
        match f.kind() {
            "identifier" => self.def_named(m, self.text(f)),
            "attribute" => {
                let object = f.child_by_field_name("object")?;
                let name = self.text(f.child_by_field_name("attribute")?);
                if self.text(object) == "self" {
                    let class = self.enclosing_class(call)?;
                    return self.method(class, name);
                }
                match self.imported(object) {
                    Some(Imported::Module(n)) => self.def_named(n, name),
                    // `dm = DataModule(root)` then `dm.metadata()`: the
                    // method of the project's class the name holds.
                    _ if object.kind() == "identifier" => {
                        let built = self
                            .index_of(object)
                            .assignment_at(self.text(object), object)?
                            .value;
                        let class = (built.kind() == "call")
                            .then(|| self.class_of_call(built))
                            .flatten()?;
                        self.method(class, name)
                    }
                    // `DataModule(root).metadata()`.
                    _ if object.kind() == "call" => self.method(self.class_of_call(object)?, name),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// The function `name` as module `m` sees it (defined there or imported).
    pub(super) fn def_named(&self, m: usize, name: &str) -> Option<Node<'t>> {
        let idx = &self.project.indexes[m];
        if let Some(f) = idx.functions.get(name)
            && self.enclosing_class(*f).is_none()
        {
            return Some(*f);
        }
        match self.project.imports[m].get(name) {
            Some(Imported::Name(n, orig)) if *n != m => self.def_named(*n, orig),
            _ => self.project.stars[m]
                .iter()
                .filter(|s| **s != m)
                .find_map(|s| self.def_named(*s, name)),
        }
    }

    /// The `return` statements of `func` itself (not of functions inside it).
    pub(super) fn returns_of(&self, func: Node<'t>) -> Vec<Node<'t>> {
        self.index_of(func)
            .returns
            .iter()
            .copied()
            .filter(|r| self.enclosing_function(*r) == Some(func))
            .collect()
    }
}
