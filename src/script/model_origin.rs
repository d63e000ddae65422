//! Following the model the optimizer is given back to the call that builds
//! it: `Adam(model.parameters())` → `model = to_hetero(GNN(...), meta)
//! .to(device)` → `GNN(...)`. Through wrappers (`.to()`, `.cuda()`,
//! DistributedDataParallel, `torch.compile`, `.module`), `to_hetero` (kept
//! for the relations), the script's own functions (their `return`, with the
//! call's arguments bound and only the branches that run), parameters (their
//! first call site), `self.model = ...`, and `self.parameters()` in a
//! LightningModule (the module itself, at its instantiation).

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::py::{call_args, callee_name, children};

/// Steps followed at most.
const MAX_STEPS: usize = 12;

/// The constructor a model comes from.
pub struct Origin<'t> {
    /// The constructor call.
    pub call: Node<'t>,
    /// The class it instantiates when the call names it indirectly (`cls(args)`).
    pub class: Option<Node<'t>>,
    /// Names bound where it is called (a helper's parameters).
    pub locals: Locals,
    /// The `to_hetero(...)` call around it, if any.
    pub hetero: Option<Node<'t>>,
}

/// The model the optimizer built by `opt_call` trains.
pub fn trained<'t>(ev: &Eval<'t>, opt_call: Node<'t>) -> Option<Origin<'t>> {
    let params = parameters_call(ev, opt_call)?;
    let object = params
        .child_by_field_name("function")?
        .child_by_field_name("object")?;
    if ev.text(object) == "self" {
        // A LightningModule's configure_optimizers: the module is the model.
        let class = ev.enclosing_class(opt_call)?;
        let init = ev.method(class, "__init__")?;
        let (site, _) = ev.call_sites(init).into_iter().next()?;
        return Some(Origin {
            call: site,
            class: Some(class),
            locals: Vec::new(),
            hetero: None,
        });
    }
    let mut hetero = None;
    let (call, class, locals) = resolve(ev, object, Vec::new(), &mut hetero, 0)?;
    Some(Origin {
        call,
        class,
        locals,
        hetero,
    })
}

/// The `x.parameters()` call among the optimizer's arguments.
fn parameters_call<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<Node<'t>> {
    let args = call.child_by_field_name("arguments")?;
    let mut stack = vec![args];
    while let Some(n) = stack.pop() {
        if n.kind() == "call"
            && matches!(callee_name(ev.src(n), n), "parameters" | "named_parameters")
        {
            return Some(n);
        }
        stack.extend(children(n));
    }
    None
}

type Resolved<'t> = (Node<'t>, Option<Node<'t>>, Locals);

fn resolve<'t>(
    ev: &Eval<'t>,
    node: Node<'t>,
    locals: Locals,
    hetero: &mut Option<Node<'t>>,
    steps: usize,
) -> Option<Resolved<'t>> {
    if steps > MAX_STEPS {
        return None;
    }
    let next = steps + 1;
    match node.kind() {
        "parenthesized_expression" => resolve(ev, node.named_child(0)?, locals, hetero, next),
        "call" => {
            let name = callee_name(ev.src(node), node);
            let f = node.child_by_field_name("function")?;
            let object = f.child_by_field_name("object");
            let a = call_args(ev.src(node), node);
            if matches!(
                name,
                "to" | "cuda" | "cpu" | "float" | "half" | "double" | "train" | "share_memory"
            ) && let Some(o) = object
            {
                return resolve(ev, o, locals, hetero, next);
            }
            // `copy.deepcopy(model)`: a second model of the same layers.
            if matches!(
                name,
                "DistributedDataParallel"
                    | "DDP"
                    | "DataParallel"
                    | "compile"
                    | "convert_sync_batchnorm"
                    | "deepcopy"
            ) || name == "to_hetero"
                || name == "to_hetero_with_bases"
            {
                if name.starts_with("to_hetero") {
                    *hetero = Some(node);
                }
                return resolve(ev, *a.positional.first()?, locals, hetero, next);
            }
            if super::model::basic_gnn(name).is_some()
                || matches!(name, "MLP" | "Sequential")
                || ev.class_of_call(node).is_some()
            {
                return Some((node, None, locals));
            }
            if let Some(func) = ev.callee_def(node) {
                let frame = ev.bind(func, node, 0, &locals, 0);
                for r in ev.returns_of(func) {
                    if !super::reachable_with(ev, r, &frame) && ev.returns_of(func).len() > 1 {
                        continue;
                    }
                    if let Some(v) = r.named_child(0)
                        && let Some(found) = resolve(ev, v, frame.clone(), hetero, next)
                    {
                        return Some(found);
                    }
                }
                return None;
            }
            // `model_class(args)` where `model_class` names a class of the project.
            if f.kind() == "identifier"
                && let Some(class) = class_named_by(ev, f, &locals, next)
            {
                return Some((node, Some(class), locals));
            }
            None
        }
        "identifier" => {
            let name = ev.text(node);
            if let Some(value) = assigned(ev, name, node, &locals) {
                return resolve(ev, value, locals, hetero, next);
            }
            let func = ev.enclosing_function(node)?;
            let pos = ev.param_position(name, func)?;
            let (site, spawned) = ev.call_sites(func).into_iter().next()?;
            let a = call_args(ev.src(site), site);
            let arg = a
                .keywords
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| *v)
                .or_else(|| {
                    let skip = ev.self_offset(func) + spawned;
                    let list = if spawned == 1 {
                        let t = a
                            .keywords
                            .iter()
                            .find(|(k, _)| k == "args")
                            .map(|(_, v)| *v)?;
                        children(t)
                    } else {
                        a.positional
                    };
                    list.get(pos.checked_sub(skip)?).copied()
                })?;
            resolve(ev, arg, Vec::new(), hetero, next)
        }
        "attribute" => {
            let object = node.child_by_field_name("object")?;
            let attr = ev.text(node.child_by_field_name("attribute")?);
            if attr == "module" {
                return resolve(ev, object, locals, hetero, next);
            }
            if ev.text(object) == "self" {
                let value = super::model_shape::self_value(ev, node)?;
                return resolve(ev, value, locals, hetero, next);
            }
            member(ev, object, attr, hetero, next)
        }
        _ => None,
    }
}

/// `wrapper.model` where `wrapper` is an instance of a project class that
/// is no model itself (`self.target_model = NodeClassifier(...)`, whose
/// `__init__` sets `self.model = self.determine_model(...)`): what the
/// class sets the attribute to, with that instantiation's arguments bound.
fn member<'t>(
    ev: &Eval<'t>,
    object: Node<'t>,
    attr: &str,
    hetero: &mut Option<Node<'t>>,
    steps: usize,
) -> Option<Resolved<'t>> {
    let (call, class, _) = resolve(ev, object, Vec::new(), hetero, steps + 1)?;
    let class = class.or_else(|| ev.class_of_call(call))?;
    let value = ev.assignment_in(class, &format!("self.{attr}"))?;
    let locals = ev
        .method(class, "__init__")
        .map_or_else(Vec::new, |init| ev.bind(init, call, 0, &Vec::new(), 0));
    resolve(ev, value, locals, hetero, steps + 1)
}

/// The value assigned to `name` in force at `at` whose branch runs (a
/// known `if` deciding), else None.
pub fn assigned<'t>(ev: &Eval<'t>, name: &str, at: Node<'t>, locals: &Locals) -> Option<Node<'t>> {
    let idx = ev.index_of(at);
    let all = idx.assigns.get(name)?;
    let func = ev.enclosing_function(at);
    let runs = |a: &&super::index::Assign<'t>| super::reachable_with(ev, a.value, locals);
    if let Some(f) = func {
        let local = all
            .iter()
            .filter(|a| a.scope == Some(f) && a.end <= at.start_byte())
            .rfind(runs);
        if let Some(a) = local {
            return Some(a.value);
        }
        if ev.param_position(name, f).is_some() {
            return None;
        }
    }
    // The module's: before `at` when `at` is at module level, else any.
    let module: Vec<_> = all
        .iter()
        .filter(|a| a.scope.is_none() && (func.is_some() || a.end <= at.start_byte()))
        .collect();
    module.into_iter().rfind(runs).map(|a| a.value)
}

/// The project class an identifier stands for (`cls = SAGE`, a helper
/// returning a class).
fn class_named_by<'t>(
    ev: &Eval<'t>,
    ident: Node<'t>,
    locals: &Locals,
    steps: usize,
) -> Option<Node<'t>> {
    if steps > MAX_STEPS {
        return None;
    }
    let m = ev.project.module_of(ident);
    if let Some(c) = ev.class_named(m, ev.text(ident)) {
        return Some(c);
    }
    let value = assigned(ev, ev.text(ident), ident, locals)?;
    class_of_expr(ev, value, locals, steps + 1)
}

/// The project class an expression stands for: a name, a helper's
/// return, `classes[key]` of a dict literal of classes.
fn class_of_expr<'t>(
    ev: &Eval<'t>,
    value: Node<'t>,
    locals: &Locals,
    steps: usize,
) -> Option<Node<'t>> {
    if steps > MAX_STEPS {
        return None;
    }
    match value.kind() {
        "identifier" => class_named_by(ev, value, locals, steps + 1),
        "subscript" => {
            let key = ev.eval_with(value.child_by_field_name("subscript")?, locals)?;
            let super::py::Value::Str(key) = key.value else {
                return None;
            };
            let dict = dict_literal(ev, value.child_by_field_name("value")?, locals, steps + 1)?;
            let pair = children(dict).into_iter().find(|p| {
                p.kind() == "pair"
                    && p.child_by_field_name("key")
                        .and_then(|k| ev.eval(k))
                        .is_some_and(|k| k.value == super::py::Value::Str(key.clone()))
            })?;
            class_of_expr(ev, pair.child_by_field_name("value")?, locals, steps + 1)
        }
        "call" => {
            let func = ev.callee_def(value)?;
            let frame = ev.bind(func, value, 0, locals, 0);
            ev.returns_of(func).into_iter().find_map(|r| {
                let v = r.named_child(0)?;
                if !super::reachable_with(ev, r, &frame) {
                    return None;
                }
                class_of_expr(ev, v, &frame, steps + 1)
            })
        }
        _ => None,
    }
}

/// The dict literal a name stands for (through assignments and imports).
fn dict_literal<'t>(
    ev: &Eval<'t>,
    node: Node<'t>,
    locals: &Locals,
    steps: usize,
) -> Option<Node<'t>> {
    if steps > MAX_STEPS {
        return None;
    }
    match node.kind() {
        "dictionary" => Some(node),
        "identifier" => {
            let name = ev.text(node);
            if let Some(v) = assigned(ev, name, node, locals) {
                return dict_literal(ev, v, locals, steps + 1);
            }
            let m = ev.project.module_of(node);
            let (n, orig) = match ev.project.imports[m].get(name) {
                Some(super::project::Imported::Name(n, orig)) => (*n, orig.clone()),
                _ => {
                    let s = ev.project.stars[m]
                        .iter()
                        .find(|s| ev.project.indexes[**s].assigns.contains_key(name))?;
                    (*s, name.to_string())
                }
            };
            let a = ev.project.indexes[n]
                .assigns
                .get(&orig)?
                .iter()
                .rfind(|a| a.scope.is_none())?;
            dict_literal(ev, a.value, &Vec::new(), steps + 1)
        }
        _ => None,
    }
}
