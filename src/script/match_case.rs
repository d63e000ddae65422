//! Python's `match` statement as a branch whose taken arm can be known:
//! `match backbone: case 'gcn': model_cls = GCN ... case 'gcn_skip':
//! model_cls = GCNSkipBackbone` with `backbone` computed picks one `case`;
//! the others do not run, like the branches of an `if` whose condition is
//! known. Patterns read: string and number literals, their alternatives
//! (`case 'gat' | 'gatv2':`), the wildcard and a bare capture name (they
//! match anything). Any other pattern, or a `case` with a guard, leaves
//! the arms from there on undecided.

use tree_sitter::Node;

use super::eval::{Eval, Locals, string_value};
use super::py::{Value, children};

/// The `case` clause around `node` that does not run, when the `match`
/// subject is known and the arm taken can be told.
pub fn dead_case<'t>(ev: &Eval<'t>, node: Node<'t>, locals: &Locals) -> Option<Node<'t>> {
    let mut child = node;
    let mut cur = ev.parent(node);
    while let Some(n) = cur {
        if n.kind() == "case_clause"
            && n.child_by_field_name("consequence") == Some(child)
            && let Some(m) = ev.parent(n).and_then(|b| ev.parent(b))
            && m.kind() == "match_statement"
            && let Some(taken) = taken_arm(ev, m, locals)
            && taken != Some(n)
        {
            return Some(n);
        }
        child = n;
        cur = ev.parent(n);
    }
    None
}

/// The arm of `m` that runs: Some(arm), Some(None) when none matches,
/// None when it cannot be told.
fn taken_arm<'t>(ev: &Eval<'t>, m: Node<'t>, locals: &Locals) -> Option<Option<Node<'t>>> {
    let subject = m.child_by_field_name("subject")?;
    let value = ev.eval_with(subject, locals)?.value;
    let body = m.child_by_field_name("body")?;
    for arm in children(body)
        .into_iter()
        .filter(|c| c.kind() == "case_clause")
    {
        if arm.child_by_field_name("guard").is_some() {
            return None;
        }
        let patterns: Vec<Node> = children(arm)
            .into_iter()
            .filter(|c| c.kind() == "case_pattern")
            .collect();
        let mut any = false;
        for p in patterns {
            any |= matches(ev, p, &value)?;
        }
        if any {
            return Some(Some(arm));
        }
    }
    Some(None)
}

/// Whether the pattern `p` matches `value`; None when it cannot be told.
fn matches(ev: &Eval, p: Node, value: &Value) -> Option<bool> {
    let inner = match p.kind() {
        "case_pattern" => match p.named_child(0) {
            // `case _:`
            None => return Some(ev.text(p).trim() == "_"),
            Some(i) => i,
        },
        _ => p,
    };
    match inner.kind() {
        "union_pattern" => {
            let mut any = false;
            for alt in children(inner) {
                any |= matches(ev, alt, value)?;
            }
            Some(any)
        }
        "string" | "concatenated_string" => {
            let s = string_value(ev.src(inner), inner)?;
            Some(*value == Value::Str(s))
        }
        "integer" => {
            let i: i64 = ev.text(inner).replace('_', "").parse().ok()?;
            Some(*value == Value::Int(i))
        }
        // `case x:` binds anything (a one-part dotted name, or a bare
        // identifier); `case Kind.GCN:` compares with a value not read.
        "identifier" => Some(true),
        "dotted_name" => (inner.named_child_count() == 1).then_some(true),
        _ => None,
    }
}
