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
