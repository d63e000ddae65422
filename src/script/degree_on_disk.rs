//! Where a dataset's edge list is on disk: the file a script loads, or a
//! profiled dataset's processed file under the root its constructor names.
//! degree_file.rs reads the degrees from it.

use std::path::Path;

use crate::profiles::DegreeHistogram;

/// The degrees of the dataset a script loads, where its files are on disk:
/// the file `torch.load`/`np.load` reads, or a profiled dataset's processed
/// file under the root its constructor is given (`Flickr(root='dataset')`:
/// `dataset/processed/*.pt`, or one folder deeper as OGB and Planetoid keep
/// them), checked against the profile's node count. None when there is
/// nothing on disk to read; an error names the file and why.
pub fn on_disk<'t>(
    ev: &super::eval::Eval<'t>,
    call: tree_sitter::Node<'t>,
    found: &super::graph::DatasetFind,
    undirected: bool,
) -> Option<Result<(DegreeHistogram, String), String>> {
    use super::graph::DatasetFind;
    use super::py::{Found, Value, call_args};
    let read =
        |path: &Path, nodes: Option<u64>| -> Option<Result<(DegreeHistogram, String), String>> {
            let arrays = super::datafile::arrays(path).ok()?;
            let g = super::datafile::graph(&arrays)?;
            if nodes.is_some_and(|n| n != g.nodes) {
                return None;
            }
            let shown = path.display().to_string();
            Some(
                super::degree_file::histogram(path, &arrays, g.nodes, undirected)
                    .map(|h| (h, shown.clone()))
                    .map_err(|e| format!("{shown}: {e}")),
            )
        };
    match found {
        DatasetFind::File(_, file, _) => read(Path::new(file), None),
        DatasetFind::Named(Found {
            value: Value::Str(name),
            ..
        }) => {
            let profile = crate::profiles::dataset(name).ok()?;
            let args = call_args(ev.src(call), call);
            let root = args
                .keywords
                .iter()
                .find(|(k, _)| k == "root")
                .map(|(_, v)| *v)
                .or(args.positional.first().copied())
                .and_then(|n| ev.eval(n))?;
            let Value::Str(root) = root.value else {
                return None;
            };
            let root = ev.cwd.join(root);
            let mut dirs = vec![root.join("processed")];
            if let Ok(entries) = std::fs::read_dir(&root) {
                let mut deeper: Vec<_> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.path().join("processed"))
                    .filter(|p| p.is_dir())
                    .collect();
                deeper.sort();
                dirs.extend(deeper);
            }
            dirs.iter().find_map(|d| {
                let mut files: Vec<_> = std::fs::read_dir(d)
                    .ok()?
                    .filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "pt"))
                    .collect();
                files.sort();
                files.iter().find_map(|f| read(f, Some(profile.nodes)))
            })
        }
        _ => None,
    }
}
