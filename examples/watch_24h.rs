//! Measures what a day-long `watch` costs on disk and in headroom's own
//! memory: 24 hours at 10 Hz (864,000 samples) of a made-up but shaped
//! training job (16 persistent training workers, an evaluation cohort of 4
//! every 20 minutes, a slow leak, a one-sample spike per hour, the cgroup
//! near its limit so alerts fire) through the same recorder `watch` uses:
//! compression, timeline file, peaks, alerts, the plot's bounded samples.
//!
//!     cargo run --release --example watch_24h [HOURS=24] [OUT=/tmp/headroom-24h.csv]
//!
//! Prints the file size and this process's RSS (VmRSS, VmHWM) every 2
//! simulated hours.

use headroom::watch::compress::Compressor;
use headroom::watch::record::Recorder;
use headroom::watch::sample::Sample;
use headroom::watch::timeline::{Timeline, TimelineFormat};

const GIB: u64 = 1 << 30;

fn status_kb(key: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn sample(i: u64) -> Sample {
    let t = i as f64 / 10.0;
    let eval = (t % 1200.0) > 1080.0; // the last 2 minutes of every 20
    let spike = i % 36_000 == 17_777;
    let leak = (t * 2_000.0) as u64; // 2 kB/s: 170 MiB a day
    let wiggle = ((i * 2_654_435_761) % 64) << 20;
    let main = 40 * GIB + leak + wiggle + if spike { 6 * GIB } else { 0 };
    let workers = 16 * (700 << 20);
    let evals = if eval { 4 * (900 << 20) } else { 0 };
    let pss = main + workers + evals;
    Sample {
        t_s: t,
        processes: 1 + 16 + if eval { 4 } else { 0 } + 1,
        rss_sum_bytes: pss + 16 * 30 * GIB,
        pss_sum_bytes: pss,
        uss_sum_bytes: pss - 30 * GIB,
        pss_shmem_sum_bytes: 3 * GIB,
        rss_shmem_sum_bytes: 17 * 3 * GIB,
        pss_file_sum_bytes: 200 << 20,
        top_pid: Some(4242),
        top_comm: Some("python".into()),
        top_pss_bytes: Some(main),
        cgroup_usage_bytes: Some(pss + 2 * GIB),
        cgroup_limit_bytes: Some(64 * GIB),
        cgroup_anon_bytes: Some(pss - 3 * GIB),
        cgroup_file_bytes: Some(5 * GIB),
        cgroup_shmem_bytes: Some(3 * GIB),
        cgroup_oom_kill: Some(0),
        main_rss_bytes: main + 30 * GIB,
        main_pss_bytes: main,
        main_uss_bytes: main - GIB,
        train_workers_rss_bytes: 16 * 31 * GIB,
        train_workers_pss_bytes: workers,
        train_workers_uss_bytes: 16 * (200 << 20),
        eval_workers_rss_bytes: if eval { 4 * 31 * GIB } else { 0 },
        eval_workers_pss_bytes: evals,
        eval_workers_uss_bytes: evals / 3,
        workers_dev_shm_bytes: Some(2 * GIB),
        ..Sample::default()
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let hours: u64 = args.next().and_then(|h| h.parse().ok()).unwrap_or(24);
    let out = args
        .next()
        .unwrap_or_else(|| "/tmp/headroom-24h.csv".into());
    let path = std::path::PathBuf::from(&out);
    let file = std::fs::File::create(&path).expect("create the timeline");
    let timeline = Timeline::new(&path, file, TimelineFormat::Csv);
    // watch's defaults: 10 min at full resolution, then 10 s rows.
    let mut rec = Recorder::with(
        Some(timeline),
        Compressor::new(600.0, 10.0),
        &[80.0, 90.0],
        "simulated".into(),
    );
    let start = std::time::Instant::now();
    let total = hours * 36_000;
    println!("hour  file_MB  VmRSS_kB  VmHWM_kB");
    for i in 0..total {
        rec.record(sample(i));
        if (i + 1) % 72_000 == 0 {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            println!(
                "{:>4}  {:>7.2}  {:>8}  {:>8}",
                (i + 1) / 36_000,
                size as f64 / 1e6,
                status_kb("VmRSS"),
                status_kb("VmHWM")
            );
        }
    }
    rec.finish();
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let rows = std::fs::read_to_string(&path)
        .map(|t| t.lines().count())
        .unwrap_or(0);
    println!(
        "{hours} h at 10 Hz: {total} samples -> {rows} rows, {:.2} MB on disk; \
         {:.1} s of CPU-side work ({:.1} us/sample); alerts {}; peak PSS {:.2} GiB",
        size as f64 / 1e6,
        start.elapsed().as_secs_f64(),
        start.elapsed().as_secs_f64() * 1e6 / total as f64,
        rec.alerted.len(),
        rec.peaks.get("pss_sum").unwrap_or(0) as f64 / GIB as f64
    );
}
