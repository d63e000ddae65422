//! Attributes of objects the script's own classes make: `self.x` read in a
//! method is the value a method of the class (or of a base class of the
//! project) assigns to it, `__init__` first, computed with `__init__`'s
//! parameters bound at the class's instantiation; a `@property` or method
//! of the class answers `self.x`/`obj.x` by its return value; `obj.x` for
//! `obj = Class(...)` is computed with that very call's arguments bound.

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::index::def_name;
use super::project::Imported;
use super::py::{Found, call_args, callee_name, children};

impl<'t> Eval<'t> {
    /// The class definition `node` is in.
    pub fn enclosing_class(&self, node: Node<'t>) -> Option<Node<'t>> {
        let mut cur = self.parent(node);
        while let Some(n) = cur {
            if n.kind() == "class_definition" {
                return Some(n);
            }
            cur = self.parent(n);
        }
        None
    }

    /// The class `name` as module `m` sees it (defined there or imported).
    pub fn class_named(&self, m: usize, name: &str) -> Option<Node<'t>> {
        if let Some(c) = self.project.indexes[m].classes.get(name) {
            return Some(*c);
        }
        match self.project.imports[m].get(name) {
            Some(Imported::Name(n, orig)) if *n != m => self.class_named(*n, orig),
            _ => self.project.stars[m]
                .iter()
                .filter(|s| **s != m)
                .find_map(|s| self.class_named(*s, name)),
        }
    }

    /// The class a call instantiates, when it is one of the project's.
    pub fn class_of_call(&self, call: Node<'t>) -> Option<Node<'t>> {
        let f = call.child_by_field_name("function")?;
        let m = self.project.module_of(call);
        match f.kind() {
            "identifier" => self.class_named(m, self.text(f)),
            "attribute" => match self.imported(f.child_by_field_name("object")?) {
                Some(Imported::Module(n)) => self.class_named(n, callee_name(self.src(call), call)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The project classes `class` derives from, nearest first.
    pub fn bases(&self, class: Node<'t>) -> Vec<Node<'t>> {
        let m = self.project.module_of(class);
        let mut out = Vec::new();
        let Some(list) = class.child_by_field_name("superclasses") else {
            return out;
        };
        for b in children(list) {
            let name = self.text(b).rsplit('.').next().unwrap_or("");
            if let Some(c) = self
                .class_named(m, name)
                .filter(|c| *c != class && !out.contains(c))
            {
                out.push(c);
                if out.len() < 8 {
                    out.extend(self.bases(c));
                }
            }
        }
        out
    }

    /// The method `name` of `class` or of its bases.
    pub fn method(&self, class: Node<'t>, name: &str) -> Option<Node<'t>> {
        std::iter::once(class)
            .chain(self.bases(class))
            .find_map(|c| {
                let body = c.child_by_field_name("body")?;
                children(body).into_iter().find_map(|n| {
                    let f = if n.kind() == "decorated_definition" {
                        n.child_by_field_name("definition")?
                    } else {
                        n
                    };
                    (f.kind() == "function_definition" && def_name(self.src(f), f) == name)
                        .then_some(f)
                })
            })
    }

    /// The value assigned to `self.x` (the attribute node `self.x`) by the
    /// class of that node or its bases, `__init__`'s first.
    pub(super) fn self_assignment(&self, attr: Node<'t>) -> Option<Node<'t>> {
        let class = self.enclosing_class(attr)?;
        self.assignment_in(class, &self.text(attr).replace(' ', ""))
    }

    pub(super) fn assignment_in(&self, class: Node<'t>, key: &str) -> Option<Node<'t>> {
        std::iter::once(class)
            .chain(self.bases(class))
            .find_map(|c| {
                let all = self.index_of(c).assigns.get(key)?;
                let inside: Vec<_> = all
                    .iter()
                    .filter(|a| a.start >= c.start_byte() && a.end <= c.end_byte())
                    .collect();
                let init = inside.iter().find(|a| {
                    a.scope
                        .is_some_and(|f| def_name(self.src(f), f) == "__init__")
                });
                init.or(inside.first()).map(|a| a.value)
            })
    }

    /// `self.x` at `node`: its assignment in the class, else a property.
    pub(super) fn self_attr(
        &self,
        node: Node<'t>,
        attr: &str,
        locals: &Locals,
        d: usize,
    ) -> Option<Found> {
        let class = self.enclosing_class(node)?;
        if let Some(v) = self.assignment_in(class, &format!("self.{attr}")) {
            return self.eval_in(v, locals, d);
        }
        let m = self.method(class, attr)?;
        self.returns_of(m)
            .into_iter()
            .find_map(|r| self.eval_in(r.named_child(0)?, locals, d))
    }

    /// `obj.x` where `obj = Class(...)` is an instance of a project class:
    /// what `Class` sets `self.x` to (or returns from a property `x`), with
    /// that call's arguments bound to `__init__`.
    pub(super) fn instance_attr(&self, object: Node<'t>, attr: &str, d: usize) -> Option<Found> {
        if object.kind() != "identifier" {
            return None;
        }
        let Some(a) = self
            .index_of(object)
            .assignment_at(self.text(object), object)
        else {
            return self.parameter_attr(object, attr, d);
        };
        if a.value.kind() != "call" {
            return None;
        }
        if let Some(v) = self.dataclass_attr(a.value, attr, d) {
            return Some(v);
        }
        let Some(class) = self.class_of_call(a.value) else {
            // A library's record built with that keyword (`SimpleNamespace`,
            // a namedtuple, an extension's config: `cfg = SamplerConfig(
            // batch_size=args.batch_size)` then `cfg.batch_size`).
            let (_, v) = super::py::call_args(self.src(a.value), a.value)
                .keywords
                .into_iter()
                .find(|(k, _)| k == attr)?;
            return self.eval_in(v, &Vec::new(), d + 1);
        };
        let init = self.method(class, "__init__");
        let locals = init.map_or_else(Vec::new, |f| self.bind(f, a.value, 0, &Vec::new(), d));
        if let Some(v) = self.assignment_in(class, &format!("self.{attr}")) {
            return self.eval_in(v, &locals, d + 1);
        }
        let m = self.method(class, attr)?;
        self.returns_of(m)
            .into_iter()
            .find_map(|r| self.eval_in(r.named_child(0)?, &Vec::new(), d + 1))
    }

    /// `cfg.x` where `cfg` is a parameter of its function: the instance the
    /// first call site passes for it (`train(cfg)` after `cfg = tyro.cli(Config)`).
    fn parameter_attr(&self, object: Node<'t>, attr: &str, d: usize) -> Option<Found> {
        // Each hop through a call site costs two levels and only the first
        // four sites are followed: a config passed down through functions
        // called from many places would otherwise branch at every hop.
        if d > 6 {
            return None;
        }
        let func = self.enclosing_function(object)?;
        let name = self.text(object);
        let pos = self.param_position(name, func)?;
        let mut sites = self
            .call_sites(func)
            .into_iter()
            .filter(|(_, spawned)| *spawned == 0)
            .take(4);
        sites.find_map(|(call, _)| {
            let a = call_args(self.src(call), call);
            let arg = a
                .keywords
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| *v)
                .or_else(|| {
                    let skip = self.self_offset(func);
                    a.positional.get(pos.checked_sub(skip)?).copied()
                })?;
            self.instance_attr(arg, attr, d + 2)
        })
    }
}
