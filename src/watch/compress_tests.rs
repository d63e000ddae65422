//! The compressor over made-up runs whose every peak and event is known.

use super::*;

fn s(t_s: f64, pss: u64, processes: u32) -> Sample {
    Sample {
        t_s,
        pss_sum_bytes: pss,
        processes,
        ..Sample::default()
    }
}

fn run(c: &mut Compressor, samples: Vec<(Sample, bool)>) -> Vec<Sample> {
    let mut rows = Vec::new();
    for (x, ev) in samples {
        rows.extend(c.push(x, ev));
    }
    rows.extend(c.take_pending());
    rows
}

#[test]
fn flat_stretches_become_interval_rows_with_exact_peaks() {
    let mut c = Compressor::new(10.0, 10.0);
    // 100 s at 10 Hz: flat at 1000 with a one-sample blip of 1005 (under
    // the 1% peak step) at t = 55.3.
    let samples = (0..1000)
        .map(|i| {
            let t = i as f64 / 10.0;
            let v = if i == 553 { 1005 } else { 1000 };
            (s(t, v, 3), false)
        })
        .collect();
    let rows = run(&mut c, samples);
    // 100 full rows for the first 10 s, then about 9 interval rows.
    let full = rows.iter().filter(|r| r.span_s == 0.0).count();
    assert_eq!(full, 100);
    assert!((9..=11).contains(&(rows.len() - full)), "{}", rows.len());
    let blip = rows
        .iter()
        .find(|r| r.t_s <= 55.3 && 55.3 <= r.t_s + r.span_s);
    assert_eq!(blip.map(|r| r.pss_sum_bytes), Some(1005));
    assert!(rows.windows(2).all(|w| w[0].t_s < w[1].t_s));
}

#[test]
fn an_event_brings_back_full_resolution_before_and_after() {
    let mut c = Compressor::new(0.0, 10.0);
    // Workers appear at t = 30.0 (3 -> 5 processes).
    let samples = (0..600)
        .map(|i| {
            let t = i as f64 / 10.0;
            (s(t, 1000, if t < 30.0 { 3 } else { 5 }), false)
        })
        .collect();
    let rows = run(&mut c, samples);
    let single: Vec<f64> = rows
        .iter()
        .filter(|r| r.span_s == 0.0 && r.t_s > 20.0)
        .map(|r| r.t_s)
        .collect();
    // 50 samples before (25.0..29.9) and 5 s after (30.0..=35.0).
    assert!(single.len() >= 100, "{}", single.len());
    assert!(single.first().is_some_and(|&t| t <= 25.0 + 1e-9));
    assert!(single.last().is_some_and(|&t| (35.0..35.2).contains(&t)));
    assert!(rows.len() < 200, "{}", rows.len());
}

#[test]
fn a_slow_leak_keeps_its_new_peaks_at_full_resolution() {
    let mut c = Compressor::new(0.0, 10.0);
    // Doubling from 1 GiB over an hour at 10 Hz: ~70 rows for the peaks
    // (1% steps) plus 360 interval rows, out of 36,000 samples.
    let samples = (0..36_000)
        .map(|i| {
            let v = (1u64 << 30) + (i as u64) * ((1u64 << 30) / 36_000);
            (s(i as f64 / 10.0, v, 1), false)
        })
        .collect();
    let rows = run(&mut c, samples);
    let peaks = rows.iter().filter(|r| r.span_s == 0.0).count();
    assert!((60..=80).contains(&peaks), "{peaks}");
    assert!(rows.len() < 1000, "{}", rows.len());
    assert_eq!(
        rows.iter().map(|r| r.pss_sum_bytes).max(),
        Some((1u64 << 30) + 35_999 * ((1u64 << 30) / 36_000))
    );
}
