//! Unit tests of the pure parts of watch: interval parsing, the verdict
//! table, peak keeping and the plot.

use std::time::Duration;

use super::cli::parse_interval;
use super::plot::{PlotMarks, render_svg};
use super::sample::Sample;
use super::summary::Peaks;
use super::thin::{PLOT_SAMPLES, thin};
use super::verdict::{EndEvidence, ExitKind, verdict};
use crate::diagnose::category::{Category, Confidence};

#[test]
fn intervals_parse_and_zero_is_refused() {
    assert_eq!(parse_interval("100ms"), Ok(Duration::from_millis(100)));
    assert_eq!(parse_interval("2.5s"), Ok(Duration::from_millis(2500)));
    assert_eq!(parse_interval("1m"), Ok(Duration::from_secs(60)));
    assert!(parse_interval("0").unwrap_err().contains("above zero"));
    assert!(parse_interval("0ms").unwrap_err().contains("above zero"));
    assert!(parse_interval("5ms").unwrap_err().contains("below 10ms"));
    assert!(parse_interval("3h").unwrap_err().contains("over an hour"));
    assert!(parse_interval("3x").unwrap_err().contains("unknown unit"));
    // humantime's compound forms.
    assert_eq!(parse_interval("1m 30s"), Ok(Duration::from_secs(90)));
    assert_eq!(parse_interval("1s 500ms"), Ok(Duration::from_millis(1500)));
    assert!(parse_interval("fast").is_err());
}

fn ev(exit: ExitKind, oom: Option<u64>, stderr: &str) -> (Category, Confidence) {
    let v = verdict(&EndEvidence {
        exit,
        oom_kill_delta: oom,
        stderr_tail: stderr,
        forwarded_signal: None,
        stop: Default::default(),
    });
    (v.category, v.confidence)
}

#[test]
fn the_kernel_counter_makes_a_cgroup_oom_certain() {
    use Category::*;
    use Confidence::*;
    assert_eq!(
        ev(ExitKind::Signal(9), Some(1), ""),
        (HostOomCgroup, Certain)
    );
    // A worker OOM-killed while the main process raised: still the counter's proof.
    let worker = "RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed.";
    assert_eq!(
        ev(ExitKind::Code(1), Some(2), worker),
        (HostOomCgroup, Certain)
    );
    // PyTorch's own "is killed by signal" line proves the worker was killed (diagnose's rule).
    assert_eq!(
        ev(ExitKind::Code(1), Some(0), worker),
        (DataloaderWorkerKilled, Certain)
    );
    // SIGKILL with the counter still at 0: not this cgroup.
    assert_eq!(
        ev(ExitKind::Signal(9), Some(0), ""),
        (HostOomKernel, Possible)
    );
    // No cgroup to ask: a bare SIGKILL is only possibly the kernel's OOM killer (diagnose's rule).
    assert_eq!(ev(ExitKind::Signal(9), None, ""), (HostOomKernel, Possible));
}

/// Confidence levels are diagnose's (watch hands it the same evidence): a
/// status alone is at most likely, a line only the cause writes is certain.
#[test]
fn stderr_markers_signals_and_codes() {
    use Category::*;
    use Confidence::*;
    let cuda = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
    assert_eq!(
        ev(ExitKind::Code(1), Some(0), cuda),
        (CudaOomCapacity, Likely)
    );
    // An exit by SIGPIPE alone does not say who closed the pipe: likely (diagnose's rule).
    assert_eq!(ev(ExitKind::Signal(13), None, ""), (Sigpipe, Likely));
    assert_eq!(ev(ExitKind::Signal(11), None, ""), (Segfault, Likely));
    assert_eq!(ev(ExitKind::Signal(7), None, ""), (ShmBusError, Likely));
    assert_eq!(ev(ExitKind::Signal(15), None, ""), (TimeLimit, Possible));
    // A wrapper shell that reports 137 is only possibly a kill.
    assert_eq!(ev(ExitKind::Code(137), None, ""), (HostOomKernel, Possible));
    assert_eq!(ev(ExitKind::Code(0), Some(0), ""), (Success, Likely));
    let tb = "Traceback (most recent call last):\n  File \"t.py\"\nValueError: x";
    assert_eq!(ev(ExitKind::Code(1), Some(0), tb), (PythonError, Certain));
    // A nonzero status without a signal: the program ended itself.
    assert_eq!(ev(ExitKind::Code(3), Some(0), ""), (PythonError, Possible));
}

#[test]
fn exit_kinds_read_like_a_shell() {
    assert_eq!(ExitKind::Signal(9).shell_code(), 137);
    assert_eq!(ExitKind::Signal(15).shell_code(), 143);
    assert_eq!(ExitKind::Code(3).shell_code(), 3);
    assert_eq!(
        ExitKind::Signal(9).describe(),
        "killed by signal 9 (SIGKILL)"
    );
}

fn sample(t_s: f64, processes: u32, rss: u64, pss: u64, cgroup: Option<u64>) -> Sample {
    Sample {
        t_s,
        processes,
        rss_sum_bytes: rss,
        pss_sum_bytes: pss,
        top_pid: Some(100 + processes),
        cgroup_usage_bytes: cgroup,
        ..Sample::default()
    }
}

#[test]
fn peaks_keep_the_first_maximum_and_its_moment() {
    let mut p = Peaks::default();
    p.update(&sample(0.1, 1, 100, 100, Some(150)));
    p.update(&sample(0.2, 5, 500, 120, Some(140)));
    p.update(&sample(0.3, 5, 500, 110, Some(130)));
    p.update(&sample(0.4, 2, 200, 130, None));
    assert_eq!(p.get("rss_sum"), Some(500));
    let rss = p.peaks.iter().find(|x| x.measure == "rss_sum").unwrap();
    assert_eq!((rss.at_s, rss.processes, rss.top_pid), (0.2, 5, Some(105)));
    assert_eq!(p.get("pss_sum"), Some(130));
    assert_eq!(p.get("cgroup_usage"), Some(150));
    assert_eq!(p.get("gpu_used"), None, "no GPU reading, no GPU peak");
    assert_eq!(p.max_processes, 5);
    // At the RSS peak PSS was 120 of 500: 24% of summed RSS was real.
    assert_eq!(p.pss_over_rss_at_peak, Some(120.0 / 500.0));
}

#[test]
fn the_plot_draws_the_limit_and_the_prediction() {
    let samples = vec![
        sample(0.0, 1, 1 << 30, 1 << 30, Some(1 << 30)),
        sample(1.0, 3, 3 << 30, 1 << 30, Some(1 << 30)),
    ];
    let marks = PlotMarks {
        limit: Some(4 << 30),
        predicted_peak: Some(2 << 30),
        title: "t".into(),
        end: None,
        phases: Vec::new(),
    };
    let svg = render_svg(&samples, &marks).unwrap();
    assert!(svg.starts_with("<svg"));
    assert!(svg.contains("limit 4.00 GiB"), "legend names the limit");
    assert!(svg.contains("predicted peak 2.00 GiB"));
    assert!(
        !svg.contains("GPU memory"),
        "no GPU line without GPU readings"
    );
}

#[test]
fn a_signal_headroom_forwarded_explains_the_end() {
    // Ctrl-C reached a Python job: it exits 1 with a KeyboardInterrupt traceback.
    let v = verdict(&EndEvidence {
        exit: ExitKind::Code(1),
        oom_kill_delta: Some(0),
        stderr_tail: "Traceback (most recent call last):\nKeyboardInterrupt",
        forwarded_signal: Some(2),
        stop: Default::default(),
    });
    assert_eq!(
        (v.category, v.confidence),
        (Category::TimeLimit, Confidence::Certain)
    );
    assert!(v.reason.contains("SIGINT"));
}

#[test]
fn thinning_halves_the_kept_samples_and_keeps_every_peak() {
    let mut v: Vec<Sample> = (0..PLOT_SAMPLES)
        .map(|i| sample(i as f64, 1, 10, 10, Some(10)))
        .collect();
    // One spike in an odd position (it would vanish under plain decimation).
    v[12_345] = sample(12_345.0, 7, 900, 800, Some(700));
    thin(&mut v);
    assert_eq!(v.len(), PLOT_SAMPLES / 2);
    // 12_345 pairs with 12_344 into element 6_172, stamped with 12_344's time.
    let s = &v[6_172];
    assert_eq!(
        (s.t_s, s.processes, s.rss_sum_bytes, s.pss_sum_bytes),
        (12_344.0, 7, 900, 800)
    );
    assert_eq!(s.cgroup_usage_bytes, Some(700));
    assert_eq!(v.iter().map(|s| s.pss_sum_bytes).max(), Some(800));
    let mut short = vec![sample(0.0, 1, 1, 1, None)];
    thin(&mut short);
    assert_eq!(short.len(), 1, "below the bound nothing changes");
}

#[test]
fn the_plot_stacks_the_roles_and_marks_the_phases_and_the_kill() {
    let mut samples = vec![
        sample(0.0, 1, 1 << 30, 1 << 30, Some(1 << 30)),
        sample(2.0, 5, 3 << 30, 2 << 30, Some(2 << 30)),
    ];
    samples[1].main_pss_bytes = 1 << 30;
    samples[1].train_workers_pss_bytes = 1 << 30;
    let marks = PlotMarks {
        limit: Some(4 << 30),
        end: Some((2.0, "killed by SIGKILL: host_oom_cgroup".into())),
        phases: vec![(0.0, 1.0, "load".into()), (1.0, 2.0, "train".into())],
        ..PlotMarks::default()
    };
    let svg = render_svg(&samples, &marks).unwrap();
    assert!(svg.contains("killed by SIGKILL: host_oom_cgroup"));
    assert!(
        svg.contains("\ntrain\n") && svg.contains("\nload\n"),
        "phase names drawn"
    );
    assert!(svg.contains("PSS: main") && svg.contains("PSS: training workers"));
    // No evaluation workers in this run: no empty band in the legend.
    assert!(!svg.contains("PSS: evaluation workers"));
    assert!(
        svg.contains("<polygon"),
        "stacked bands are filled polygons"
    );
}

#[test]
fn spans_take_hours_days_and_compound_forms() {
    use super::cli_parse::parse_span;
    assert_eq!(parse_span("0"), Ok(Duration::ZERO));
    assert_eq!(parse_span("2h"), Ok(Duration::from_secs(7200)));
    assert_eq!(parse_span("1.5h"), Ok(Duration::from_secs(5400)));
    assert_eq!(parse_span("1day 2h"), Ok(Duration::from_secs(93600)));
    assert!(parse_span("later").is_err());
}

/// The child joins its limit cgroup before exec and only the errno comes
/// back: a cgroup removed under it (an `rmdir` of empty cgroups by another
/// program) is an ENOENT like a missing command, and is told apart.
#[test]
fn a_cgroup_removed_before_the_job_joins_it_is_not_a_missing_command() {
    use std::process::ExitCode;
    let dir = tempfile::tempdir().expect("tempdir");
    let procs = dir.path().join("headroom-watch-1").join("cgroup.procs");
    let env = [];
    let e = super::child::spawn(&["true".to_string()], Some(&procs), &env)
        .expect_err("a job joined a cgroup that does not exist");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(
        super::run::spawn_failed("true", &e, Some(&procs)),
        ExitCode::from(126)
    );
    // The cgroup there (a plain file takes the write) and the command missing.
    std::fs::create_dir(dir.path().join("headroom-watch-1")).expect("mkdir");
    std::fs::write(&procs, "").expect("procs");
    let missing = dir.path().join("no-such-command").display().to_string();
    let e = super::child::spawn(std::slice::from_ref(&missing), Some(&procs), &env)
        .expect_err("a missing command ran");
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(
        super::run::spawn_failed(&missing, &e, Some(&procs)),
        ExitCode::from(127)
    );
}
