//! Embeds every YAML file under profiles/ into the binary, so
//! `headroom plan ogbn-papers100m --mem 256G` works with no files around.
//! The directory is the manifest directory cargo runs this build script
//! with (`CARGO_MANIFEST_DIR` read at run time, not baked in when the build
//! script itself was compiled: two checkouts sharing a target directory
//! would otherwise embed whichever checkout compiled it first, or nothing
//! once it is gone). A build that finds no dataset or GPU profile stops.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let Some(manifest) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        fail("CARGO_MANIFEST_DIR is not set: run the build through cargo");
    };
    let root = PathBuf::from(manifest).join("profiles");
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
    for kind in ["datasets", "gpus"] {
        if !entries.iter().any(|(k, _, _)| *k == kind) {
            fail(&format!(
                "no {kind} profile under {}: headroom would know no {kind}",
                root.display()
            ));
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
    let Some(out_dir) = std::env::var_os("OUT_DIR") else {
        fail("OUT_DIR is not set: run the build through cargo");
    };
    let dest = Path::new(&out_dir).join("profiles.rs");
    if let Err(e) = std::fs::write(&dest, out) {
        fail(&format!("cannot write {}: {e}", dest.display()));
    }
}

/// Stops the build with `why` (cargo shows it as the build script's error).
fn fail(why: &str) -> ! {
    eprintln!("error: {why}");
    std::process::exit(1);
}
