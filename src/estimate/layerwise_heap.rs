//! Whether CPU layer-wise inference runs where glibc's heap fragments by an
//! amount the model cannot bound: its per-batch tensors near or under the
//! 32 MiB mmap ceiling, so many come from the heap, between the small rows each
//! batch keeps (`xs.append(x[:batch_size])`). Pure: sizes in, verdict out.
//!
//! Measured on one real job (advice-2611253-06's advised settings: GIN, one
//! layer, 1024 bf16 features, 324,208 nodes, evaluation batch 128, per-batch
//! tensors of 23 MiB on average), run seven times unchanged: glibc's main
//! arena ended at 0.26, 0.88, 1.23, 1.30, 1.58, 1.62 and 1.97 GB (0.155 GB
//! of it in use; the model's whole evaluation is 1.47 GiB), so the same job
//! peaked anywhere from 2.1 to 3.3 GB (VmHWM); with one evaluation worker, 0.83 to
//! 0.99 GB (three runs); with
//! `MALLOC_MMAP_THRESHOLD_=65536` (every tensor its own mapping) it peaked
//! where the model says, and took 2.9 times as long. With evaluation batch
//! 512 (89 MiB tensors, mmapped) the model was 7 % low. Runs in
//! tests/fixtures/pyg/dev-layerwise-glibc-repeats.json; docs/accuracy.md,
//! "Layer-wise inference: heads and glibc".

use super::heap_share::{MMAP_THRESHOLD_MAX, widest_input};
use super::{SampleStats, Settings};
use crate::spec::{Device, EvalLoaders, Job, ModelKind};

/// The mean per-batch tensor below which the risk stands: twice the
/// ceiling, since full-neighbourhood batches vary (the largest of the
/// measured job's was three times its mean), so at a mean just over 32 MiB
/// nearly half the batches still come from the heap. On the measured job:
/// mean 23 MiB (batch 128) 0.3-2.0 GB more; 34 MiB (batch 192) killed under
/// a 1.70 GiB limit the model put it 10 % inside; 45 MiB (batch 256) 0.41
/// and 0.43 GB of heap in two runs; 89 MiB (batch 512) 7 % above the model
/// (2 % once GIN's no_grad combine moment was counted).
pub const LAYERWISE_RISK_BELOW: f64 = 2.0 * MMAP_THRESHOLD_MAX;

/// The mean per-batch tensor of layer-wise inference (a batch's nodes at
/// the widest layer input, float32) when it is under twice glibc's mmap
/// ceiling on a CPU job, else None. `eval` is the evaluation loader's batches.
pub fn layerwise_heap_risk(job: &Job, settings: &Settings, eval: &SampleStats) -> Option<f64> {
    if job.device != Device::Cpu || settings.eval_loaders != EvalLoaders::Layerwise {
        return None;
    }
    if matches!(job.model, ModelKind::Generic { .. }) {
        return None;
    }
    let tensor = eval.mean_nodes * widest_input(job) as f64 * 4.0;
    (tensor < LAYERWISE_RISK_BELOW).then_some(tensor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::JobSpec;

    fn job(device: Device, eval: EvalLoaders) -> Job {
        let mut spec = JobSpec::for_dataset("ogbn-arxiv");
        spec.device = device;
        spec.loader.eval_loaders = eval;
        spec.model.hidden = 256;
        Job::from_spec(&spec).expect("arxiv spec")
    }

    #[test]
    fn heap_sized_batches_of_cpu_layerwise_inference_are_a_risk() {
        let j = job(Device::Cpu, EvalLoaders::Layerwise);
        // arxiv's 128 features, hidden 256: the widest input is 256 floats.
        assert_eq!(j.dataset.features, 128);
        let width = 256.0;
        let s = &j.settings;
        // 5,892 nodes x 256 x 4 B = 5.8 MiB: from the heap.
        let small = SampleStats::fixed(5892.0, 5819.0);
        assert_eq!(
            layerwise_heap_risk(&j, s, &small),
            Some(5892.0 * width * 4.0)
        );
        // 40,000 nodes x 256 x 4 B = 39 MiB: the mean batch is mmapped,
        // but nearly half of them are not.
        let near = SampleStats::fixed(40_000.0, 40_000.0);
        assert!(layerwise_heap_risk(&j, s, &near).is_some());
        // 70,000 nodes: 68 MiB, nearly all mmapped.
        let large = SampleStats::fixed(70_000.0, 70_000.0);
        assert_eq!(layerwise_heap_risk(&j, s, &large), None);
    }

    #[test]
    fn only_layerwise_inference_on_the_cpu() {
        let small = SampleStats::fixed(1000.0, 1000.0);
        for (device, eval) in [
            (Device::Cuda, EvalLoaders::Layerwise),
            (Device::Cpu, EvalLoaders::Resident),
            (Device::Cpu, EvalLoaders::OnDemand),
        ] {
            let j = job(device, eval);
            assert_eq!(layerwise_heap_risk(&j, &j.settings, &small), None);
        }
    }
}
