//! `plan` with its recommendation search, end to end in-process (estimate,
//! verdict, search, recommendation, and with a GPU budget the caching-allocator
//! simulation of up to 2,000 steps per candidate verified): the worst case is a
//! job that fits nowhere, so every candidate setting is estimated.
//!
//! Run: `cargo bench --bench plan_search`. Target: well under 100 ms.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use headroom::estimate::Coefficients;
use headroom::plan::plan;
use headroom::spec::{Job, load};

fn job(name: &str, mem: &str, gpu: Option<&str>) -> Job {
    let mut spec = load(name).expect("embedded profile").spec;
    spec.budget.host = Some(headroom::units::Bytes(
        headroom::units::parse_size(mem, headroom::units::BareNumber::Refuse).expect("size"),
    ));
    if let Some(g) = gpu {
        spec.budget.gpu = Some(g.to_string());
    }
    Job::from_spec(&spec).expect("valid job")
}

fn bench(c: &mut Criterion) {
    let coeffs = Coefficients::default();
    let cases = [
        ("seed-001-attempt1", "64G", None),
        ("seed-001-attempt1", "128G", None),
        ("seed-001-attempt1", "128G", Some("a40")),
        ("seed-004-gpu", "64G", Some("l40s")),
    ];
    for (name, mem, gpu) in cases {
        let j = job(name, mem, gpu);
        let searched = plan(&j, &coeffs, name, vec![]).candidates_searched;
        let gpu = gpu.map_or(String::new(), |g| format!(" --gpu {g}"));
        c.bench_function(
            &format!("plan {name} --mem {mem}{gpu} ({searched} candidates)"),
            |b| b.iter(|| plan(black_box(&j), &coeffs, name, vec![])),
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
