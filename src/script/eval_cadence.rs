//! How often the training loop evaluates: `if epoch % 5 == 0:` (also
//! `(epoch + 1) % args.eval_every == 0`, inside an `or`/`and`) around an
//! evaluation in the epoch loop. The plan counts the on-demand loaders a
//! run builds, and so how many can linger until the cyclic collector runs,
//! from it; a loop with no such `if` evaluates every epoch.

use tree_sitter::Node;

use super::eval::Eval;
use super::py::{Found, callee_name, children};

/// The epochs between evaluations in `epoch_loop`, with where they come
/// from. Only when every evaluation in the loop is under such an `if`: a
/// validation every epoch beside a test every ten is every epoch (counting
/// fewer evaluations than run would under-count their loaders).
pub fn every<'t>(ev: &Eval<'t>, epoch_loop: Node<'t>) -> Option<Found> {
    let var = ev.text(epoch_loop.child_by_field_name("left")?).to_string();
    let body = epoch_loop.child_by_field_name("body")?;
    let mut found: Option<Found> = None;
    let mut every_epoch = false;
    walk(body, &mut |n| {
        if n.kind() != "call" || !is_evaluation(ev, n) {
            return;
        }
        match gate(ev, n, body, &var) {
            Some(f) => {
                // The most frequent of several gated evaluations.
                let n = f.value.as_int().unwrap_or(1);
                if found
                    .as_ref()
                    .is_none_or(|g| g.value.as_int().is_some_and(|m| n < m))
                {
                    found = Some(f);
                }
            }
            None => every_epoch = true,
        }
    });
    if every_epoch { None } else { found }
}

/// The `if epoch % N == 0:` between `call` and the loop's `body` whose
/// branch holds it: N, with its places and the `if`'s line.
fn gate<'t>(ev: &Eval<'t>, call: Node<'t>, body: Node<'t>, var: &str) -> Option<Found> {
    let mut child = call;
    let mut cur = ev.parent(call);
    while let Some(n) = cur {
        if n == body {
            return None;
        }
        if n.kind() == "if_statement"
            && n.child_by_field_name("consequence") == Some(child)
            && let Some(cond) = n.child_by_field_name("condition")
            && let Some(mut f) = modulo(ev, cond, var)
        {
            let at = ev.at(n);
            if !f.from.contains(&at) {
                f.from.push(at);
            }
            return Some(f);
        }
        child = n;
        cur = ev.parent(n);
    }
    None
}

/// `var % N == 0` (or `0 == ...`) somewhere in `cond`: N, when it is a
/// positive number.
fn modulo<'t>(ev: &Eval<'t>, cond: Node<'t>, var: &str) -> Option<Found> {
    match cond.kind() {
        "parenthesized_expression" | "boolean_operator" => children(cond)
            .into_iter()
            .filter(|c| c.is_named())
            .find_map(|c| modulo(ev, c, var)),
        "comparison_operator" => {
            let parts: Vec<Node> = children(cond)
                .into_iter()
                .filter(|c| c.is_named())
                .collect();
            let [a, b] = parts[..] else { return None };
            if !ev.text(cond).contains("==") {
                return None;
            }
            let rem = if ev.text(b) == "0" {
                a
            } else if ev.text(a) == "0" {
                b
            } else {
                return None;
            };
            let rem = strip_parens(rem);
            if rem.kind() != "binary_operator"
                || rem.child_by_field_name("operator").map(|o| ev.text(o)) != Some("%")
                || !ev.text(rem.child_by_field_name("left")?).contains(var)
            {
                return None;
            }
            let n = ev.eval(rem.child_by_field_name("right")?)?;
            (n.value.as_int()? > 0).then_some(n)
        }
        _ => None,
    }
}

fn strip_parens(n: Node) -> Node {
    if n.kind() == "parenthesized_expression"
        && let Some(inner) = n.named_child(0)
    {
        return strip_parens(inner);
    }
    n
}

/// Whether `call` evaluates: its callee is named for it (`evaluate`,
/// `test`, `validate`, `inference`).
fn is_evaluation(ev: &Eval, call: Node) -> bool {
    let name = callee_name(ev.src(call), call).to_ascii_lowercase();
    ["eval", "test", "valid", "infer"]
        .iter()
        .any(|w| name.contains(w))
}

/// Every node under `n`, depth first.
fn walk<'t>(n: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    f(n);
    for c in children(n) {
        walk(c, f);
    }
}
