//! What runs, and in what order, read from the code rather than the
//! source order.
//!
//! Which of two calls runs first: each call is placed by the chain of
//! call sites that leads to it from code that runs at module level
//! (`ExpETR(args)` at main.py:29
//! → `self._train_model()` at line 43 → `self.train_model()` → the
//! optimizer), and two chains compare from their outer end. A method that
//! trains and one that retrains a copy afterwards are called in that order
//! from the same `__init__`, though the retraining one may be written
//! first.
//!
//! A project module's `if __name__ == "__main__":` block does not run when
//! the training script imports that module: Python sets `__name__` to the
//! module's own name there. Helper modules keep their own smoke tests in
//! such blocks (`load_elliptic(local=True, use_temporal=True, t=1)` beside
//! the function the script calls with other arguments), and a call there,
//! taken as one of the function's call sites, bound its parameters to the
//! test's values: the branch the real call takes was read as dead. The
//! training script itself (module 0) runs as `__main__`; a module the
//! project only runs through `runpy` is not known to be imported and is
//! left as it was.

use tree_sitter::Node;

use super::eval::Eval;
use super::project::Imported;

/// Call sites followed outwards at most.
const MAX_HOPS: usize = 8;

/// The place of `call` in the run: (module, byte offset) of each call on
/// the way to it, the outermost first. A function with no call site that
/// runs ends the chain where it is.
pub fn key<'t>(ev: &Eval<'t>, call: Node<'t>) -> Vec<(usize, usize)> {
    let mut chain = vec![place(ev, call)];
    let mut node = call;
    for _ in 0..MAX_HOPS {
        let Some(f) = ev.enclosing_function(node) else {
            break;
        };
        let site = ev
            .call_sites(f)
            .into_iter()
            .map(|(s, _)| s)
            .filter(|s| super::reachable(ev, *s))
            .min_by_key(|s| place(ev, *s));
        let Some(site) = site else { break };
        if chain.contains(&place(ev, site)) {
            break; // recursion
        }
        chain.push(place(ev, site));
        node = site;
    }
    chain.reverse();
    chain
}

/// Where `node` is: its module and byte offset.
fn place(ev: &Eval, node: Node) -> (usize, usize) {
    (ev.project.module_of(node), node.start_byte())
}

/// The `if __name__ == "__main__":` statement around `node` when it is in
/// a module the project imports (so the block never runs), else None.
pub fn dead_main_block<'t>(ev: &Eval<'t>, node: Node<'t>) -> Option<Node<'t>> {
    let m = ev.project.module_of(node);
    if m == 0 {
        return None;
    }
    let mut cur = ev.parent(node);
    let mut block = None;
    while let Some(n) = cur {
        if n.kind() == "if_statement" && is_main_test(ev, n) {
            block = Some(n);
        }
        cur = ev.parent(n);
    }
    block.filter(|_| imported(ev, m))
}

/// Whether `stmt`'s condition is `__name__ == "__main__"` (either side).
fn is_main_test(ev: &Eval, stmt: Node) -> bool {
    let Some(cond) = stmt.child_by_field_name("condition") else {
        return false;
    };
    let text: String = ev
        .text(cond)
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if c == '\'' { '"' } else { c })
        .collect();
    text == "__name__==\"__main__\"" || text == "\"__main__\"==__name__"
}

/// Whether module `m` is imported by another module of the project.
fn imported(ev: &Eval, m: usize) -> bool {
    let p = ev.project;
    p.imports.iter().enumerate().any(|(k, map)| {
        k != m
            && map.values().any(|i| match i {
                Imported::Module(n) | Imported::Name(n, _) => *n == m,
                Imported::Library(_) => false,
            })
    }) || p
        .stars
        .iter()
        .enumerate()
        .any(|(k, s)| k != m && s.contains(&m))
}
