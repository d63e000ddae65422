//! Reading a 2,000-line training script: parse (tree-sitter), index, argparse
//! with a command line, every NeighborLoader, the model, the dataset, and the
//! ledger of inferred and assumed fields: all of `read_python`, file read
//! included. The script is PyG's ogbn-products example style fixture followed
//! by generated helpers (functions with loops, dicts, argparse-like calls and
//! an evaluation loader each) up to 2,000 lines, so the index and the
//! evaluator see a file of that size, not a short one.
//!
//! Run: `cargo bench --bench script_read`. Target: under 50 ms.

use std::fmt::Write as _;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

fn script() -> String {
    let base = include_str!("../tests/fixtures/scripts/pyg_products/ogbn_products_sage.py");
    let mut text = base.to_string();
    let mut i = 0;
    while text.lines().count() < 2000 {
        let _ = write!(
            text,
            "\n\ndef helper_{i}(data, split_idx, cfg):\n    \"\"\"Generated helper {i}.\"\"\"\n    opts = {{'batch_size': cfg.get('bs', {bs}), 'num_workers': {w}}}\n    sizes = [int(x) for x in '10,5'.split(',')]\n    total = 0\n    for step in range({i} + 3):\n        if step % 2 == 0:\n            total += step * len(sizes)\n        else:\n            total -= 1\n    while total > 100:\n        total //= 2\n    loader_{i} = NeighborLoader(data, sizes, input_nodes=split_idx['valid'],\n                               **opts)\n    with open('/tmp/log_{i}.txt', 'w') as f:\n        f.write(str(total))\n    result = {{\n        'total': total,\n        'name': f'helper-{{total}}',\n        'items': [a * 2 for a in range(10)],\n    }}\n    return loader_{i}, result\n",
            bs = 256 + i,
            w = i % 8
        );
        i += 1;
    }
    text
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("train.py");
    let text = script();
    let lines = text.lines().count();
    std::fs::write(&path, &text).expect("the script written");
    let argv: Vec<String> = Vec::new();
    let r = headroom::script::read_python(&path, &argv, None).expect("the script read");
    assert!(r.loaders.len() > 50, "every generated loader is found");
    c.bench_function(&format!("read_python {lines}-line script"), |b| {
        b.iter(|| headroom::script::read_python(black_box(&path), &argv, None).expect("read"))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
