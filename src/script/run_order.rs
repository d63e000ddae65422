//! Which of two calls runs first, read from the code rather than the
//! source order: each call is placed by the chain of call sites that leads
//! to it from code that runs at module level (`ExpETR(args)` at main.py:29
//! → `self._train_model()` at line 43 → `self.train_model()` → the
//! optimizer), and two chains compare from their outer end. A method that
//! trains and one that retrains a copy afterwards are called in that order
//! from the same `__init__`, though the retraining one may be written
//! first.

use tree_sitter::Node;

use super::eval::Eval;

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
