//! The head of a plan as people read it: the budgets, each on its own line
//! with what the figure means, the margin on its own line, the verdict (or
//! that nothing was checked), and the two allocator simulations, each
//! labelled. "Total capacity" is PyTorch's word for what `cudaMemGetInfo`
//! reports as the device total, the figure its OOM message prints ("GPU 0 has
//! a total capacity of 39.49 GiB of which ..." in c10/cuda/
//! CUDACachingAllocator.cpp); headroom's GPU profiles store it as
//! `pytorch_total_bytes`, a little under NVML's total.

use std::io::Write;

use super::PlanReport;
use super::gpu_sim::SimRun;
use crate::spec::Device;
use crate::units::fmt_bytes;

impl PlanReport {
    /// Whether GPU figures belong in the report (not for `--device cpu`).
    pub(super) fn shows_gpu(&self) -> bool {
        self.device == Device::Cuda
    }

    pub(super) fn write_budget(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let l = &self.limits;
        let accounting = match self.accounting {
            crate::spec::Accounting::Cgroup => "cgroup accounting: each page counted once",
            crate::spec::Accounting::RssSum => "RSS-sum accounting: RSS summed over processes",
        };
        match l.host {
            Some(h) => writeln!(w, "budget:  host {} per node ({accounting})", fmt_bytes(h))?,
            None => writeln!(w, "budget:  host not given (--mem)")?,
        }
        if self.shows_gpu() {
            match l.gpu {
                Some(g) => writeln!(
                    w,
                    "         GPU total capacity {} (PyTorch's figure, as its OOM message prints it)",
                    fmt_bytes(g)
                )?,
                None => writeln!(w, "         GPU not given (--gpu)")?,
            }
        } else {
            writeln!(w, "         GPU none: the model trains on the CPU")?;
        }
        match l.shm {
            Some(s) => writeln!(w, "         /dev/shm {}", fmt_bytes(s))?,
            None => writeln!(w, "         /dev/shm not given (--shm)")?,
        }
        let usable = |b: u64| fmt_bytes((b as f64 * (1.0 - l.margin)) as u64);
        let mut parts = Vec::new();
        if let Some(h) = l.host {
            parts.push(format!("host {} usable", usable(h)));
        }
        if let (Some(g), true) = (l.gpu, self.shows_gpu()) {
            parts.push(format!("GPU {} usable", usable(g)));
        }
        if !parts.is_empty() {
            writeln!(
                w,
                "margin:  {:.0}% of each kept free: {}",
                l.margin * 100.0,
                parts.join(", ")
            )?;
        }
        Ok(())
    }

    pub(super) fn write_verdict(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let gpu = if self.shows_gpu() && self.peak_gpu_bytes > 0 {
            format!(
                ", {} GPU in {}",
                fmt_bytes(self.peak_gpu_bytes),
                self.peak_gpu_phase.as_str()
            )
        } else {
            String::new()
        };
        if !self.checked {
            return writeln!(
                w,
                "NOT CHECKED: no budget given (--mem, --gpu, --shm), so nothing was judged; \
                 predicted peak {} host in {}{gpu}.",
                fmt_bytes(self.peak_host_bytes),
                self.peak_phase.as_str()
            );
        }
        match &self.failure {
            None => {
                let l = &self.limits;
                let mut unchecked = Vec::new();
                if l.host.is_none() {
                    unchecked.push("host (--mem)");
                }
                if self.shows_gpu() && l.gpu.is_none() {
                    unchecked.push("GPU (--gpu)");
                }
                if l.shm.is_none() {
                    unchecked.push("/dev/shm (--shm)");
                }
                writeln!(
                    w,
                    "FITS: peak {} host in {}{gpu}, within the margin{}.",
                    fmt_bytes(self.peak_host_bytes),
                    self.peak_phase.as_str(),
                    if unchecked.is_empty() {
                        String::new()
                    } else {
                        format!("; not checked: {}", unchecked.join(", "))
                    }
                )
            }
            Some(f) => {
                writeln!(
                    w,
                    "DOES NOT FIT: exit {} expected in {}.",
                    f.exit_code,
                    f.phase.as_str()
                )?;
                writeln!(w, "  {}", f.message)
            }
        }
    }

    /// The range the real host peak may take, from the model's error on
    /// random real runs; and, when the limit lies inside it, that the
    /// verdict may go either way.
    pub(super) fn write_band(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let b = &self.host_band;
        writeln!(
            w,
            "  real host peak likely {} – {} (the model's error on 80 % of {} random real runs), {} at its worst under-prediction",
            fmt_bytes(b.likely_low_bytes),
            fmt_bytes(b.likely_high_bytes),
            b.runs,
            fmt_bytes(b.worst_high_bytes)
        )?;
        if b.straddles {
            writeln!(
                w,
                "  UNCERTAIN: the host limit lies inside that range: the job may fit or not, whatever the verdict above"
            )?;
        }
        Ok(())
    }

    pub(super) fn write_gpu_simulation(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let Some(g) = self.gpu_simulation.as_ref().filter(|_| self.shows_gpu()) else {
            return Ok(());
        };
        let show = |r: &SimRun| {
            let [low, median, high] = r.reserved_over_orders;
            let ooms = match r.orders_out_of_memory {
                0 => String::new(),
                n => format!("; {n} of {} orders run out", r.orders),
            };
            let one_figure = r.orders == 1 || (low == high && ooms.is_empty());
            let head = match &r.oom {
                None => format!(
                    "completes, peak {} reserved / {} allocated",
                    fmt_bytes(r.peak_reserved_bytes),
                    fmt_bytes(r.peak_allocated_bytes)
                ),
                Some(o) => format!(
                    "runs out at step {} (needs {})",
                    o.step + 1,
                    fmt_bytes(o.need_bytes)
                ),
            };
            if one_figure {
                return head;
            }
            format!(
                "{head} (reserved {} – {}, median {} over the orders{ooms})",
                fmt_bytes(low),
                fmt_bytes(high),
                fmt_bytes(median)
            )
        };
        let yours = |expandable: bool| {
            if self.settings.expandable_segments == expandable {
                " (your setting)"
            } else {
                ""
            }
        };
        writeln!(
            w,
            "GPU simulation: PyTorch's caching allocator over {} of the run's {} training steps \
             (its largest batch included), in {} orders of the batch sizes without expandable \
             segments (the reserve depends on the order; the plan takes the 70th percentile), \
             on the {} usable, of which the CUDA context takes {}:",
            g.steps_simulated,
            g.steps_in_run,
            g.orders_simulated,
            fmt_bytes(g.device_bytes),
            fmt_bytes(g.context_bytes)
        )?;
        writeln!(
            w,
            "  without expandable segments{}: {}",
            yours(false),
            show(&g.configured)
        )?;
        writeln!(
            w,
            "  with expandable_segments:True{}: {}",
            yours(true),
            show(&g.expandable)
        )
    }
}
