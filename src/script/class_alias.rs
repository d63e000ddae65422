//! A class called through a name bound to it first: `cls = Reddit` then
//! `cls(root)`, or a project's loading function that picks PyG's class or a
//! vendored copy in an `if`/`else` (`if local: EBD = LocalElliptic / else:
//! EBD = EllipticBitcoinDataset`) and then calls `EBD(root=root)`. The
//! called name is neither imported nor a class, so without this the call
//! names nothing and the dataset it loads is lost. The binding followed is
//! the last one before the call in its function (else the module's) whose
//! branch runs; a branch whose condition cannot be computed runs, as
//! everywhere in the reader, so the last binding in source order is taken
//! then. The same binding picks a model's layer class (`base_conv =
//! SAGEConv if args.gnn_type == "gnn" else SAGEConvMLP`, then
//! `base_conv(dim, dim)` in a loop): model_hits.rs names the layer so.

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::py::children;

/// How many bindings a chain of names is followed through (`a = B; c = a`).
const MAX_HOPS: usize = 4;

/// The name or dotted path `f` refers to when it is a plain name bound to
/// another (`cls = EllipticBitcoinDataset`), with the line of each binding
/// followed; None when `f` is imported, a class of the project, or bound to
/// anything but a name or an attribute.
pub fn resolve<'t>(ev: &Eval<'t>, f: Node<'t>) -> Option<(Node<'t>, Vec<String>)> {
    resolve_with(ev, f, &Vec::new())
}

/// As [`resolve`], with `locals` bound (a layer's parameters for one
/// construction), and through a conditional whose condition is known
/// (`base_conv = SAGEConv if args.gnn_type == "gnn" else SAGEConvMLP`).
pub fn resolve_with<'t>(
    ev: &Eval<'t>,
    f: Node<'t>,
    locals: &Locals,
) -> Option<(Node<'t>, Vec<String>)> {
    let mut cur = f;
    let mut lines = Vec::new();
    for _ in 0..MAX_HOPS {
        if cur.kind() != "identifier" || defined(ev, cur) {
            break;
        }
        let Some(mut value) = binding(ev, cur, locals) else {
            break;
        };
        if value.kind() == "conditional_expression" {
            let parts = children(value);
            let cond = ev.eval_with(*parts.get(1)?, locals)?;
            value = if cond.value.truthy() {
                *parts.first()?
            } else {
                *parts.get(2)?
            };
        }
        if !matches!(value.kind(), "identifier" | "attribute") {
            return None;
        }
        lines.push(ev.at(value));
        cur = value;
    }
    (!lines.is_empty()).then_some((cur, lines))
}

/// Whether `name` is imported into its module or is a class defined there.
fn defined<'t>(ev: &Eval<'t>, name: Node<'t>) -> bool {
    ev.imported(name).is_some()
        || ev
            .class_named(ev.project.module_of(name), ev.text(name))
            .is_some()
}

/// The right-hand side of the binding of `name` in force where it is used:
/// the last one before it in its function whose branch runs, else the
/// module's last.
fn binding<'t>(ev: &Eval<'t>, name: Node<'t>, locals: &Locals) -> Option<Node<'t>> {
    let idx = ev.index_of(name);
    let text = ev.text(name);
    idx.local_assignments(text, name)
        .find(|a| super::reachable_with(ev, a.value, locals))
        .or_else(|| idx.module_assignment(text, name))
        .filter(|a| a.position == 0)
        .map(|a| a.value)
}
