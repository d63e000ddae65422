//! `plan` with its recommendation search, end to end in-process (estimate,
//! verdict, search, recommendation): the worst case is a job that fits
//! nowhere, so every candidate setting is estimated.
//!
//! Run: `cargo bench --bench plan_search`. Target: well under 100 ms.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use headroom::estimate::Coefficients;
use headroom::plan::plan;
use headroom::spec::{Job, load};

fn job(name: &str, mem: &str) -> Job {
    let mut spec = load(name).expect("embedded profile").spec;
    spec.budget.host = Some(headroom::units::Bytes(
        headroom::units::parse_size(mem, headroom::units::BareNumber::Refuse).expect("size"),
    ));
    Job::from_spec(&spec).expect("valid job")
}

fn bench(c: &mut Criterion) {
    let coeffs = Coefficients::default();
    for (name, mem) in [
        ("seed-001-attempt1", "64G"),
        ("seed-001-attempt1", "128G"),
        ("seed-004-gpu", "64G"),
    ] {
        let j = job(name, mem);
        let searched = plan(&j, &coeffs, name, vec![]).candidates_searched;
        c.bench_function(
            &format!("plan {name} --mem {mem} ({searched} candidates)"),
            |b| b.iter(|| plan(black_box(&j), &coeffs, name, vec![])),
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
