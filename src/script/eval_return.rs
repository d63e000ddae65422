//! The return value of one of the script's own functions, one call deep:
//! the function's parameters bound to that call's arguments, the first
//! `return` whose branch runs (a known `if` condition decides) and whose
//! value can be computed. A `return a, b` unpacked by `x, y = f()` gives
//! each its item (eval_names.rs).

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::py::Found;

/// Calls into the project followed inside one evaluation, at most.
const MAX_CALL_DEPTH: usize = 2;

impl<'t> Eval<'t> {
    /// What `call` returns when it calls a function of the project.
    pub(super) fn returned(&self, call: Node<'t>, locals: &Locals, d: usize) -> Option<Found> {
        self.returned_part(call, None, locals, d)
    }

    /// Item `item` of what `call` returns, when the function returns a
    /// tuple (`return model, data, config`): that item alone, so that a
    /// model the reader cannot compute does not hide the config beside it.
    pub(super) fn returned_item(
        &self,
        call: Node<'t>,
        item: usize,
        locals: &Locals,
        d: usize,
    ) -> Option<Found> {
        self.returned_part(call, Some(item), locals, d)
    }

    /// The first reachable `return`'s value that can be computed: the
    /// whole of it, or item `item` of a returned tuple.
    fn returned_part(
        &self,
        call: Node<'t>,
        item: Option<usize>,
        locals: &Locals,
        d: usize,
    ) -> Option<Found> {
        let frames = locals
            .iter()
            .filter_map(|b| b.scope)
            .collect::<std::collections::HashSet<_>>();
        if frames.len() > MAX_CALL_DEPTH {
            return None;
        }
        let func = self.callee_def(call)?;
        let mut frame = self.bind(func, call, 0, locals, d);
        frame.extend(locals.iter().cloned());
        self.returns_of(func).into_iter().find_map(|r| {
            if !super::reachable_with(self, r, &frame) {
                return None;
            }
            let e = r.named_child(0)?;
            let e = match item {
                None => e,
                Some(i) if matches!(e.kind(), "expression_list" | "tuple") => {
                    e.named_child(u32::try_from(i).ok()?)?
                }
                Some(_) => return None,
            };
            self.eval_in(e, &frame, d + 1)
        })
    }
}
