//! A graph kept in a database that PyG reads through its remote-backend
//! interface, rather than a dataset object: Kùzu's `kuzu.Database(path,
//! buffer_pool_size)` with `db.get_torch_geometric_remote_backend(...)`
//! (PyG's `examples/distributed/kuzu`). The database's directory is named
//! after the dataset it was loaded from (`papers100M`), so the dataset is
//! read from the path, whatever its case and separators; the buffer pool
//! size is kept so that the plan can say what it assumed about it.

use tree_sitter::Node;

use super::eval::Eval;
use super::project::Imported;
use super::py::{Found, Value, call_args, callee_name};

/// A graph database the script opens.
#[derive(Debug, Clone)]
pub struct GraphDatabase {
    /// Where it is opened (`train.py:42`).
    pub at: String,
    /// Its buffer pool in bytes, when the call gives it and it can be computed.
    pub buffer_pool: Option<u64>,
}

/// `kuzu.Database(path, ...)` (or `Database` imported from kuzu): the
/// dataset its directory names, and the database itself.
pub fn database<'t>(ev: &Eval<'t>, call: Node<'t>) -> Option<(Option<Found>, GraphDatabase)> {
    let src = ev.src(call);
    if callee_name(src, call) != "Database" {
        return None;
    }
    let f = call.child_by_field_name("function")?;
    let kuzu = match f.kind() {
        "attribute" => src.text_of(f) == "kuzu.Database",
        "identifier" => {
            matches!(ev.imported(f), Some(Imported::Library(p)) if p.starts_with("kuzu"))
        }
        _ => false,
    };
    if !kuzu {
        return None;
    }
    let args = call_args(src, call);
    let kw = |k: &str| args.keywords.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
    let at = src.at(call);
    let buffer_pool = kw("buffer_pool_size")
        .or(args.positional.get(1).copied())
        .and_then(|n| ev.eval(n))
        .and_then(|v| v.value.as_int())
        .and_then(|b| u64::try_from(b).ok())
        .filter(|b| *b > 0);
    let named = kw("database_path")
        .or(args.positional.first().copied())
        .and_then(|p| named_in_path(ev, p, &at));
    Some((named, GraphDatabase { at, buffer_pool }))
}

/// The dataset profile a path expression names: the last component of any
/// string in it (`osp.join('.', 'papers100M')`) that matches a profile,
/// also with OGB's `-bin` download suffix taken off.
fn named_in_path<'t>(ev: &Eval<'t>, path: Node<'t>, at: &str) -> Option<Found> {
    let mut strings = Vec::new();
    collect_strings(ev, path, &mut strings);
    strings.iter().rev().find_map(|s| {
        s.rsplit(['/', '\\']).find(|c| !c.is_empty()).and_then(|c| {
            let c = c.strip_suffix("-bin").unwrap_or(c);
            let p = crate::profiles::dataset(c).ok()?;
            Some(Found::at(Value::Str(p.name), at.to_string()))
        })
    })
}

/// The computable strings inside `node`: itself, or the arguments of the
/// path calls around them.
fn collect_strings<'t>(ev: &Eval<'t>, node: Node<'t>, out: &mut Vec<String>) {
    if let Some(Found {
        value: Value::Str(s),
        ..
    }) = ev.eval(node)
    {
        out.push(s);
        return;
    }
    let mut cursor = node.walk();
    for child in node.named_children(&mut cursor) {
        collect_strings(ev, child, out);
    }
}
