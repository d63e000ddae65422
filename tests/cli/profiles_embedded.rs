//! The binary knows every dataset profile of the checkout it was built
//! from, and the build script refuses a manifest directory without
//! profiles (build.rs reads `profiles/` from the directory cargo runs it
//! with, and stops when it finds none).

use std::path::{Path, PathBuf};

use crate::util::headroom;

#[test]
fn the_binary_lists_every_dataset_profile_of_the_checkout() {
    let out = headroom()
        .args(["profiles", "--kind", "datasets"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/datasets");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            (p.extension()? == "yaml").then(|| p.file_stem().unwrap().to_string_lossy().to_string())
        })
        .collect();
    names.sort();
    assert!(names.len() >= 30, "{} dataset profiles", names.len());
    for n in &names {
        assert!(
            listed
                .lines()
                .any(|l| l.split_whitespace().next() == Some(n.as_str())),
            "{n} is not embedded:\n{listed}"
        );
    }
}

/// The compiled build script of this crate, beside the test binary.
fn build_script() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?; // target/<profile>/deps/cli-* → target/<profile>
    std::fs::read_dir(profile_dir.join("build"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("headroom-"))
        })
        .map(|p| p.join("build-script-build"))
        .find(|p| p.is_file())
}

#[test]
fn the_build_script_stops_when_it_finds_no_profile() {
    let Some(script) = build_script() else {
        eprintln!("skipped: no compiled build script next to the test binary");
        return;
    };
    let empty = tempfile::tempdir().unwrap();
    let out_dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(&script)
        .env("CARGO_MANIFEST_DIR", empty.path())
        .env("OUT_DIR", out_dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no datasets profile"), "{err}");
    assert!(!out_dir.path().join("profiles.rs").exists());
    // With this checkout's profiles it writes the table of every one.
    let out = std::process::Command::new(&script)
        .env("CARGO_MANIFEST_DIR", env!("CARGO_MANIFEST_DIR"))
        .env("OUT_DIR", out_dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = std::fs::read_to_string(out_dir.path().join("profiles.rs")).unwrap();
    assert!(table.contains("\"ogbn-proteins\"") && table.contains("\"dgraphfin\""));
}

/// Every node-level dataset of at least 10,000 nodes that PyG 2.8.0 gives
/// figures for (its dataset cheatsheet's STATS tables, or a class
/// docstring's counts where the table is missing) and OGB's node property
/// prediction list, spelled as the class and OGB spell them, or as the
/// script reader spells a class given a name (`Entities(root, 'AM')` is
/// `entities-AM`, `CitationFull(root, 'DBLP')` is `citationfull-DBLP`):
/// (spelling, profile, nodes, edges as stored, features, classes).
#[rustfmt::skip]
const NODE_LEVEL: &[(&str, &str, u64, u64, u64, u64)] = &[
    ("amazon-Computers", "amazon-computers", 13_752, 491_722, 767, 10),
    ("AmazonProducts", "amazonproducts", 1_569_960, 264_339_468, 200, 107),
    ("attributed-PubMed", "attributed-pubmed", 19_717, 44_338, 500, 3),
    ("attributed-PPI", "attributed-ppi", 56_944, 1_612_348, 50, 121),
    ("attributed-TWeibo", "attributed-tweibo", 2_320_895, 9_840_066, 1_657, 8),
    ("attributed-MAG", "attributed-mag", 59_249_719, 978_147_253, 2_000, 100),
    ("citationfull-Cora", "citationfull-cora", 19_793, 126_842, 8_710, 70),
    ("CoraFull", "citationfull-cora", 19_793, 126_842, 8_710, 70),
    ("citationfull-DBLP", "citationfull-dblp", 17_716, 105_734, 1_639, 4),
    ("citationfull-PubMed", "citationfull-pubmed", 19_717, 88_648, 500, 3),
    ("city-paris", "city-paris", 114_127, 182_511, 37, 10),
    ("city-shanghai", "city-shanghai", 183_917, 262_092, 37, 10),
    ("city-la", "city-la", 240_587, 341_523, 37, 10),
    ("city-london", "city-london", 568_795, 756_502, 37, 10),
    ("coauthor-CS", "coauthor-cs", 18_333, 163_788, 6_805, 15),
    ("coauthor-Physics", "coauthor-physics", 34_493, 495_924, 8_415, 5),
    ("DeezerEurope", "deezer-europe", 28_281, 185_504, 128, 2),
    ("DGraphFin", "dgraphfin", 3_700_550, 4_300_999, 17, 2),
    ("EllipticBitcoinDataset", "elliptic", 203_769, 234_355, 165, 2),
    ("EllipticBitcoinTemporalDataset", "elliptic", 203_769, 234_355, 165, 2),
    ("entities-AM", "entities-am", 1_666_764, 11_976_642, 0, 11),
    ("entities-MUTAG", "entities-mutag", 23_644, 148_454, 0, 2),
    ("entities-BGS", "entities-bgs", 333_845, 1_832_398, 0, 2),
    ("FacebookPagePage", "facebookpagepage", 22_470, 342_004, 128, 4),
    ("Flickr", "flickr", 89_250, 899_756, 500, 7),
    ("GitHub", "github", 37_700, 578_006, 128, 2),
    ("Roman-empire", "roman-empire", 22_662, 32_927, 300, 18),
    ("Amazon-ratings", "amazon-ratings", 24_492, 93_050, 300, 5),
    ("Minesweeper", "minesweeper", 10_000, 39_402, 7, 2),
    ("Tolokers", "tolokers", 11_758, 519_000, 10, 2),
    ("Questions", "questions", 48_921, 153_540, 301, 2),
    ("NELL", "nell", 65_755, 251_550, 61_278, 186),
    ("PubMed", "pubmed", 19_717, 88_648, 500, 3),
    ("Reddit", "reddit", 232_965, 114_615_892, 602, 41),
    ("Reddit2", "reddit2", 232_965, 23_213_838, 602, 41),
    ("WikiCS", "wikics", 11_701, 431_726, 300, 10),
    ("Yelp", "yelp", 716_847, 13_954_819, 300, 100),
    ("ogbn-arxiv", "ogbn-arxiv", 169_343, 1_166_243, 128, 40),
    ("ogbn-products", "ogbn-products", 2_449_029, 123_718_280, 100, 47),
    ("ogbn-proteins", "ogbn-proteins", 132_534, 79_122_504, 8, 112),
    ("ogbn-mag", "ogbn-mag", 1_939_743, 21_111_007, 128, 349),
    ("ogbn-papers100M", "ogbn-papers100m", 111_059_956, 1_615_685_872, 128, 172),
];

#[test]
fn every_node_level_dataset_of_pyg_and_ogb_resolves_to_its_figures() {
    for &(spelling, name, nodes, edges, features, classes) in NODE_LEVEL {
        let d = headroom::profiles::dataset(spelling)
            .unwrap_or_else(|e| panic!("{spelling} does not resolve: {e}"));
        assert_eq!(d.name, name, "{spelling}");
        assert_eq!(
            (d.nodes, d.edges, d.features, d.classes),
            (nodes, edges, features, classes),
            "{spelling}: nodes, edges, features, classes"
        );
        d.validate().unwrap();
    }
    // Every profile named there is listed by the binary too.
    let out = headroom()
        .args(["profiles", "--kind", "datasets"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).to_string();
    for &(_, name, ..) in NODE_LEVEL {
        assert!(
            listed
                .lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "{name} is not listed:\n{listed}"
        );
    }
}
