//! GNN training steps as allocator traces: what `plan`'s GPU model hands the
//! simulator, scaled batch by batch by a seeded size factor (sampled
//! subgraphs differ in size), and the two simulations `plan` reports: segment
//! mode as configured, and the same with expandable segments.

use super::conf::AllocConf;
use super::state::DeviceMemory;
use super::step_events::step_events;
use super::trace::{RunOutcome, TraceEvent, run_trace};

/// Tensor sizes of one training step at the reference batch (sample count),
/// in bytes, in the order PyTorch creates them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GnnStepShape {
    /// Weights, allocated once before the first step and kept.
    pub parameters: Vec<u64>,
    /// Optimizer state (Adam: exp_avg and exp_avg_sq per parameter), created
    /// by the first `optimizer.step()` and kept.
    pub optimizer_state_first_step: Vec<u64>,
    /// The batch moved to the GPU (features, edge index, labels); scaled per batch.
    pub batch_inputs: Vec<u64>,
    /// Activations saved for backward, in forward order; scaled; freed in
    /// reverse order during backward.
    pub saved_activations: Vec<u64>,
    /// Scratch of the forward pass: transient i is created right after
    /// activation i and freed at once (message-passing gathers); scaled.
    pub transients: Vec<u64>,
    /// Scratch of the backward pass: transient i is created right after the
    /// gradient of activation i's output and freed at once (the gradient of
    /// a layer's gathered messages); scaled; 0 or missing: none.
    #[serde(default)]
    pub backward_transients: Vec<u64>,
    /// The tensors transient i is made of, where known (PyG's gathered
    /// messages and their weighted copy are two tensors, not one block):
    /// allocated one after another, then freed; empty: transient i as one.
    #[serde(default)]
    pub transient_parts: Vec<Vec<u64>>,
    /// The same for backward transient i.
    #[serde(default)]
    pub backward_parts: Vec<Vec<u64>>,
    /// The tensors saved activation i is made of, where known, in the
    /// order the forward pass creates them: `saved_parts[i]` before
    /// transient i, `saved_after[i]` after it is freed (a layer's ReLU
    /// output); together they add up to `saved_activations[i]`. The
    /// gradient of the layer's output is then tensors of the same sizes.
    /// Empty: activation i (and its gradient) as one block.
    #[serde(default)]
    pub saved_parts: Vec<Vec<u64>>,
    /// See `saved_parts`.
    #[serde(default)]
    pub saved_after: Vec<Vec<u64>>,
    /// The gradient of layer i's output as these tensors, where it is not
    /// tensors the sizes of the layer's saved ones (None or missing): GATConv
    /// holds none at its backward peak (its per-edge gradients are backward
    /// transient i).
    #[serde(default)]
    pub grad_parts: Vec<Option<Vec<u64>>>,
    /// Parameter gradients: created in backward, freed by
    /// `zero_grad(set_to_none=True)` (the default since PyTorch 2.0).
    pub param_grads: Vec<u64>,
    /// Outputs kept after the step until the epoch ends (predictions or
    /// embeddings collected for epoch metrics, or tensors a dataset keeps
    /// references to); created at the end of the forward pass; scaled.
    #[serde(default)]
    pub retained_outputs: Vec<u64>,
    /// Steps per epoch: retained outputs are freed when an epoch ends
    /// (0 = never: a leak).
    #[serde(default)]
    pub steps_per_epoch: usize,
    /// Coefficient of variation of the per-batch size factor (mean 1).
    pub size_cv: f64,
}

/// Both simulations of a training run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SimResult {
    /// Steps (batches) simulated.
    pub steps: usize,
    /// With the settings as given.
    pub configured: RunOutcome,
    /// The same settings with `expandable_segments:True`.
    pub expandable: RunOutcome,
}

/// Simulates `steps` training steps of `shape` on `device` twice: with
/// `conf`, and with `conf` plus expandable segments. Reproducible per `seed`.
pub fn simulate_training(
    shape: &GnnStepShape,
    steps: usize,
    seed: u64,
    conf: &AllocConf,
    device: &DeviceMemory,
) -> SimResult {
    SimResult {
        steps,
        configured: run_trace(training_trace(shape, steps, seed), conf, device),
        expandable: run_trace(
            training_trace(shape, steps, seed),
            &conf.with_expandable(true),
            device,
        ),
    }
}

/// The per-batch size factors: lognormal with mean 1 and the given
/// coefficient of variation (sigma^2 = ln(1 + cv^2), mu = -sigma^2 / 2).
pub fn size_factors(cv: f64, seed: u64) -> impl Iterator<Item = f64> {
    let sigma2 = (1.0 + cv * cv).ln();
    let (mu, sigma) = (-sigma2 / 2.0, sigma2.sqrt());
    let mut rng = SplitMix64(seed);
    std::iter::repeat_with(move || (mu + sigma * rng.normal()).exp())
}

/// The allocation trace of `steps` training steps (lazy: 10,000 steps never
/// sit in memory at once).
pub fn training_trace(
    shape: &GnnStepShape,
    steps: usize,
    seed: u64,
) -> impl Iterator<Item = TraceEvent> + '_ {
    training_trace_with(shape, size_factors(shape.size_cv, seed).take(steps))
}

/// The allocation trace of one training step per size factor in `factors`
/// (1.0 = the reference batch of `shape`).
pub fn training_trace_with<'a>(
    shape: &'a GnnStepShape,
    factors: impl Iterator<Item = f64> + 'a,
) -> impl Iterator<Item = TraceEvent> + 'a {
    let mut ids = 0u64;
    let mut next_id = move || {
        ids += 1;
        ids
    };
    let mut out = Vec::new();
    for &p in &shape.parameters {
        out.push(TraceEvent::Alloc {
            id: next_id(),
            size: p,
        });
    }
    let setup = out;
    let factors = factors.enumerate();
    let mut retained = Vec::new();
    setup.into_iter().chain(factors.flat_map(move |(step, f)| {
        let mut ev = step_events(shape, f, step == 0, &mut next_id, &mut retained);
        let epoch_ends = shape.steps_per_epoch > 0 && (step + 1) % shape.steps_per_epoch == 0;
        if epoch_ends {
            ev.extend(retained.drain(..).map(|id| TraceEvent::Free { id }));
        }
        ev.push(TraceEvent::StepEnd);
        ev
    }))
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, seedable, good enough for sampling.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// Standard normal by Box-Muller.
    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.unit(), self.unit());
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_factors_have_mean_one_and_the_asked_spread() {
        let f: Vec<f64> = size_factors(0.3, 42).take(200_000).collect();
        let mean = f.iter().sum::<f64>() / f.len() as f64;
        let sd = (f.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / f.len() as f64).sqrt();
        // Standard error of the mean at n = 200000: 0.3 / sqrt(2e5) = 0.00067.
        assert!((mean - 1.0).abs() < 0.005, "{mean}");
        assert!((sd / mean - 0.3).abs() < 0.01, "{}", sd / mean);
        // Seeded: the same seed gives the same factors, another seed others.
        assert_eq!(size_factors(0.3, 42).nth(7), size_factors(0.3, 42).nth(7));
        assert_ne!(size_factors(0.3, 42).nth(7), size_factors(0.3, 43).nth(7));
        // cv = 0 means every batch is the reference batch.
        assert!(
            size_factors(0.0, 1)
                .take(10)
                .all(|x| (x - 1.0).abs() < 1e-12)
        );
    }

    #[test]
    fn a_transient_given_as_parts_is_those_tensors_alive_together() {
        use TraceEvent::{Alloc, Free};
        let shape = GnnStepShape {
            parameters: vec![],
            optimizer_state_first_step: vec![],
            batch_inputs: vec![],
            saved_activations: vec![200],
            transients: vec![90],
            backward_transients: vec![40],
            transient_parts: vec![vec![30, 60]],
            backward_parts: vec![vec![15, 25]],
            saved_parts: vec![],
            saved_after: vec![],
            grad_parts: vec![],
            param_grads: vec![],
            retained_outputs: vec![],
            steps_per_epoch: 0,
            size_cv: 0.0,
        };
        let ev: Vec<TraceEvent> = training_trace(&shape, 1, 0).collect();
        // Forward: the activation, then both parts before either is freed.
        assert_eq!(
            ev[..5],
            [
                Alloc { id: 1, size: 200 },
                Alloc { id: 2, size: 30 },
                Alloc { id: 3, size: 60 },
                Free { id: 2 },
                Free { id: 3 },
            ]
        );
        // Backward: the output's gradient, then the backward parts the same way.
        assert_eq!(
            ev[5..10],
            [
                Alloc { id: 4, size: 200 },
                Alloc { id: 5, size: 15 },
                Alloc { id: 6, size: 25 },
                Free { id: 5 },
                Free { id: 6 },
            ]
        );
        // The whole figures are not allocated beside their parts.
        assert!(!ev.iter().any(|e| matches!(e, Alloc { size: 90 | 40, .. })));
    }

    #[test]
    fn one_step_in_the_order_pytorch_runs_it() {
        use TraceEvent::{Alloc, Free, StepEnd};
        let shape = GnnStepShape {
            parameters: vec![10],
            optimizer_state_first_step: vec![20],
            batch_inputs: vec![100],
            saved_activations: vec![200, 300],
            transients: vec![50],
            backward_transients: vec![],
            transient_parts: vec![],
            backward_parts: vec![],
            saved_parts: vec![],
            saved_after: vec![],
            grad_parts: vec![],
            param_grads: vec![10],
            retained_outputs: vec![],
            steps_per_epoch: 0,
            size_cv: 0.0,
        };
        let ev: Vec<TraceEvent> = training_trace(&shape, 1, 0).collect();
        let want = vec![
            Alloc { id: 1, size: 10 },  // parameter
            Alloc { id: 2, size: 100 }, // input
            Alloc { id: 3, size: 200 }, // activation 0
            Alloc { id: 4, size: 50 },  // its scratch
            Free { id: 4 },
            Alloc { id: 5, size: 300 }, // activation 1
            Alloc { id: 6, size: 10 },  // parameter gradient
            Alloc { id: 7, size: 300 }, // grad of activation 1
            Free { id: 5 },
            Alloc { id: 8, size: 200 }, // grad of activation 0
            Free { id: 7 },
            Free { id: 3 },
            Free { id: 8 },
            Alloc { id: 9, size: 20 }, // Adam state at the first step
            Free { id: 6 },            // zero_grad(set_to_none=True)
            Free { id: 2 },
            StepEnd,
        ];
        assert_eq!(ev, want);
    }

    #[test]
    fn simulate_training_reports_both_modes() {
        let mb = 1 << 20;
        let shape = GnnStepShape {
            parameters: vec![4 * mb],
            optimizer_state_first_step: vec![8 * mb],
            batch_inputs: vec![30 * mb],
            saved_activations: vec![50 * mb, 50 * mb],
            transients: vec![],
            backward_transients: vec![],
            transient_parts: vec![],
            backward_parts: vec![],
            saved_parts: vec![],
            saved_after: vec![],
            grad_parts: vec![],
            param_grads: vec![4 * mb],
            retained_outputs: vec![],
            steps_per_epoch: 0,
            size_cv: 0.0,
        };
        let dev = DeviceMemory::new(1 << 34, 0);
        let r = simulate_training(&shape, 3, 1, &AllocConf::default(), &dev);
        // Peak allocated (cv 0): in backward of step 1 or later, when the Adam
        // state (8 MiB, created at the end of step 0) is alive: param 4 + Adam
        // 8 + input 30 + act0 50 + act1 50 + pgrad 4 + grad1 50 = 196 MiB
        // (act1 is freed before grad0 is allocated). All sizes are multiples
        // of 512 B and the 4 MiB blocks are split from 20 MiB segments, so
        // blocks are exactly the requests.
        assert_eq!(r.configured.peak_allocated_bytes, 196 * mb);
        assert_eq!(r.expandable.peak_allocated_bytes, 196 * mb);
        assert_eq!(r.configured.steps_completed, 3);
        assert!(r.configured.oom.is_none() && r.expandable.oom.is_none());
    }
}
