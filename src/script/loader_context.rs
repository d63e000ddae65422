//! The contexts a loader call runs in, each read as its own loader: one
//! per value of a loop over a few literal values (`for split in ['train',
//! 'val', 'test']: loaders[split] = NeighborLoader(...)`), one per call of
//! the function that builds it (`get_loader(split_idx['valid'])`, a
//! Lightning hook calling `self.dataloader(mask)`), each with the names of
//! that pass or call bound, the variable the result lands in, the split its
//! caller names, and whether it exists for the whole run (resident) or is
//! built for each evaluation or epoch (on demand).

use tree_sitter::Node;

use super::eval::{Binding, Eval, Locals};
use super::index::def_name;
use super::loaders::Split;
use super::py::Value;
use crate::spec::EvalLoaders;

/// Calls of a loader-building function read as separate loaders, at most.
const MAX_CONTEXTS: usize = 8;

/// One context of a loader call.
pub struct Context<'t> {
    /// Names bound for it.
    pub locals: Locals,
    /// ` (called at x.py:80)`, ` (split=val)`, or empty.
    pub describe: String,
    /// The split the context names (a hook's or a loop value's), if any.
    pub split: Option<Split>,
    /// When the loader exists.
    pub placement: EvalLoaders,
    /// The variable the caller assigns the loader to.
    pub variable: Option<String>,
    /// The call site (`x.py:80`) of this context, if it is a call.
    pub site: Option<String>,
    /// That call.
    pub site_node: Option<Node<'t>>,
}

/// Every context `call` (a loader constructor) runs in.
pub fn contexts<'t>(ev: &Eval<'t>, call: Node<'t>) -> Vec<Context<'t>> {
    let func = ev.enclosing_function(call);
    let ctx = |locals: Locals, describe: String, split, placement, variable| Context {
        locals,
        describe,
        split,
        placement,
        variable,
        site: None,
        site_node: None,
    };
    if let Some((var, values)) = literal_loop(ev, call, func) {
        let placement = if in_eval_function(ev, call) {
            EvalLoaders::OnDemand
        } else {
            EvalLoaders::Resident
        };
        return values
            .into_iter()
            .map(|(text, value)| {
                let b = Binding {
                    name: var.clone(),
                    value: Some(value),
                    scope: func.map(|f| f.id()),
                    text: String::new(),
                    at: None,
                };
                let split = split_named(&text);
                ctx(vec![b], format!(" ({var}={text})"), split, placement, None)
            })
            .collect();
    }
    let own = placement(ev, call, func);
    let Some(f) = func else {
        return vec![ctx(vec![], String::new(), None, own, None)];
    };
    // A helper nothing calls builds nothing for this job.
    if super::run_scope::uncalled_helper(ev, f) {
        return vec![];
    }
    let hook = hook_split(ev, f);
    let sites = ev.call_sites(f);
    if sites.is_empty() {
        return vec![ctx(vec![], String::new(), hook, own, None)];
    }
    // A call under a branch that never runs (`if False:`, a flag off)
    // builds no loader; called only there, the function builds none.
    let sites: Vec<_> = sites
        .into_iter()
        .filter(|(site, _)| {
            super::reachable(ev, *site)
                && !ev
                    .enclosing_function(*site)
                    .is_some_and(|g| super::run_scope::uncalled_helper(ev, g))
        })
        .collect();
    sites
        .into_iter()
        .take(MAX_CONTEXTS)
        .map(|(site, spawned)| {
            let caller = ev.enclosing_function(site);
            let locals = closure_locals(ev, f, caller, site, spawned)
                .unwrap_or_else(|| ev.bind_with_defaults(f, site, spawned));
            let split = hook.or_else(|| caller.and_then(|c| hook_split(ev, c)));
            let mut at_site = placement(ev, site, caller);
            if own == EvalLoaders::OnDemand {
                at_site = EvalLoaders::OnDemand;
            }
            let variable = ev
                .parent(site)
                .filter(|p| p.kind() == "assignment")
                .and_then(|p| p.child_by_field_name("left"))
                .map(|l| ev.text(l).to_string());
            let mut c = ctx(
                locals,
                format!(" (called at {})", ev.at(site)),
                split,
                at_site,
                variable,
            );
            c.site = Some(ev.at(site));
            c.site_node = Some(site);
            c
        })
        .collect()
}

/// A function nested in the one that calls it (`def create_loader(mask):`
/// inside `get_dataloader(data, num_neighbors, batch_size, ...)`): the
/// outer function's parameters, bound at its first call that runs, and the
/// inner's, bound at `site` with them; None when `f` is not nested so.
fn closure_locals<'t>(
    ev: &Eval<'t>,
    f: Node<'t>,
    caller: Option<Node<'t>>,
    site: Node<'t>,
    spawned: usize,
) -> Option<Locals> {
    let outer = caller.filter(|c| {
        c.id() != f.id() && c.start_byte() <= f.start_byte() && f.end_byte() <= c.end_byte()
    })?;
    let (outer_site, outer_spawned) = ev
        .call_sites(outer)
        .into_iter()
        .find(|(s, _)| super::reachable(ev, *s))?;
    let mut locals = ev.bind_with_defaults(outer, outer_site, outer_spawned);
    let inner = ev.bind(f, site, spawned, &locals, 0);
    locals.extend(inner);
    Some(locals)
}

/// Where a loader `call` is kept from running: the branch around it
/// (`if False:`), or, when every call of the function that builds it is
/// under such a branch, those branches' lines. Empty when it runs.
pub fn dead_places<'t>(ev: &Eval<'t>, call: Node<'t>) -> Vec<String> {
    let none = Locals::new();
    if let Some(b) = super::dead_branch(ev, call, &none) {
        return vec![ev.at(b)];
    }
    let Some(f) = ev.enclosing_function(call) else {
        return vec![];
    };
    let sites = ev.call_sites(f);
    let dead: Vec<String> = sites
        .iter()
        .filter_map(|(site, _)| super::dead_branch(ev, *site, &none).map(|b| ev.at(b)))
        .collect();
    if sites.is_empty() || dead.len() < sites.len() {
        return vec![];
    }
    dead
}

/// The split a Lightning hook (`val_dataloader`) or a name says.
fn hook_split<'t>(ev: &Eval<'t>, f: Node<'t>) -> Option<Split> {
    let name = def_name(ev.src(f), f);
    match name {
        "train_dataloader" => Some(Split::Train),
        "val_dataloader" => Some(Split::Val),
        "test_dataloader" | "predict_dataloader" => Some(Split::Test),
        _ => None,
    }
}

fn split_named(text: &str) -> Option<Split> {
    match text.to_ascii_lowercase().as_str() {
        "train" | "training" => Some(Split::Train),
        "val" | "valid" | "validation" | "dev" => Some(Split::Val),
        "test" | "testing" => Some(Split::Test),
        _ => None,
    }
}

/// `for v in ['train', 'val', 'test']:` around `call` (in its function):
/// the variable and its values, when they are a few literals.
fn literal_loop<'t>(
    ev: &Eval<'t>,
    call: Node<'t>,
    func: Option<Node<'t>>,
) -> Option<(String, Vec<(String, super::py::Found)>)> {
    let mut cur = ev.parent(call);
    while let Some(n) = cur {
        if Some(n) == func {
            return None;
        }
        if n.kind() == "for_statement" {
            let left = n.child_by_field_name("left")?;
            if left.kind() != "identifier" || ev.text(left).contains("epoch") {
                return None;
            }
            let values = ev.eval(n.child_by_field_name("right")?)?;
            let Value::List(items) = &values.value else {
                return None;
            };
            if items.is_empty() || items.len() > MAX_CONTEXTS {
                return None;
            }
            let mut out = Vec::new();
            for v in items {
                let text = match v {
                    Value::Str(s) => s.clone(),
                    Value::Int(i) => i.to_string(),
                    _ => return None,
                };
                out.push((
                    text,
                    super::py::Found {
                        value: v.clone(),
                        ..values.clone()
                    },
                ));
            }
            return Some((ev.text(left).to_string(), out));
        }
        cur = ev.parent(n);
    }
    None
}

/// Whether `node` is in a function named for evaluation (`test`,
/// `evaluate`...), Lightning's `*_dataloader` hooks excepted (Lightning
/// builds their loaders once).
pub fn in_eval_function<'t>(ev: &Eval<'t>, node: Node<'t>) -> bool {
    ev.enclosing_function(node).is_some_and(|f| {
        let name = def_name(ev.src(f), f).to_ascii_lowercase();
        !name.ends_with("_dataloader")
            && ["test", "eval", "valid", "infer", "predict"]
                .iter()
                .any(|w| name.contains(w))
    })
}

/// Resident when `node` runs once before training; on demand inside an
/// evaluation function or a loop of its function (once per epoch or per
/// evaluation), or in a function called in such a loop (`score(mask)`
/// called each epoch), unless the loop repeats whole trainings
/// (run_scope.rs).
fn placement<'t>(ev: &Eval<'t>, node: Node<'t>, func: Option<Node<'t>>) -> EvalLoaders {
    let called_in_loop = || {
        func.is_some_and(|f| {
            ev.call_sites(f)
                .iter()
                .any(|(s, _)| in_loop(ev, *s, ev.enclosing_function(*s)))
        })
    };
    if in_eval_function(ev, node) || in_loop(ev, node, func) || called_in_loop() {
        return EvalLoaders::OnDemand;
    }
    EvalLoaders::Resident
}

/// Whether `node` is in a loop of `func` (the function it is in) that
/// does not repeat whole trainings.
fn in_loop<'t>(ev: &Eval<'t>, node: Node<'t>, func: Option<Node<'t>>) -> bool {
    let mut cur = ev.parent(node);
    while let Some(n) = cur {
        if Some(n) == func {
            break;
        }
        if matches!(n.kind(), "for_statement" | "while_statement")
            && !super::run_scope::runs_loop(ev, n, node)
        {
            return true;
        }
        cur = ev.parent(n);
    }
    false
}
