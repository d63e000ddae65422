//! A parsed Python file and the values the reader computes from it.
//!
//! The parser is tree-sitter with its Python grammar (crates `tree-sitter`
//! and `tree-sitter-python`, maintained by the tree-sitter organisation and
//! used by editors and GitHub's code navigation). It was chosen over
//! `rustpython-parser` (no longer maintained: RustPython itself replaced it
//! with Ruff's parser, RustPython/RustPython#5299 and #5618, and its
//! repository's README says so) and over `ruff_python_parser` (published as
//! 0.0.x, "an internal component crate of Ruff": no stable API). tree-sitter
//! compiles one large generated C file once (then cached) and never
//! fails: a script with a syntax error still yields a tree with ERROR nodes,
//! so the reader can say what it read and what it could not.

use std::path::{Path, PathBuf};

use tree_sitter::{Node, Parser, Tree};

use crate::error::{Error, Result};

/// One Python file, parsed.
pub struct Source {
    /// Where it was read from.
    pub path: PathBuf,
    /// The file name used in `file:line` references.
    pub label: String,
    /// Its text.
    pub text: String,
    /// Its syntax tree.
    pub tree: Tree,
}

impl Source {
    /// Parses `text` read from `path`.
    pub fn parse(path: &Path, text: String) -> Result<Source> {
        let mut parser = Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .map_err(|e| Error::Internal(format!("the Python grammar: {e}")))?;
        let tree = parser
            .parse(&text, None)
            .ok_or_else(|| Error::Internal("the Python parser gave no tree".into()))?;
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        Ok(Source {
            path: path.to_path_buf(),
            label,
            text,
            tree,
        })
    }

    /// The source text of `node`.
    pub fn text_of(&self, node: Node) -> &str {
        self.text.get(node.byte_range()).unwrap_or("")
    }

    /// `train.py:42` for `node`.
    pub fn at(&self, node: Node) -> String {
        format!("{}:{}", self.label, node.start_position().row + 1)
    }
}

/// A Python value the reader could compute.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An int.
    Int(i64),
    /// A float.
    Float(f64),
    /// A str.
    Str(String),
    /// A bool.
    Bool(bool),
    /// None.
    None,
    /// A list or tuple.
    List(Vec<Value>),
    /// A dict with str keys, in order.
    Dict(Vec<(String, Value)>),
}

impl Value {
    /// The value as an int (a float with no fraction, or a numeric string, too).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e15 => Some(*f as i64),
            Value::Bool(b) => Some(i64::from(*b)),
            Value::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// The value as a float.
    pub fn as_float(&self) -> Option<f64> {
        match self {
            Value::Float(f) => Some(*f),
            Value::Int(i) => Some(*i as f64),
            Value::Str(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Python truthiness, for the values where it is certain.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::None => false,
            Value::List(v) => !v.is_empty(),
            Value::Dict(v) => !v.is_empty(),
        }
    }

    /// `[15, 10]`, `"15,10"` or `15` as a list of ints.
    pub fn as_int_list(&self) -> Option<Vec<i64>> {
        match self {
            Value::List(items) => items.iter().map(Value::as_int).collect(),
            Value::Str(s) => s
                .split(|c: char| c == ',' || c.is_whitespace() || c == '[' || c == ']')
                .filter(|p| !p.is_empty())
                .map(|p| p.parse().ok())
                .collect(),
            other => other.as_int().map(|i| vec![i]),
        }
    }

    /// A dict's entry.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Dict(d) => d.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value as JSON, for the report.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Int(i) => (*i).into(),
            Value::Float(f) => {
                serde_json::Number::from_f64(*f).map_or(serde_json::Value::Null, Into::into)
            }
            Value::Str(s) => s.clone().into(),
            Value::Bool(b) => (*b).into(),
            Value::None => serde_json::Value::Null,
            Value::List(v) => v.iter().map(Value::to_json).collect(),
            Value::Dict(d) => d.iter().map(|(k, v)| (k.clone(), v.to_json())).collect(),
        }
    }

    /// A value read from a YAML or JSON config file (through `crate::yaml`,
    /// whose limits apply, into serde_json's value).
    pub fn from_yaml(v: &serde_json::Value) -> Value {
        use serde_json::Value as Y;
        match v {
            Y::Null => Value::None,
            Y::Bool(b) => Value::Bool(*b),
            Y::Number(n) => n
                .as_i64()
                .map(Value::Int)
                .or_else(|| n.as_f64().map(Value::Float))
                .unwrap_or(Value::None),
            Y::String(s) => Value::Str(s.clone()),
            Y::Array(s) => Value::List(s.iter().map(Value::from_yaml).collect()),
            Y::Object(m) => Value::Dict(
                m.iter()
                    .map(|(k, v)| (k.clone(), Value::from_yaml(v)))
                    .collect(),
            ),
        }
    }
}

/// A computed value and the places that decided it (`train.py:40`,
/// `train.sbatch:12`, `config.yaml:3`).
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The value.
    pub value: Value,
    /// Where it came from, most decisive first.
    pub from: Vec<String>,
}

impl Found {
    /// A value from one place.
    pub fn at(value: Value, from: impl Into<String>) -> Found {
        Found {
            value,
            from: vec![from.into()],
        }
    }

    /// `value`, decided by the places of all `parts`.
    pub fn joined(value: Value, parts: &[&Found]) -> Found {
        let mut from: Vec<String> = Vec::new();
        for p in parts {
            for f in &p.from {
                if !from.contains(f) {
                    from.push(f.clone());
                }
            }
        }
        Found { value, from }
    }

    /// The places as one string.
    pub fn origin(&self) -> String {
        self.from.join(", ")
    }
}

/// The named children of `node`.
pub fn children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The last segment of a called name: `torch_geometric.loader.NeighborLoader` → `NeighborLoader`.
pub fn callee_name<'a>(src: &'a Source, call: Node) -> &'a str {
    let f = call
        .child_by_field_name("function")
        .map_or("", |f| src.text_of(f));
    f.rsplit('.').next().unwrap_or(f).trim()
}

/// A call's arguments, as written.
pub struct CallArgs<'t> {
    /// Positional arguments in order.
    pub positional: Vec<Node<'t>>,
    /// `name=value` arguments in order.
    pub keywords: Vec<(String, Node<'t>)>,
    /// The expressions of `**kwargs` arguments.
    pub splats: Vec<Node<'t>>,
}

/// The arguments of `call`.
pub fn call_args<'t>(src: &Source, call: Node<'t>) -> CallArgs<'t> {
    let mut out = CallArgs {
        positional: Vec::new(),
        keywords: Vec::new(),
        splats: Vec::new(),
    };
    let Some(args) = call.child_by_field_name("arguments") else {
        return out;
    };
    for a in children(args) {
        match a.kind() {
            "keyword_argument" => {
                if let (Some(n), Some(v)) = (
                    a.child_by_field_name("name"),
                    a.child_by_field_name("value"),
                ) {
                    out.keywords.push((src.text_of(n).to_string(), v));
                }
            }
            "dictionary_splat" => out.splats.extend(a.named_child(0)),
            "comment" | "list_splat" => {}
            _ => out.positional.push(a),
        }
    }
    out
}
