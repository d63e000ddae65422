//! Whether code runs without autograd: inside a function decorated
//! `@torch.no_grad()` / `@torch.inference_mode()` (or PyTorch Lightning's
//! `validation_step`-style helpers written that way), or inside a `with
//! torch.no_grad():` block. A loader built there is an evaluation's, even
//! when it iterates the training nodes (`evaluate(model, data.train_idx)`
//! to report training accuracy): training needs gradients.

use tree_sitter::Node;

use super::eval::Eval;

/// Names whose decorator or context manager turns autograd off.
const NO_GRAD: &[&str] = &["no_grad", "inference_mode"];

/// True when `node` runs with autograd off, judged from the function that
/// holds it (its decorators) and the `with` blocks between them.
pub(super) fn without_grad<'t>(ev: &Eval<'t>, node: Node<'t>) -> bool {
    let mut at = node;
    while let Some(p) = ev.parent(at) {
        match p.kind() {
            "with_statement" if with_items_text(ev, p).is_some_and(turns_grad_off) => {
                return true;
            }
            "function_definition" => {
                return ev
                    .parent(p)
                    .filter(|d| d.kind() == "decorated_definition")
                    .is_some_and(|d| {
                        let mut c = d.walk();
                        d.children(&mut c)
                            .filter(|x| x.kind() == "decorator")
                            .any(|x| turns_grad_off(ev.text(x)))
                    });
            }
            _ => {}
        }
        at = p;
    }
    false
}

/// The text of a `with` statement's items (what stands before its `:`).
fn with_items_text<'t>(ev: &Eval<'t>, with: Node<'t>) -> Option<&'t str> {
    let mut c = with.walk();
    let clause = with.children(&mut c).find(|x| x.kind() == "with_clause")?;
    Some(ev.text(clause))
}

/// `torch.no_grad()`, `th.inference_mode()`, `no_grad`: a call or name
/// ending in one of NO_GRAD (`torch.enable_grad()` is not one).
fn turns_grad_off(text: &str) -> bool {
    let t = text.trim_start_matches('@');
    NO_GRAD.iter().any(|n| {
        t.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .any(|w| w == *n)
    })
}

#[cfg(test)]
mod tests {
    use super::turns_grad_off;

    #[test]
    fn no_grad_and_inference_mode_turn_it_off_and_enable_grad_does_not() {
        assert!(turns_grad_off("@torch.no_grad()"));
        assert!(turns_grad_off("@th.inference_mode()"));
        assert!(turns_grad_off("torch.no_grad(), open(f) as g"));
        assert!(!turns_grad_off("@torch.enable_grad()"));
        assert!(!turns_grad_off("@no_grad_helper"));
    }
}
