//! The GPU step's tests: the allocation sequence on a recording device
//! (runs everywhere), NVRTC compiling the kernels (where libnvrtc is found;
//! it needs no GPU), and the whole step on a real GPU (where one is found).

use super::backed::{BackedAllocator, SegmentDriver};
use super::batches::BatchSource;
use super::step::{Arg, DeviceSage, HostBatch, Ops};
use crate::alloc::{AllocConf, DeviceMemory};
use crate::calibrate::cli::CalibrateArgs;
use crate::output::Format;

/// A device that hands out addresses, checks bounds of every copy and
/// counts launches, without computing anything.
#[derive(Default)]
struct Recorder {
    next: u64,
    segments: std::collections::BTreeMap<u64, u64>,
    launches: Vec<&'static str>,
}

impl Recorder {
    fn inside(&self, ptr: u64, len: u64) -> bool {
        self.segments
            .range(..=ptr)
            .next_back()
            .is_some_and(|(&base, &size)| ptr + len <= base + size)
    }
}

impl SegmentDriver for Recorder {
    fn malloc(&mut self, size: u64) -> Result<u64, String> {
        let p = (1 << 44) + self.next;
        self.next += size + (2 << 20);
        self.segments.insert(p, size);
        Ok(p)
    }
    fn free(&mut self, ptr: u64) -> Result<(), String> {
        self.segments
            .remove(&ptr)
            .map(|_| ())
            .ok_or("double free".into())
    }
}

impl Ops for Recorder {
    fn upload(&mut self, dst: u64, bytes: &[u8]) -> Result<(), String> {
        assert!(
            self.inside(dst, bytes.len() as u64),
            "copy outside a segment"
        );
        Ok(())
    }
    fn zero(&mut self, dst: u64, bytes: u64) -> Result<(), String> {
        assert!(self.inside(dst, bytes), "memset outside a segment");
        Ok(())
    }
    fn launch(
        &mut self,
        name: &'static str,
        _: (u32, u32, u32),
        _: (u32, u32, u32),
        args: &[Arg],
    ) -> Result<(), String> {
        for a in args {
            if let Arg::Ptr(p) = a {
                assert!(
                    *p == 0 || self.inside(*p, 1),
                    "{name}: pointer outside a segment"
                );
            }
        }
        self.launches.push(name);
        Ok(())
    }
    fn read_f32(&mut self, src: u64) -> Result<f32, String> {
        assert!(self.inside(src, 4));
        Ok(1.0)
    }
}

pub(super) fn small_config() -> crate::calibrate::workload::Config {
    CalibrateArgs {
        nodes: 20_000,
        avg_degree: 10.0,
        features: 64,
        workers: 1,
        batch_size: 256,
        fanout: vec![10, 5],
        batches: 6,
        seed: 3,
        check_batch_size: None,
        check_workers: None,
        no_check: true,
        no_gpu: false,
        from: None,
        out: None,
        format: Format::Table,
    }
    .config()
    .unwrap()
}

#[test]
fn the_step_frees_everything_but_the_parameters() {
    let cfg = small_config();
    let mut src = BatchSource::new(&cfg);
    let dev = DeviceMemory::new(80 << 30, 500 << 20);
    let mut a = BackedAllocator::new(AllocConf::default(), dev, Recorder::default()).unwrap();
    let m = DeviceSage::new(&mut a, [cfg.features, cfg.hidden, cfg.classes], 1).unwrap();
    let params = a.stats().allocated.current;
    // Six tensors of 64·32, 32, 64·32, 32·16, 16, 32·16 floats, each rounded up to 512 B.
    let rounded = |b: u64| b.div_ceil(512) * 512;
    let by_hand: u64 = [8192, 128, 8192, 2048, 64, 2048]
        .iter()
        .map(|&b| rounded(b))
        .sum();
    assert_eq!((m.param_bytes(), params), (20_672, by_hand));
    let mut peaks = 0;
    for i in 0..src.len() {
        let b = src.batch(i);
        m.step(&mut a, &b, i as u64, &mut |_| peaks += 1).unwrap();
        assert_eq!(
            a.stats().allocated.current,
            params,
            "batch {i} left tensors behind"
        );
    }
    assert_eq!(peaks, src.len());
    // Per step: degree, 2 aggregations of 3 kernels, 4 forward GEMMs, ReLU/dropout,
    // loss; backward 6 GEMMs, 2 column sums, divide, gather, scatter, ReLU backward;
    // 6 SGD updates.
    let per_step = 1 + 6 + 4 + 1 + 1 + 6 + 2 + 3 + 1 + 6;
    assert_eq!(a.driver_mut().launches.len(), per_step * src.len());
    assert_eq!(a.segment_bytes(), a.stats().reserved.current);
}

#[test]
fn nvrtc_compiles_the_kernels_where_it_is_installed() {
    if !super::nvrtc_present() {
        eprintln!(
            "skipped: libnvrtc not found (pip's nvidia-cuda-nvrtc-cu12 ships it; add its lib/ to LD_LIBRARY_PATH)"
        );
        return;
    }
    let ptx = super::cuda::compile().unwrap().to_src();
    for name in super::kernels::NAMES {
        assert!(
            ptx.contains(&format!(".entry {name}(")),
            "{name} missing from the PTX"
        );
    }
}

#[test]
fn on_a_gpu_the_step_learns_a_fixed_batch() {
    if !(super::culib_present() && super::nvrtc_present()) {
        eprintln!("skipped: no CUDA driver or no NVRTC on this machine");
        return;
    }
    let dev = match super::cuda::Cuda::open(0) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("skipped: no usable GPU ({e})");
            return;
        }
    };
    let b = learnable_batch();
    let device = DeviceMemory::new(dev.total_mem().unwrap(), 0);
    let mut a = BackedAllocator::new(AllocConf::default(), device, dev).unwrap();
    let m = DeviceSage::new(&mut a, [16, 32, 16], 1).unwrap();
    let losses: Vec<f32> = (0..200)
        .map(|i| m.step(&mut a, &b, i, &mut |_| {}).unwrap())
        .collect();
    // Small random weights give logits near zero: the loss starts near ln(16).
    // The CPU step (same model, same learning rate) goes from 2.81 to 1.35
    // on this batch in 200 steps; the GPU's dropout masks differ.
    let ln_c = 16f32.ln();
    assert!((0.8 * ln_c..1.3 * ln_c).contains(&losses[0]), "{losses:?}");
    assert!(losses[199] < 0.75 * losses[0], "{losses:?}");
}

#[test]
fn on_a_gpu_nvml_sees_context_plus_reserve() {
    let out = super::run(&small_config());
    let Some(m) = out.measured else {
        eprintln!("skipped: {}", out.note);
        if !super::culib_present() {
            assert_eq!(out.note, "no GPU: GPU calibration skipped");
        }
        return;
    };
    eprintln!("{m:?}");
    assert_eq!(m.steps, small_config().batches as u64);
    assert!(m.loss_first_last.0.is_finite() && m.loss_first_last.1.is_finite());
    assert!(m.reserved_peak_bytes >= m.allocated_peak_bytes);
    assert!(m.nvml_peak_bytes >= m.reserved_peak_bytes);
    // A CUDA context takes tens to hundreds of MiB, never gigabytes.
    assert!(
        ((16 << 20)..(4 << 30)).contains(&m.context_bytes),
        "{}",
        m.context_bytes
    );
}

/// 64 nodes whose features are their labels one-hot (16 classes), each the
/// source of an edge into the next: a batch a SAGE model can fit.
fn learnable_batch() -> HostBatch {
    let (s, c) = (64usize, 16usize);
    let y: Vec<i64> = (0..s as i64).map(|i| i % c as i64).collect();
    let mut x = vec![0.0f32; s * c];
    for (i, &l) in y.iter().enumerate() {
        x[i * c + l as usize] = 1.0;
    }
    let ids: Vec<i64> = (0..s as i64).collect();
    HostBatch {
        x,
        y,
        n_id: ids.clone(),
        input: ids.clone(),
        row: ids.iter().map(|&i| (i + 1) % s as i64).collect(),
        col: ids.clone(),
        e_id: ids,
    }
}
