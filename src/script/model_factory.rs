//! Layers a model builds through a factory method of its own class: the
//! template of PyG's `BasicGNN`, copied into projects (`self.convs.append(
//! self.init_conv(hidden, hidden))` in a base class, `def init_conv(...):
//! return SAGEConv(...)` in each subclass). The method is looked up on the
//! class being sized, so a subclass's override is the one that runs; the
//! convs it returns count as often as the call to it does.

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::model::conv_of;
use super::py::callee_name;
use crate::spec::Conv;

/// The PyG convs that `call` (`self.init_conv(...)` inside `class`'s
/// `__init__`) builds, each with the method's parameters bound to the
/// call's arguments; empty when `call` is not such a method call.
pub(super) fn convs_of_method<'t>(
    ev: &Eval<'t>,
    class: Node<'t>,
    call: Node<'t>,
    locals: &Locals,
) -> Vec<(Conv, Node<'t>, Locals)> {
    let Some(f) = call.child_by_field_name("function") else {
        return vec![];
    };
    let on_self = f.kind() == "attribute"
        && f.child_by_field_name("object")
            .is_some_and(|o| ev.text(o) == "self");
    let name = callee_name(ev.src(call), call);
    if !on_self || name == "__init__" || conv_of(name).is_some() {
        return vec![];
    }
    let Some(method) = ev.method(class, name) else {
        return vec![];
    };
    let bound = ev.bind(method, call, 0, locals, 0);
    ev.index_of(method)
        .calls
        .iter()
        .copied()
        .filter(|c| c.start_byte() >= method.start_byte() && c.end_byte() <= method.end_byte())
        .filter(|c| super::reachable_with(ev, *c, &bound))
        .filter_map(|c| conv_of(callee_name(ev.src(c), c)).map(|conv| (conv, c, bound.clone())))
        .collect()
}
