//! Merging samples without losing a peak: two neighbouring rows become one
//! whose every figure is the larger of the two, stamped at the first one's
//! time and spanning both. The plot's bounded sample list ([`thin`]) and
//! the long-run timeline's interval rows (`compress`) are both made of it.

use super::sample::Sample;

/// Most samples kept in memory for the plot (a few MiB); a three-day run at
/// 100 ms would otherwise keep 2.6 million. The timeline file keeps more.
pub const PLOT_SAMPLES: usize = 20_000;

/// Halves `samples` once they reach [`PLOT_SAMPLES`], merging neighbours
/// into their larger readings so no peak disappears from the picture.
pub fn thin(samples: &mut Vec<Sample>) {
    if samples.len() < PLOT_SAMPLES {
        return;
    }
    let merged = samples
        .chunks(2)
        .map(|pair| match pair {
            [a, b] => merge_max(a, b),
            [a] => a.clone(),
            _ => Sample::default(),
        })
        .collect();
    *samples = merged;
}

/// `a` and `b` (later) as one row: each figure's maximum; the top process
/// of the row whose top process is largest; the span from `a` to the end of `b`.
pub fn merge_max(a: &Sample, b: &Sample) -> Sample {
    let top = if b.top_pss_bytes > a.top_pss_bytes {
        b
    } else {
        a
    };
    let mut m = Sample {
        t_s: a.t_s,
        span_s: ((b.t_s + b.span_s) - a.t_s).max(0.0),
        top_pid: top.top_pid,
        top_comm: top.top_comm.clone(),
        top_pss_bytes: top.top_pss_bytes,
        ..Sample::default()
    };
    macro_rules! max_of {
        ($($f:ident),* $(,)?) => { $( m.$f = a.$f.max(b.$f); )* };
    }
    max_of!(
        processes,
        rss_sum_bytes,
        pss_sum_bytes,
        uss_sum_bytes,
        pss_shmem_sum_bytes,
        rss_shmem_sum_bytes,
        pss_file_sum_bytes,
        pss_carried,
        pss_age_ms,
        cgroup_usage_bytes,
        cgroup_limit_bytes,
        cgroup_anon_bytes,
        cgroup_file_bytes,
        cgroup_shmem_bytes,
        cgroup_oom_kill,
        gpu_used_bytes,
        gpu_process_bytes,
        main_rss_bytes,
        main_pss_bytes,
        main_uss_bytes,
        train_workers_rss_bytes,
        train_workers_pss_bytes,
        train_workers_uss_bytes,
        eval_workers_rss_bytes,
        eval_workers_pss_bytes,
        eval_workers_uss_bytes,
        other_rss_bytes,
        other_pss_bytes,
        other_uss_bytes,
        workers_dev_shm_bytes,
    );
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t_s: f64, pss: u64, gpu: Option<u64>) -> Sample {
        Sample {
            t_s,
            pss_sum_bytes: pss,
            train_workers_pss_bytes: pss / 2,
            gpu_used_bytes: gpu,
            processes: 1,
            ..Sample::default()
        }
    }

    #[test]
    fn a_merged_row_keeps_every_peak_and_spans_both() {
        let m = merge_max(&at(1.0, 5, None), &at(1.1, 3, Some(7)));
        assert_eq!(m.pss_sum_bytes, 5);
        assert_eq!(m.train_workers_pss_bytes, 2);
        assert_eq!(m.gpu_used_bytes, Some(7));
        assert_eq!(m.t_s, 1.0);
        assert!((m.span_s - 0.1).abs() < 1e-9);
    }
}
