//! Whether a loader built in a loop or a helper function really exists as
//! the reader would otherwise say. Two shapes PyG scripts take:
//!
//! - A loop over runs (`for run in range(args.runs):`, seeds, folds)
//!   that builds the loaders and then trains (its epoch loop, or
//!   Lightning's `trainer.fit(model, train, val)`) inside the same pass:
//!   each run's loaders are built once and live through that run's
//!   training, resident, not rebuilt for every evaluation as a loader
//!   built inside the epoch loop is.
//! - A helper module's function nothing calls (`make_loader` of a
//!   project's `loaders.py`, kept for another entry point or for the
//!   module's own `__main__` test): the loader it builds is never built
//!   by this job.

use tree_sitter::Node;

use super::eval::Eval;
use super::index::def_name;
use super::py::children;

/// Whether `looped` (a `for`/`while` around the loader call `built`) is a
/// loop over whole trainings: after `built`, its body runs an epoch loop
/// or a Lightning `fit`, and the loop itself is not over epochs.
pub fn runs_loop<'t>(ev: &Eval<'t>, looped: Node<'t>, built: Node<'t>) -> bool {
    if looped.kind() == "for_statement" && mentions_epoch(ev, looped) {
        return false;
    }
    let Some(body) = looped.child_by_field_name("body") else {
        return false;
    };
    // After the build, or around it (`trainer.fit(m, d.train_dataloader())`).
    let after = |n: Node| {
        n.end_byte() > built.end_byte()
            && n.start_byte() >= body.start_byte()
            && n.end_byte() <= body.end_byte()
            && std::ptr::eq(ev.src(n), ev.src(built))
    };
    let epoch_loop = ev
        .fors()
        .any(|f| after(f) && mentions_epoch(ev, f) && super::reachable(ev, f));
    let fit = ev.calls().any(|c| {
        after(c)
            && super::py::callee_name(ev.src(c), c) == "fit"
            && c.child_by_field_name("function")
                .is_some_and(|f| f.kind() == "attribute")
    });
    epoch_loop || fit
}

/// A `for` whose variable or iterable names epochs (`for epoch in
/// range(1, args.epochs + 1)`).
fn mentions_epoch(ev: &Eval, f: Node) -> bool {
    ["left", "right"].iter().any(|k| {
        f.child_by_field_name(k)
            .is_some_and(|n| ev.text(n).to_ascii_lowercase().contains("epoch"))
    })
}

/// How deep the callers of a helper are followed to find one that runs.
const MAX_CALLERS_DEPTH: usize = 4;

/// Whether `f` is a plain function of a module the script imports (not
/// the script itself, not a method, not decorated: frameworks call those)
/// that no running code of the project calls: no call site, or only call
/// sites in such functions themselves (`main()` of an imported `main.py`,
/// run only by that file's own `__main__` block).
pub fn uncalled_helper<'t>(ev: &Eval<'t>, f: Node<'t>) -> bool {
    uncalled(ev, f, 0)
}

fn uncalled<'t>(ev: &Eval<'t>, f: Node<'t>, depth: usize) -> bool {
    if depth > MAX_CALLERS_DEPTH
        || ev.project.module_of(f) == 0
        || ev.enclosing_class(f).is_some()
        || ev
            .parent(f)
            .is_some_and(|p| p.kind() == "decorated_definition")
    {
        return false;
    }
    let name = def_name(ev.src(f), f);
    if name.starts_with("__") || referenced(ev, name) {
        return false;
    }
    ev.call_sites(f).iter().all(|(site, _)| {
        ev.enclosing_function(*site)
            .is_some_and(|g| g.id() != f.id() && uncalled(ev, g, depth + 1))
    })
}

/// Whether `name` is handed on rather than called, where that runs: an
/// argument (`collate_fn=make_batch`), or bound to a name or kept in a
/// dict or list of builders (`LOADERS = {"neighbor": make_loader}`).
fn referenced<'t>(ev: &Eval<'t>, name: &str) -> bool {
    let is_name = |n: Node<'t>| {
        n.kind() == "identifier" && ev.text(n) == name
            || matches!(n.kind(), "dictionary" | "list" | "tuple")
                && children(n).iter().any(|c| {
                    let v = c.child_by_field_name("value").unwrap_or(*c);
                    v.kind() == "identifier" && ev.text(v) == name
                })
    };
    let live = |n: Node<'t>| super::run_order::dead_main_block(ev, n).is_none();
    ev.project.indexes.iter().any(|idx| {
        idx.assigns
            .values()
            .flatten()
            .any(|a| is_name(a.value) && live(a.value))
    }) || ev.calls().any(|c| {
        let args = super::py::call_args(ev.src(c), c);
        live(c)
            && args
                .positional
                .iter()
                .chain(args.keywords.iter().map(|(_, v)| v))
                .any(|a| is_name(*a))
    })
}
