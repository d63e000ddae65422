//! The dataset a call loads, as PyG and OGB spell it: OGB's
//! `PygNodePropPredDataset(name=...)` (and its NodePropPred siblings),
//! PyG's classes with a name argument (`Planetoid(root, 'PubMed')`,
//! `Coauthor(root, 'CS')`, `Amazon`, `CitationFull`, `CityNetwork`,
//! `AttributedGraphDataset`, `HeterophilousGraphDataset`, `Entities`), a
//! class called like a profile (`Reddit`, `Flickr`, `WikiCS`, `GitHub`,
//! `AmazonProducts`, a repository's own `DGraphFin`), `getattr(torch_geometric.datasets, name)(...)`, and a
//! `np.load`/`torch.load` of a file that is there (datafile.rs; one that
//! is not is opaque, with its line). Names are matched whatever their case
//! and separators (`ogbn-papers100M`, `ogbn_papers100m`).

use std::path::PathBuf;

use tree_sitter::Node;

use super::eval::Eval;
use super::graph::DatasetFind;
use super::project::Imported;
use super::py::{Found, Value, call_args, callee_name};

/// The dataset `call` loads, if it loads one.
pub fn dataset<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<DatasetFind> {
    let f = call.child_by_field_name("function")?;
    // `cls = EllipticBitcoinDataset` ... `cls(root)`: the class bound to the
    // name called, named at the binding's line too.
    let alias = (f.kind() == "identifier")
        .then(|| super::class_alias::resolve(ev, f))
        .flatten();
    let Some((class, lines)) = alias else {
        return dataset_of(ev, call, f);
    };
    match dataset_of(ev, call, class)? {
        DatasetFind::Named(mut found) => {
            for l in lines {
                if !found.from.contains(&l) {
                    found.from.push(l);
                }
            }
            Some(DatasetFind::Named(found))
        }
        other => Some(other),
    }
}

/// The dataset `call` loads, the class it calls being `f` (the call's own
/// function, or the class a name called was bound to).
fn dataset_of<'t>(ev: &Eval<'t>, call: Node<'t>, f: Node<'t>) -> Option<DatasetFind> {
    let src = ev.src(call);
    let ftext = ev.text(f);
    let name = if f == call.child_by_field_name("function")? {
        callee_name(src, call)
    } else {
        ftext.rsplit('.').next().unwrap_or(ftext)
    };
    let args = call_args(src, call);
    let kw = |k: &str| args.keywords.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    let at = src.at(call);
    let named = |prefix: &str, node: Option<Node<'t>>| -> Option<DatasetFind> {
        let Some(n) = node else {
            return Some(DatasetFind::Opaque(src.text_of(call).into(), at.clone()));
        };
        Some(match ev.eval(n) {
            Some(Found {
                value: Value::Str(s),
                from,
            }) => {
                let value = Value::Str(format!("{prefix}{s}"));
                let mut from = from;
                if !from.contains(&at) {
                    from.push(at.clone());
                }
                DatasetFind::Named(Found { value, from })
            }
            Some(other) => DatasetFind::Named(Found::joined(
                other.value.clone(),
                &[&other, &Found::at(Value::None, at.clone())],
            )),
            None => DatasetFind::Opaque(src.text_of(call).into(), at.clone()),
        })
    };
    match name {
        "PygNodePropPredDataset" | "NodePropPredDataset" | "DglNodePropPredDataset" => {
            return named("", kw("name").or(args.positional.first().copied()));
        }
        "Planetoid" | "HeterophilousGraphDataset" => {
            return named("", kw("name").or(args.positional.get(1).copied()));
        }
        "CitationFull" => {
            return named(
                "citationfull-",
                kw("name").or(args.positional.get(1).copied()),
            );
        }
        "Coauthor" => return named("coauthor-", kw("name").or(args.positional.get(1).copied())),
        "Amazon" => return named("amazon-", kw("name").or(args.positional.get(1).copied())),
        "CityNetwork" => return named("city-", kw("name").or(args.positional.get(1).copied())),
        // A generic class name: PyG's only when it is given a name to load.
        "Entities" if kw("name").or(args.positional.get(1).copied()).is_some() => {
            return named("entities-", kw("name").or(args.positional.get(1).copied()));
        }
        "AttributedGraphDataset" => {
            return named(
                "attributed-",
                kw("name").or(args.positional.get(1).copied()),
            );
        }
        "MAG240MDataset" => {
            return Some(DatasetFind::Named(Found::at(
                Value::Str("mag240m".into()),
                at,
            )));
        }
        "OGB_MAG" => {
            return Some(DatasetFind::Named(Found::at(
                Value::Str("ogbn-mag".into()),
                at,
            )));
        }
        // A checkpoint handed straight to `load_state_dict(torch.load(path))`
        // is a model's weights, not the graph.
        "load" if matches!(ftext, "torch.load" | "np.load" | "numpy.load") => {
            if feeds_load_state_dict(src, call) {
                return None;
            }
            return file(ev, call, &args.positional);
        }
        _ => {}
    }
    // getattr(torch_geometric.datasets, name)(root): the class by name,
    // also through `cls = getattr(...)` then `cls(root)`.
    let getattr = match f.kind() {
        "call" => Some(f),
        "identifier" => ev
            .index_of(f)
            .assignment_at(ftext, f)
            .map(|a| a.value)
            .filter(|v| v.kind() == "call"),
        _ => None,
    };
    if let Some(g) = getattr
        && callee_name(ev.src(g), g) == "getattr"
    {
        let inner = call_args(ev.src(g), g);
        if inner
            .positional
            .first()
            .is_some_and(|m| ev.text(*m).contains("datasets"))
        {
            return named("", inner.positional.get(1).copied());
        }
    }
    // A loading helper given the dataset's name: `load_dataset(args.dataset)`.
    let lname = name.to_ascii_lowercase();
    if (lname.contains("dataset")
        || lname.starts_with("load_data")
        || lname.starts_with("get_data"))
        && !lname.ends_with("loader")
    {
        let node = kw("name")
            .or(kw("dataset"))
            .or(kw("dataset_name"))
            .or(args.positional.first().copied());
        if let Some(Found {
            value: Value::Str(s),
            from,
        }) = node.and_then(|n| ev.eval(n))
            && let Ok(p) = crate::profiles::dataset(&s)
        {
            let mut from = from;
            from.push(at.clone());
            let _ = p;
            return Some(DatasetFind::Named(Found {
                value: Value::Str(s),
                from,
            }));
        }
    }
    // A class called like a profile: PyG's own (also imported under another
    // name: `from torch_geometric.datasets import Reddit as PyGReddit`), or
    // the repository's of that name, unless that one is a Lightning data
    // module (it builds the dataset inside, where it is read).
    let mut class = name.to_string();
    let from_pyg = match f.kind() {
        "identifier" => match ev.imported(f) {
            Some(Imported::Library(p)) => {
                class = p.rsplit('.').next().unwrap_or(name).to_string();
                p.contains("datasets")
            }
            Some(Imported::Name(..)) => true,
            _ => ev
                .class_named(ev.project.module_of(call), name)
                .is_some_and(|c| !data_module(ev, c)),
        },
        _ => ftext.contains("datasets."),
    };
    let profile = crate::profiles::dataset(&class).ok()?;
    from_pyg.then(|| DatasetFind::Named(Found::at(Value::Str(profile.name), at)))
}

/// Whether `class` is a Lightning data module (`class Reddit(LightningDataModule)`).
fn data_module(ev: &Eval, class: Node) -> bool {
    class
        .child_by_field_name("superclasses")
        .is_some_and(|s| ev.text(s).contains("DataModule"))
}

/// Whether `call` is an argument of a `load_state_dict(...)` call.
fn feeds_load_state_dict(src: &super::py::Source, call: Node) -> bool {
    call.parent()
        .filter(|p| p.kind() == "argument_list")
        .and_then(|p| p.parent())
        .is_some_and(|outer| outer.kind() == "call" && callee_name(src, outer) == "load_state_dict")
}

/// `np.load(path)` / `torch.load(path)`: the graph in the file when it is
/// there, else the call as written.
fn file<'t>(ev: &Eval<'t>, call: Node<'t>, positional: &[Node<'t>]) -> Option<DatasetFind> {
    let src = ev.src(call);
    let opaque = || Some(DatasetFind::Opaque(src.text_of(call).into(), src.at(call)));
    let Some(Found {
        value: Value::Str(rel),
        ..
    }) = positional.first().and_then(|n| ev.eval(*n))
    else {
        return opaque();
    };
    let script_dir = src
        .path
        .parent()
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let path = [ev.cwd.join(&rel), script_dir.join(&rel)]
        .into_iter()
        .find(|p| p.is_file());
    let Some(path) = path else { return opaque() };
    let graph = super::datafile::arrays(&path)
        .ok()
        .and_then(|a| super::datafile::graph(&a));
    match graph {
        Some(g) => Some(DatasetFind::File(
            g,
            path.display().to_string(),
            src.at(call),
        )),
        None => opaque(),
    }
}
