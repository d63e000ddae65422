//! What happens to each sample, whether headroom started the job or
//! attached to it: the timeline (through the long-run [`Compressor`]), the
//! peaks, the bounded list the plot is drawn from, the threshold alerts with
//! the user's `--alert-cmd`, and the live status line, redrawn in place on a
//! terminal and never written when stderr is a file or a pipe.

use std::io::IsTerminal;
use std::process::{Child, Command, Stdio};

use super::alert::{Alert, Alerts};
use super::compress::Compressor;
use super::sample::Sample;
use super::summary::Peaks;
use super::thin::thin;
use super::timeline::Timeline;
use crate::error::Error;
use crate::units::fmt_bytes;

/// The sink of every sample of one watch.
pub struct Recorder {
    timeline: Option<Timeline>,
    compressor: Compressor,
    /// Bounded samples for the plot.
    pub samples: Vec<Sample>,
    /// Every measure's peak.
    pub peaks: Peaks,
    /// The first timeline write error.
    pub write_error: Option<Error>,
    alerts: Alerts,
    alert_cmd: Option<String>,
    running: Vec<Child>,
    /// Every alert given, for the summary.
    pub alerted: Vec<Alert>,
    live: bool,
    target: String,
    /// A limit known without a cgroup reading it (none yet: the cgroup's).
    pub limit_override: Option<u64>,
}

impl Recorder {
    /// A recorder for `headroom watch` with these arguments.
    pub fn new(timeline: Option<Timeline>, args: &super::cli::WatchArgs, target: String) -> Self {
        // A probed run's report reads every row back: no compression there.
        let full_for = if args.probe {
            f64::INFINITY
        } else {
            args.full_resolution_for.as_secs_f64()
        };
        let mut r = Self::with(
            timeline,
            Compressor::new(full_for, args.keep_every.as_secs_f64()),
            &args.alert_at,
            target,
        );
        r.alert_cmd = args.alert_cmd.clone();
        r
    }

    /// A recorder writing through `compressor` to `timeline`, alerting at
    /// `alert_at` percent (no command), live status only on a terminal.
    pub fn with(
        timeline: Option<Timeline>,
        compressor: Compressor,
        alert_at: &[f64],
        target: String,
    ) -> Self {
        Recorder {
            timeline,
            compressor,
            samples: Vec::new(),
            peaks: Peaks::default(),
            write_error: None,
            alerts: Alerts::new(alert_at),
            alert_cmd: None,
            running: Vec::new(),
            alerted: Vec::new(),
            live: std::io::stderr().is_terminal(),
            target,
            limit_override: None,
        }
    }

    /// The figure held against the limit, and its name.
    pub fn measure(s: &Sample) -> Option<(u64, &'static str)> {
        match (
            s.cgroup_anon_bytes,
            s.cgroup_shmem_bytes,
            s.cgroup_usage_bytes,
        ) {
            (Some(a), Some(sh), _) => Some((a + sh, "cgroup anon+shmem")),
            (_, _, Some(u)) => Some((u, "cgroup usage")),
            _ => None,
        }
    }

    /// Takes one sample.
    pub fn record(&mut self, s: Sample) {
        self.running
            .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
        let limit = s.cgroup_limit_bytes.or(self.limit_override);
        let mut fired = Vec::new();
        if let (Some((used, name)), Some(limit)) = (Self::measure(&s), limit) {
            fired = self.alerts.observe(s.t_s, used, limit);
            for a in &fired {
                self.announce(a, name);
            }
        }
        self.peaks.update(&s);
        if self.live {
            status(&s, &self.peaks, limit);
        }
        let rows = self.compressor.push(s.clone(), !fired.is_empty());
        self.alerted.extend(fired);
        self.write(rows);
        self.samples.push(s);
        thin(&mut self.samples);
    }

    fn write(&mut self, rows: impl IntoIterator<Item = Sample>) {
        for row in rows {
            if let (Some(t), None) = (self.timeline.as_mut(), &self.write_error)
                && let Err(e) = t.write(&row)
            {
                self.write_error = Some(e);
            }
        }
    }

    fn announce(&mut self, a: &Alert, measure: &str) {
        if self.live {
            eprint!("\r\x1b[K");
        }
        eprintln!("{}", a.line(measure));
        let Some(cmd) = &self.alert_cmd else { return };
        // Started, not waited for: a slow hook must not stop the sampling.
        match Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .envs(a.env(measure, &self.target))
            .stdin(Stdio::null())
            .spawn()
        {
            Ok(child) => self.running.push(child),
            Err(e) => eprintln!("[headroom] --alert-cmd could not start: {e}"),
        }
    }

    /// The end: writes what the compressor holds, clears the status line
    /// and waits (up to 5 s) for alert commands still running.
    pub fn finish(&mut self) {
        let rest = self.compressor.take_pending();
        self.write(rest);
        if self.live {
            eprint!("\r\x1b[K");
        }
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !self.running.is_empty() && std::time::Instant::now() < until {
            self.running
                .retain_mut(|c| matches!(c.try_wait(), Ok(None)));
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

/// The one-line live status, redrawn in place.
fn status(s: &Sample, peaks: &Peaks, limit: Option<u64>) {
    let gpu = s
        .gpu_used_bytes
        .map(fmt_bytes)
        .unwrap_or_else(|| "-".into());
    let of_limit = match (Recorder::measure(s), limit) {
        (Some((used, _)), Some(l)) => format!(
            " limit {} ({:.0}%)",
            fmt_bytes(l),
            100.0 * used as f64 / l.max(1) as f64
        ),
        _ => String::new(),
    };
    eprint!(
        "\r\x1b[K[headroom] {:>6.1}s PSS {} (peak {}){of_limit} GPU {} procs {}",
        s.t_s,
        fmt_bytes(s.pss_sum_bytes),
        fmt_bytes(peaks.get("pss_sum").unwrap_or(0)),
        gpu,
        s.processes
    );
}
