//! The training loader iterated again with autograd off: a script with no
//! loader of its own for evaluation that evaluates over the training
//! loader's batches (`with torch.no_grad(): for b in loader:` after the
//! epochs, or `evaluate(model, train_loader)` where `evaluate` is
//! `@torch.no_grad()`). The evaluation's loader is then the training one,
//! built once and kept: resident, with the training batch. Without this
//! such a script read as evaluating nothing.
//!
//! And the other way round: an evaluation loader built but never used
//! after (its `trainer.fit(model, train_loader)#, valid_loader)` commented
//! out) exists, but its batches never run; the evaluation batch is then
//! the batch of one that is used.

use tree_sitter::Node;

use super::eval::{Eval, param_name};
use super::py::{call_args, children};

/// Where the loader `built` (assigned to `var`) is iterated with autograd
/// off, in its own function after it is built or in a function it is
/// handed to there: that loop's line.
pub fn reused_without_grad<'t>(ev: &Eval<'t>, built: Node<'t>, var: &str) -> Option<String> {
    let scope = ev.enclosing_function(built);
    let same_scope = |n: Node<'t>| {
        n.start_byte() >= built.end_byte()
            && ev.enclosing_function(n) == scope
            && std::ptr::eq(ev.src(n), ev.src(built))
    };
    let here = ev.fors().find(|f| {
        same_scope(*f) && iterates(ev, *f, var) && super::grad_context::without_grad(ev, *f)
    });
    if let Some(f) = here {
        return Some(ev.at(f));
    }
    ev.calls()
        .filter(|c| same_scope(*c) && super::reachable(ev, *c))
        .find_map(|c| handed_to(ev, c, var))
}

/// The loop over `var`'s loader, with autograd off, in the project
/// function `call` hands it to (by position or keyword).
fn handed_to<'t>(ev: &Eval<'t>, call: Node<'t>, var: &str) -> Option<String> {
    let args = call_args(ev.src(call), call);
    let is_var = |n: &Node| n.kind() == "identifier" && ev.text(*n) == var;
    let by_pos = args.positional.iter().position(is_var);
    let by_kw = args
        .keywords
        .iter()
        .find(|(_, v)| is_var(v))
        .map(|(k, _)| k);
    if by_pos.is_none() && by_kw.is_none() {
        return None;
    }
    let f = ev.callee_def(call)?;
    let params = children(f.child_by_field_name("parameters")?);
    let names: Vec<&str> = params
        .iter()
        .filter_map(|p| param_name(ev.src(f), *p))
        .collect();
    let param = match (by_kw, by_pos) {
        (Some(k), _) => names.iter().find(|n| **n == k.as_str()).copied()?,
        (None, Some(i)) => *names.get(i + ev.self_offset(f))?,
        (None, None) => return None,
    };
    let body = f.child_by_field_name("body")?;
    ev.fors()
        .find(|l| {
            body.start_byte() <= l.start_byte()
                && l.end_byte() <= body.end_byte()
                && std::ptr::eq(ev.src(*l), ev.src(f))
                && iterates(ev, *l, param)
                && super::grad_context::without_grad(ev, *l)
        })
        .map(|l| format!("{}, {}", ev.at(l), ev.at(call)))
}

/// Whether the `for` loop `f` iterates `name`: `for b in name`, or through
/// a wrapper that takes it first (`tqdm(name)`, `enumerate(name)`).
fn iterates(ev: &Eval, f: Node, name: &str) -> bool {
    let mut cur = f.child_by_field_name("right");
    while let Some(n) = cur {
        match n.kind() {
            "identifier" => return ev.text(n) == name,
            "call" => cur = call_args(ev.src(n), n).positional.first().copied(),
            _ => return false,
        }
    }
    false
}

/// Whether the loader assigned to the plain name `var` at `built` is used
/// after it in the same file: iterated, or handed to a call. A loader
/// kept under another kind of name (`self.val_loader`) counts as used.
pub fn used_after<'t>(ev: &Eval<'t>, built: Node<'t>, var: &str) -> bool {
    if !var.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return true;
    }
    let later =
        |n: Node<'t>| n.start_byte() >= built.end_byte() && std::ptr::eq(ev.src(n), ev.src(built));
    ev.fors().any(|f| later(f) && iterates(ev, f, var))
        || ev.calls().any(|c| {
            let args = call_args(ev.src(c), c);
            later(c)
                && args
                    .positional
                    .iter()
                    .chain(args.keywords.iter().map(|(_, v)| v))
                    .any(|a| a.kind() == "identifier" && ev.text(*a) == var)
        })
}
