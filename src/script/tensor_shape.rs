//! The shapes of the tensors a script makes itself, enough to size a graph
//! it generates instead of loading: `torch.randn(N, F)`, `torch.randint(0,
//! N, (2, E))`, `arange`, `randperm`, `repeat_interleave`, `stack`, `cat`,
//! `view`/`reshape`, `t()`, and the calls that keep a shape (`.to(device)`,
//! `.long()`, `.flip(0)`), numpy's `np.random.*` and `torch.from_numpy` too.
//! Names are followed to their assignment that runs; each size is computed
//! by the evaluator, and the places it came from are kept. Anything else
//! (a tensor from a file, `to_undirected`, which drops duplicates) has no
//! shape here.

use tree_sitter::Node;

use super::eval::{Eval, Locals};
use super::py::{Found, Value, call_args, callee_name};

/// Tensors followed through names and calls, at most this deep.
const MAX_DEPTH: usize = 12;

/// A tensor's dimensions and where they were decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The sizes, outermost first.
    pub dims: Vec<i64>,
    /// Where the sizes come from.
    pub from: Vec<String>,
}

impl Shape {
    fn with(mut self, more: &[String]) -> Shape {
        for f in more {
            if !self.from.contains(f) {
                self.from.push(f.clone());
            }
        }
        self
    }
}

/// Calls on a tensor that return one of the same shape.
const KEEPS_SHAPE: &[&str] = &[
    "to",
    "cuda",
    "cpu",
    "float",
    "double",
    "half",
    "bfloat16",
    "long",
    "int",
    "bool",
    "contiguous",
    "clone",
    "detach",
    "flip",
    "requires_grad_",
    "share_memory_",
    "pin_memory",
    "normal_",
    "uniform_",
    "abs",
    "relu",
    "sigmoid",
    "type",
    "astype",
];

/// The shape of the tensor `node` makes, with `locals` bound.
pub fn shape<'t>(ev: &Eval<'t>, node: Node<'t>, locals: &Locals, d: usize) -> Option<Shape> {
    if d > MAX_DEPTH {
        return None;
    }
    match node.kind() {
        "parenthesized_expression" => shape(ev, node.named_child(0)?, locals, d + 1),
        "identifier" => {
            let a = ev.assignment_of(ev.text(node), node, locals)?;
            (a.position == 0).then_some(())?;
            shape(ev, a.value, locals, d + 1)
        }
        // `edge_index.T`
        "attribute" if node.child_by_field_name("attribute").map(|a| ev.text(a)) == Some("T") => {
            let mut s = shape(ev, node.child_by_field_name("object")?, locals, d + 1)?;
            s.dims.reverse();
            Some(s)
        }
        "call" => call(ev, node, locals, d),
        _ => None,
    }
}

fn call<'t>(ev: &Eval<'t>, call: Node<'t>, locals: &Locals, d: usize) -> Option<Shape> {
    let src = ev.src(call);
    let f = call.child_by_field_name("function")?;
    let name = callee_name(src, call);
    let args = call_args(src, call);
    let here = ev.at(call);
    let int = |n: Node<'t>| -> Option<(i64, Vec<String>)> {
        let v = ev.eval_with(n, locals)?;
        Some((v.value.as_int()?, v.from))
    };
    let kw = |k: &str| args.keywords.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    let object = (f.kind() == "attribute")
        .then(|| f.child_by_field_name("object"))
        .flatten();
    // `torch.randn`, `np.random.rand`: a module's function, not a method.
    let module = object.is_some_and(|o| {
        let t = ev.text(o);
        ["torch", "np", "numpy"]
            .iter()
            .any(|m| t == *m || t.strip_prefix(m).is_some_and(|r| r.starts_with('.')))
            && t.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    });
    // A method of a tensor the script made.
    if let Some(obj) = object
        && !module
    {
        let s = shape(ev, obj, locals, d + 1)?;
        return match name {
            n if KEEPS_SHAPE.contains(&n) => Some(s),
            "t" if s.dims.len() == 2 => Some(Shape {
                dims: vec![s.dims[1], s.dims[0]],
                ..s
            }),
            "repeat_interleave" if s.dims.len() == 1 => {
                let (k, from) = int(*args.positional.first()?)?;
                Some(
                    Shape {
                        dims: vec![s.dims[0] * k],
                        ..s
                    }
                    .with(&from),
                )
            }
            "unsqueeze" => {
                let (at, _) = int(*args.positional.first()?)?;
                let mut s = s;
                let i = usize::try_from(if at < 0 {
                    at + s.dims.len() as i64 + 1
                } else {
                    at
                })
                .ok()?;
                (i <= s.dims.len()).then(|| s.dims.insert(i, 1))?;
                Some(s)
            }
            "view" | "reshape" => reshaped(s, sizes(ev, &args.positional, kw("size"), locals)?),
            _ => None,
        };
    }
    // Made here: every size known and not negative.
    let from_calls = |s: Shape| s.with(std::slice::from_ref(&here));
    let made = |s: Option<Shape>| s.filter(|s| s.dims.iter().all(|d| *d >= 0)).map(from_calls);
    match name {
        "randn" | "rand" | "zeros" | "ones" | "empty" | "full" | "normal" | "uniform"
            if module || ev.imported(f).is_some() =>
        {
            let given: Vec<Node> = match name {
                // `torch.full(size, value)`; numpy's `normal(loc, scale, size)`.
                "full" => args.positional.first().copied().into_iter().collect(),
                "normal" | "uniform" => args.positional.get(2).copied().into_iter().collect(),
                _ => args.positional.clone(),
            };
            made(sizes(ev, &given, kw("size").or(kw("shape")), locals))
        }
        "randint" => {
            // torch: randint(high, size) / randint(low, high, size);
            // numpy: randint(low, high, size).
            let last = args
                .positional
                .last()
                .copied()
                .filter(|n| matches!(n.kind(), "tuple" | "list"));
            made(sizes(
                ev,
                &last.into_iter().collect::<Vec<_>>(),
                kw("size"),
                locals,
            ))
        }
        "arange" => {
            let v: Option<Vec<(i64, Vec<String>)>> =
                args.positional.iter().map(|n| int(*n)).collect();
            let v = v?;
            let (n, from) = match v.as_slice() {
                [end] => (end.0, end.1.clone()),
                [start, end] => (end.0 - start.0, [start.1.clone(), end.1.clone()].concat()),
                [start, end, step] if step.0 > 0 => (
                    (end.0 - start.0 + step.0 - 1) / step.0,
                    [start.1.clone(), end.1.clone()].concat(),
                ),
                _ => return None,
            };
            Some(from_calls(Shape {
                dims: vec![n.max(0)],
                from,
            }))
        }
        "randperm" => {
            let (n, from) = int(*args.positional.first()?)?;
            Some(from_calls(Shape {
                dims: vec![n],
                from,
            }))
        }
        "from_numpy" | "as_tensor" | "tensor" if args.positional.len() == 1 => {
            shape(ev, args.positional[0], locals, d + 1)
        }
        "stack" | "cat" | "concat" | "concatenate" | "vstack" | "hstack" => {
            let list = *args.positional.first()?;
            (matches!(list.kind(), "list" | "tuple")).then_some(())?;
            let parts: Option<Vec<Shape>> = super::py::children(list)
                .into_iter()
                .filter(|n| n.is_named() && n.kind() != "comment")
                .map(|n| shape(ev, n, locals, d + 1))
                .collect();
            let parts = parts?;
            let dim = match kw("dim").or(kw("axis")).or(args.positional.get(1).copied()) {
                Some(n) => int(n)?.0,
                None if name == "hstack" => 1,
                None => 0,
            };
            joined(name, &parts, dim).map(from_calls)
        }
        _ => None,
    }
}

/// Sizes given as several ints (`randn(N, F)`) or as one tuple (`(N, F)`).
fn sizes<'t>(
    ev: &Eval<'t>,
    positional: &[Node<'t>],
    keyword: Option<Node<'t>>,
    locals: &Locals,
) -> Option<Shape> {
    let one = match (positional, keyword) {
        ([one], None) => Some(*one),
        ([], Some(one)) => Some(one),
        _ => None,
    };
    let nodes: Vec<Node<'t>> = match one {
        Some(t) if matches!(t.kind(), "tuple" | "list") => super::py::children(t)
            .into_iter()
            .filter(|n| n.is_named())
            .collect(),
        Some(n) => vec![n],
        None if !positional.is_empty() && keyword.is_none() => positional.to_vec(),
        None => return None,
    };
    let mut out = Shape {
        dims: vec![],
        from: vec![],
    };
    for n in nodes {
        let Found { value, from } = ev.eval_with(n, locals)?;
        out.dims.push(match value {
            Value::Int(i) if i >= -1 => i,
            _ => return None,
        });
        out = out.with(&from);
    }
    Some(out)
}

/// `view`/`reshape` to `to` (one size may be -1).
fn reshaped(s: Shape, to: Shape) -> Option<Shape> {
    let total: i64 = s.dims.iter().product();
    Some(
        Shape {
            dims: to.dims,
            from: s.from,
        }
        .with(&to.from),
    )
    .and_then(|mut r| {
        let known: i64 = r.dims.iter().filter(|d| **d >= 0).product();
        for d in r.dims.iter_mut().filter(|d| **d < 0) {
            *d = total.checked_div(known)?;
        }
        (r.dims.iter().product::<i64>() == total).then_some(r)
    })
}

/// `stack` (a new dimension at `dim`) or `cat` (summed along `dim`).
fn joined(name: &str, parts: &[Shape], dim: i64) -> Option<Shape> {
    let first = parts.first()?;
    let rank = first.dims.len() as i64;
    let mut from = Vec::new();
    for p in parts {
        from.extend(p.from.iter().cloned());
    }
    let base = Shape {
        dims: vec![],
        from: vec![],
    }
    .with(&from);
    if name == "stack" {
        parts.iter().all(|p| p.dims == first.dims).then_some(())?;
        let i = usize::try_from(if dim < 0 { dim + rank + 1 } else { dim }).ok()?;
        let mut dims = first.dims.clone();
        (i <= dims.len()).then(|| dims.insert(i, parts.len() as i64))?;
        return Some(Shape { dims, ..base });
    }
    // vstack of 1-D tensors stacks them.
    if name == "vstack" && rank == 1 {
        return joined("stack", parts, 0);
    }
    let i = usize::try_from(if dim < 0 { dim + rank } else { dim }).ok()?;
    (i < first.dims.len()).then_some(())?;
    let mut dims = first.dims.clone();
    dims[i] = 0;
    for p in parts {
        (p.dims.len() == first.dims.len()).then_some(())?;
        for (k, (a, b)) in p.dims.iter().zip(&first.dims).enumerate() {
            (k == i || a == b).then_some(())?;
        }
        dims[i] += p.dims[i];
    }
    Some(Shape { dims, ..base })
}
