//! The training script and the modules of its own repository it imports
//! (`from model import GNN`, `import config as cfg`, `from .GraphSAGE import
//! GraphSAGE`, `from src.trainer import Trainer`), parsed and indexed, so a
//! model, a loader or a value defined in another file is followed there. A
//! module is looked for as `a/b.py` or `a/b/__init__.py` under the script's
//! directory, the directory the launch runs in and up to three directories
//! above the script (a repository's root); libraries (torch, PyG) are not
//! there and are not followed. At most [`MAX_MODULES`] files are read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use tree_sitter::Node;

use super::index::Index;
use super::py::{Source, children};
use crate::error::Result;

/// Files of one project read at most.
pub const MAX_MODULES: usize = 48;

/// What a name imported into a module refers to.
#[derive(Debug, Clone, PartialEq)]
pub enum Imported {
    /// A module of the project (`import config as cfg`).
    Module(usize),
    /// A name defined in a module of the project (`from model import GNN`).
    Name(usize, String),
    /// A library's name (`from torch_geometric.loader import NeighborSampler`): the dotted path.
    Library(String),
}

/// Every source of the project, parsed (owned; the indexes borrow them),
/// and the directories module names were looked for under.
pub struct Sources {
    /// Module 0 is the training script.
    pub list: Vec<Source>,
    /// Where top-level module names are looked for.
    pub roots: Vec<PathBuf>,
}

/// The modules, their indexes and what each imports.
pub struct Project<'t> {
    /// Module 0 is the training script.
    pub sources: &'t [Source],
    /// One index per source.
    pub indexes: Vec<Index<'t>>,
    /// Per module: local name → what it refers to.
    pub imports: Vec<HashMap<String, Imported>>,
    /// Per module: modules imported with `*`.
    pub stars: Vec<Vec<usize>>,
    /// Node id → module, for every node of every tree.
    owner: HashMap<usize, usize>,
}

/// Reads the script at `entry` and the project modules it imports.
pub fn load(entry: &Path, text: String, cwd: Option<&Path>) -> Result<Sources> {
    let mut sources = vec![Source::parse(entry, text)?];
    let roots = roots(entry, cwd);
    let mut i = 0;
    while i < sources.len() && sources.len() < MAX_MODULES {
        let targets: Vec<PathBuf> = import_targets(&sources[i], &roots);
        for path in targets {
            if sources.len() >= MAX_MODULES || sources.iter().any(|s| s.path == path) {
                continue;
            }
            if let Ok(text) = crate::input::read_text(&path, "a Python module", false) {
                sources.push(Source::parse(&path, text)?);
            }
        }
        i += 1;
    }
    Ok(Sources {
        list: sources,
        roots,
    })
}

/// Directories a top-level module name is looked for under.
fn roots(entry: &Path, cwd: Option<&Path>) -> Vec<PathBuf> {
    let dir = entry
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let mut out: Vec<PathBuf> = vec![dir.clone()];
    out.extend(cwd.map(Path::to_path_buf));
    out.extend(dir.ancestors().skip(1).take(3).map(Path::to_path_buf));
    out.dedup();
    out
}

/// The files of the project `src` imports (and runs with `runpy`).
fn import_targets(src: &Source, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = runpy_targets(src, roots);
    for stmt in import_nodes(src) {
        for (module, names) in statement(src, stmt) {
            let base = base_dirs(src, &module, roots);
            let dotted = module.trim_start_matches('.');
            for dir in &base {
                if let Some(p) = module_file(dir, dotted) {
                    out.push(p);
                }
                for n in &names {
                    let sub = if dotted.is_empty() {
                        n.clone()
                    } else {
                        format!("{dotted}.{n}")
                    };
                    if let Some(p) = module_file(dir, &sub) {
                        out.push(p);
                    }
                }
            }
        }
    }
    out
}

/// `runpy.run_path('train.py')` / `runpy.run_module('pkg.train')`: the file run.
fn runpy_targets(src: &Source, roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![src.tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.kind() == "call" {
            let f = n
                .child_by_field_name("function")
                .map_or("", |f| src.text_of(f));
            let arg = n
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0))
                .and_then(|a| super::eval::string_value(src, a));
            if let Some(arg) = arg {
                let dir = src
                    .path
                    .parent()
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
                if f.ends_with("run_path") {
                    out.push(dir.join(arg));
                } else if f.ends_with("run_module") {
                    out.extend(roots.iter().find_map(|r| module_file(r, &arg)));
                }
            }
        }
        stack.extend(children(n));
    }
    out.retain(|p| p.is_file());
    out
}

/// `a.b` under `dir` as `a/b.py` or `a/b/__init__.py`.
fn module_file(dir: &Path, dotted: &str) -> Option<PathBuf> {
    if dotted.is_empty() {
        let init = dir.join("__init__.py");
        return init.is_file().then_some(init);
    }
    let rel = dotted.replace('.', "/");
    [
        dir.join(format!("{rel}.py")),
        dir.join(&rel).join("__init__.py"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// Where a module name starts: the package of `src` for `.x`, else the roots.
fn base_dirs(src: &Source, module: &str, roots: &[PathBuf]) -> Vec<PathBuf> {
    let dots = module.chars().take_while(|c| *c == '.').count();
    if dots == 0 {
        return roots.to_vec();
    }
    let dir = src
        .path
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    dir.ancestors()
        .nth(dots - 1)
        .map(Path::to_path_buf)
        .into_iter()
        .collect()
}

/// Every import statement of `src`, anywhere in it.
fn import_nodes(src: &Source) -> Vec<Node<'_>> {
    let mut out = Vec::new();
    let mut stack = vec![src.tree.root_node()];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "import_statement" | "import_from_statement" => out.push(n),
            _ => stack.extend(children(n)),
        }
    }
    out
}

/// (module, imported names) of one statement; `import a.b as c` gives ("a.b", []).
fn statement(src: &Source, stmt: Node) -> Vec<(String, Vec<String>)> {
    let name_of = |n: Node| -> String {
        let n = if n.kind() == "aliased_import" {
            n.child_by_field_name("name").unwrap_or(n)
        } else {
            n
        };
        src.text_of(n).to_string()
    };
    if stmt.kind() == "import_statement" {
        return children(stmt)
            .into_iter()
            .map(|n| (name_of(n), vec![]))
            .collect();
    }
    let module = stmt
        .child_by_field_name("module_name")
        .map_or(String::new(), |m| src.text_of(m).replace(' ', ""));
    let mut cursor = stmt.walk();
    let names = stmt
        .children_by_field_name("name", &mut cursor)
        .map(name_of)
        .collect();
    vec![(module, names)]
}

impl<'t> Project<'t> {
    /// Indexes the sources and links their imports.
    pub fn new(all: &'t Sources) -> Project<'t> {
        let sources = &all.list[..];
        let indexes: Vec<Index<'t>> = sources.iter().map(Index::build).collect();
        let mut owner = HashMap::new();
        for (m, s) in sources.iter().enumerate() {
            let mut stack = vec![s.tree.root_node()];
            while let Some(n) = stack.pop() {
                owner.insert(n.id(), m);
                let mut c = n.walk();
                stack.extend(n.children(&mut c));
            }
        }
        let mut p = Project {
            sources,
            indexes,
            imports: vec![HashMap::new(); sources.len()],
            stars: vec![Vec::new(); sources.len()],
            owner,
        };
        for m in 0..sources.len() {
            p.link(m, &all.roots);
        }
        p
    }

    /// The module `node` is in (0 when unknown).
    pub fn module_of(&self, node: Node) -> usize {
        self.owner.get(&node.id()).copied().unwrap_or(0)
    }

    /// The module whose file is `path`.
    fn by_path(&self, path: &Path) -> Option<usize> {
        self.sources.iter().position(|s| s.path == path)
    }

    fn link(&mut self, m: usize, roots: &[PathBuf]) {
        let src = &self.sources[m];
        for stmt in import_nodes(src) {
            let from = stmt.kind() == "import_from_statement";
            for (module, _) in statement(src, stmt) {
                let dotted = module.trim_start_matches('.').to_string();
                let found = base_dirs(src, &module, roots)
                    .iter()
                    .find_map(|d| module_file(d, &dotted))
                    .and_then(|p| self.by_path(&p));
                if !from {
                    for n in children(stmt) {
                        let (name, alias) = aliased(src, n);
                        let target = match found {
                            Some(i) => Imported::Module(i),
                            None => Imported::Library(name.clone()),
                        };
                        self.imports[m].insert(alias.unwrap_or(name), target);
                    }
                    continue;
                }
                let mut cursor = stmt.walk();
                let names: Vec<Node> = stmt.children_by_field_name("name", &mut cursor).collect();
                if children(stmt).iter().any(|c| c.kind() == "wildcard_import") {
                    self.stars[m].extend(found);
                }
                for n in names {
                    let (name, alias) = aliased(src, n);
                    let sub = base_dirs(src, &module, roots).iter().find_map(|d| {
                        let s = if dotted.is_empty() {
                            name.clone()
                        } else {
                            format!("{dotted}.{name}")
                        };
                        module_file(d, &s)
                    });
                    let target = match (sub.and_then(|p| self.by_path(&p)), found) {
                        (Some(i), _) => Imported::Module(i),
                        (None, Some(i)) => Imported::Name(i, name.clone()),
                        (None, None) => Imported::Library(format!("{dotted}.{name}")),
                    };
                    self.imports[m].insert(alias.unwrap_or(name), target);
                }
            }
        }
    }
}

/// (name, alias) of an import's name node.
fn aliased(src: &Source, n: Node) -> (String, Option<String>) {
    if n.kind() == "aliased_import" {
        let name = n.child_by_field_name("name").map_or("", |x| src.text_of(x));
        let alias = n
            .child_by_field_name("alias")
            .map(|x| src.text_of(x).to_string());
        return (name.to_string(), alias);
    }
    (src.text_of(n).to_string(), None)
}
