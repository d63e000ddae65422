//! One walk over a parsed script that records what the reader looks things
//! up by: every simple assignment (`name = expr`, `name: T = expr`, each
//! name of `a, b = ...`, and attribute targets such as `self.x = expr` or
//! `args.sizes = expr`, by their text) with the function it is in, every
//! function and class definition, every call, `for` loop and `return`. The walk uses a
//! cursor, not recursion, so a deeply nested hostile file cannot overflow
//! the stack.

use std::collections::HashMap;

use tree_sitter::Node;

use super::py::Source;

/// `name = value` somewhere in the script.
#[derive(Debug, Clone, Copy)]
pub struct Assign<'t> {
    /// The right-hand side.
    pub value: Node<'t>,
    /// The function the assignment is in (None: module level).
    pub scope: Option<Node<'t>>,
    /// Byte offset of the statement.
    pub start: usize,
    /// Byte offset of its end: a name in the right-hand side sees the assignment before.
    pub end: usize,
    /// For `a, b = ...`: which name of the pattern (0 for a plain assignment).
    pub position: usize,
}

/// What the script defines and calls.
#[derive(Default)]
pub struct Index<'t> {
    /// Assignments by target name, in source order.
    pub assigns: HashMap<String, Vec<Assign<'t>>>,
    /// Item assignments (`name[key] = value`) by the object's text, in
    /// source order: the key node and the assignment.
    pub items: HashMap<String, Vec<(Node<'t>, Assign<'t>)>>,
    /// Function definitions by name (the first one wins).
    pub functions: HashMap<String, Node<'t>>,
    /// Class definitions by name.
    pub classes: HashMap<String, Node<'t>>,
    /// Every call, in source order.
    pub calls: Vec<Node<'t>>,
    /// Calls by the called name's last segment (`spawn` for `mp.spawn`).
    by_callee: HashMap<String, Vec<Node<'t>>>,
    /// Every `for` statement, in source order.
    pub fors: Vec<Node<'t>>,
    /// Every `return` statement, in source order.
    pub returns: Vec<Node<'t>>,
    /// Whether the parser had to skip text it could not read.
    pub has_errors: bool,
    /// Each function definition's parameter names, by node id: a closure's
    /// parameter shadows its enclosing functions' names.
    params: HashMap<usize, Vec<String>>,
    /// Each node's parent, by node id. tree-sitter finds a parent by
    /// descending from the root (`ts_node_parent`), which made reading a
    /// 2,000-line script take seconds; the walk records them once.
    parents: HashMap<usize, Node<'t>>,
}

/// The name of a function or class definition.
pub fn def_name<'a>(src: &'a Source, def: Node) -> &'a str {
    def.child_by_field_name("name")
        .map_or("", |n| src.text_of(n))
}

impl<'t> Index<'t> {
    /// Walks the whole tree of `src`.
    pub fn build(src: &'t Source) -> Index<'t> {
        let mut index = Index {
            has_errors: src.tree.root_node().has_error(),
            ..Index::default()
        };
        let mut cursor = src.tree.walk();
        let mut stack: Vec<Node<'t>> = Vec::new();
        loop {
            let node = cursor.node();
            // Tokens (anonymous nodes) are never looked up: only named nodes are recorded.
            if node.is_named()
                && let Some(&p) = stack.last()
            {
                index.parents.insert(node.id(), p);
            }
            index.visit(src, node);
            if cursor.goto_first_child() {
                stack.push(node);
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return index;
                }
                stack.pop();
            }
        }
    }

    /// Calls whose called text is exactly `name` (a plain function call).
    pub fn calls_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Node<'t>> + 'a {
        self.by_callee
            .get(name)
            .into_iter()
            .flatten()
            .copied()
            .filter(move |c| {
                c.child_by_field_name("function")
                    .is_some_and(|f| f.kind() == "identifier")
            })
    }

    /// Calls whose called name's last segment is `last` (`mp.spawn` for `spawn`).
    pub fn calls_of_suffix<'a>(&'a self, last: &str) -> impl Iterator<Item = Node<'t>> + 'a {
        self.by_callee.get(last).into_iter().flatten().copied()
    }

    /// The parent of `node`.
    pub fn parent(&self, node: Node<'t>) -> Option<Node<'t>> {
        self.parents.get(&node.id()).copied()
    }

    /// The innermost function definition around `node`.
    pub fn enclosing_function(&self, node: Node<'t>) -> Option<Node<'t>> {
        let mut cur = self.parent(node);
        while let Some(n) = cur {
            if n.kind() == "function_definition" {
                return Some(n);
            }
            cur = self.parent(n);
        }
        None
    }

    /// The class whose body `node` is directly in (no function between).
    fn enclosing_class_body(&self, node: Node<'t>) -> Option<Node<'t>> {
        let mut cur = self.parent(node);
        while let Some(n) = cur {
            match n.kind() {
                "function_definition" => return None,
                "class_definition" => return Some(n),
                _ => cur = self.parent(n),
            }
        }
        None
    }

    fn visit(&mut self, src: &'t Source, node: Node<'t>) {
        match node.kind() {
            "assignment" => self.assignment(src, node),
            "function_definition" => {
                self.functions
                    .entry(def_name(src, node).to_string())
                    .or_insert(node);
                let names = node
                    .child_by_field_name("parameters")
                    .map(|p| super::py::children(p))
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|p| super::eval::param_name(src, p).map(str::to_string))
                    .collect();
                self.params.insert(node.id(), names);
            }
            "class_definition" => {
                self.classes
                    .entry(def_name(src, node).to_string())
                    .or_insert(node);
            }
            "call" => {
                self.calls.push(node);
                let name = super::py::callee_name(src, node).to_string();
                self.by_callee.entry(name).or_default().push(node);
            }
            "for_statement" => self.fors.push(node),
            "return_statement" => self.returns.push(node),
            _ => {}
        }
    }

    fn assignment(&mut self, src: &'t Source, node: Node<'t>) {
        let (Some(left), Some(value)) = (
            node.child_by_field_name("left"),
            node.child_by_field_name("right"),
        ) else {
            return;
        };
        let scope = self.enclosing_function(node);
        if left.kind() == "subscript"
            && let (Some(object), Some(key)) = (
                left.child_by_field_name("value"),
                left.child_by_field_name("subscript"),
            )
            && matches!(object.kind(), "identifier" | "attribute")
        {
            let name: String = src
                .text_of(object)
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            self.items.entry(name).or_default().push((
                key,
                Assign {
                    value,
                    scope,
                    start: node.start_byte(),
                    end: node.end_byte(),
                    position: 0,
                },
            ));
            return;
        }
        let names: Vec<Node> = match left.kind() {
            "identifier" | "attribute" => vec![left],
            "pattern_list" | "tuple_pattern" => super::py::children(left),
            _ => return,
        };
        // A class body's `x: int = 5` is the class's, not a module name:
        // keyed `Class.x` (dataclass fields, class attributes).
        let class = self
            .enclosing_class_body(node)
            .map(|c| def_name(src, c).to_string());
        for (position, name) in names.into_iter().enumerate() {
            if !matches!(name.kind(), "identifier" | "attribute") {
                continue;
            }
            let prefix = class.as_ref().map_or(String::new(), |c| format!("{c}."));
            let key: String = prefix
                .chars()
                .chain(src.text_of(name).chars())
                .filter(|c| !c.is_whitespace())
                .collect();
            self.assigns.entry(key).or_default().push(Assign {
                value,
                scope,
                start: node.start_byte(),
                end: node.end_byte(),
                position,
            });
        }
    }

    /// The assignment of `name` that is in force at `at`: the last one
    /// before it in the same function, else the module's (the last before
    /// `at`, else the first after: a function body runs after the module
    /// has been read).
    pub fn assignment_at(&self, name: &str, at: Node<'t>) -> Option<Assign<'t>> {
        self.local_assignment(name, at)
            .or_else(|| self.enclosing_assignment(name, at))
            .or_else(|| self.module_assignment(name, at))
    }

    /// A closure's free name: the last assignment of `name` before `at` in
    /// the functions around the one `at` is in, the nearest first (Python's
    /// LEGB; `loader_kwargs = {...}` read by a nested `create_loader`).
    fn enclosing_assignment(&self, name: &str, at: Node<'t>) -> Option<Assign<'t>> {
        let all = self.assigns.get(name)?;
        let mut f = self.enclosing_function(at)?;
        let shadows = |f: Node<'t>| {
            self.params
                .get(&f.id())
                .is_some_and(|p| p.iter().any(|n| n == name))
        };
        while let Some(outer) = self.parent(f).and_then(|p| self.enclosing_function(p)) {
            if shadows(f) {
                return None;
            }
            let found = all
                .iter()
                .rev()
                .find(|a| a.scope == Some(outer) && a.end <= at.start_byte());
            if found.is_some() {
                return found.copied();
            }
            f = outer;
        }
        None
    }

    /// The last assignment of `name` before `at` in the function `at` is in.
    pub fn local_assignment(&self, name: &str, at: Node<'t>) -> Option<Assign<'t>> {
        self.local_assignments(name, at).next()
    }

    /// The assignments of `name` before `at` in the function `at` is in,
    /// the last first.
    pub fn local_assignments<'a>(
        &'a self,
        name: &str,
        at: Node<'t>,
    ) -> impl Iterator<Item = Assign<'t>> + 'a {
        let f = self.enclosing_function(at);
        let all = f.and_then(|_| self.assigns.get(name));
        all.into_iter()
            .flat_map(|v| v.iter().rev())
            .filter(move |a| a.scope == f && a.end <= at.start_byte())
            .copied()
    }

    /// The module-level assignment of `name` in force at `at`.
    pub fn module_assignment(&self, name: &str, at: Node<'t>) -> Option<Assign<'t>> {
        let all = self.assigns.get(name)?;
        let mut module = all.iter().filter(|a| a.scope.is_none());
        if self.enclosing_function(at).is_none() {
            return module.rfind(|a| a.end <= at.start_byte()).copied();
        }
        module.next_back().copied()
    }
}
