//! Embeds every YAML file under profiles/ into the binary, so
//! `headroom plan ogbn-papers100m --mem 256G` works with no files around.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut entries = Vec::new();
    for kind in ["datasets", "gpus", "jobs", "calibrations"] {
        let dir = root.join(kind);
        println!("cargo:rerun-if-changed={}", dir.display());
        let Ok(read) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = read
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        for path in files {
            println!("cargo:rerun-if-changed={}", path.display());
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            entries.push((kind, name, path));
        }
    }
    let mut out = String::from(
        "/// (kind, name, YAML text) of every embedded profile.\npub static EMBEDDED: &[(&str, &str, &str)] = &[\n",
    );
    for (kind, name, path) in entries {
        let _ = writeln!(
            out,
            "    ({kind:?}, {name:?}, include_str!({:?})),",
            path.display().to_string()
        );
    }
    out.push_str("];\n");
    let dest =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("profiles.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
