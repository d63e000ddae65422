//! The real device behind the step, through cudarc: the primary context of
//! GPU 0, the kernels compiled by NVRTC and loaded as one module, segments
//! from cuMemAlloc/cuMemFree, copies and launches on the legacy default
//! stream (so every copy, memset and launch is ordered, as PyTorch's
//! single-stream training is). Only reached after the driver library was
//! found: cudarc's dynamic loading panics when it is missing.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg, result};

use super::backed::SegmentDriver;
use super::kernels::{NAMES, SOURCE};
use super::step::{Arg, Ops};

/// One GPU with the kernels loaded.
pub struct Cuda {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    funcs: HashMap<&'static str, CudaFunction>,
}

fn err(what: &str, e: impl std::fmt::Debug) -> String {
    format!("{what}: {e:?}")
}

/// Compiles the kernels to PTX with NVRTC (no device needed).
pub fn compile() -> Result<cudarc::nvrtc::Ptx, String> {
    cudarc::nvrtc::compile_ptx(SOURCE).map_err(|e| err("NVRTC could not compile the kernels", e))
}

impl Cuda {
    /// Creates the context of GPU `ordinal` and loads the kernels.
    pub fn open(ordinal: usize) -> Result<Cuda, String> {
        let ctx = CudaContext::new(ordinal).map_err(|e| err("cannot create a CUDA context", e))?;
        let stream = ctx.default_stream();
        let module = ctx
            .load_module(compile()?)
            .map_err(|e| err("cannot load the kernels", e))?;
        let mut funcs = HashMap::new();
        for name in NAMES {
            let f = module
                .load_function(name)
                .map_err(|e| err(&format!("kernel {name} missing"), e))?;
            funcs.insert(name, f);
        }
        Ok(Cuda { ctx, stream, funcs })
    }

    /// The device's name.
    pub fn name(&self) -> String {
        self.ctx.name().unwrap_or_else(|_| "unknown GPU".into())
    }

    /// Total memory of the device (`totalGlobalMem`).
    pub fn total_mem(&self) -> Result<u64, String> {
        self.ctx
            .total_mem()
            .map(|b| b as u64)
            .map_err(|e| err("cuDeviceTotalMem", e))
    }

    /// Waits for every launch.
    pub fn synchronize(&self) -> Result<(), String> {
        self.ctx.synchronize().map_err(|e| err("synchronize", e))
    }
}

impl SegmentDriver for Cuda {
    fn malloc(&mut self, size: u64) -> Result<u64, String> {
        self.ctx.bind_to_thread().map_err(|e| err("bind", e))?;
        // SAFETY: a plain device allocation in the bound context.
        unsafe { result::malloc_sync(size as usize) }.map_err(|e| err("cuMemAlloc", e))
    }

    fn free(&mut self, ptr: u64) -> Result<(), String> {
        // The caching allocator frees segments only when no block in them is
        // in use; waiting first keeps queued kernels off freed memory.
        self.synchronize()?;
        // SAFETY: `ptr` came from `malloc` above and is freed once.
        unsafe { result::free_sync(ptr) }.map_err(|e| err("cuMemFree", e))
    }
}

impl Ops for Cuda {
    fn upload(&mut self, dst: u64, bytes: &[u8]) -> Result<(), String> {
        if bytes.is_empty() {
            return Ok(());
        }
        // SAFETY: dst is a live block of at least bytes.len() (the allocator sized it);
        // a pageable copy has taken the bytes when it returns.
        unsafe { result::memcpy_htod_sync(dst, bytes) }.map_err(|e| err("cuMemcpyHtoD", e))
    }

    fn zero(&mut self, dst: u64, bytes: u64) -> Result<(), String> {
        // SAFETY: dst is a live block of at least `bytes`.
        unsafe { result::memset_d8_sync(dst, 0, bytes as usize) }.map_err(|e| err("cuMemsetD8", e))
    }

    fn launch(
        &mut self,
        name: &'static str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        args: &[Arg],
    ) -> Result<(), String> {
        let f = self
            .funcs
            .get(name)
            .ok_or_else(|| format!("no kernel {name}"))?;
        let mut b = self.stream.launch_builder(f);
        for a in args {
            match a {
                Arg::Ptr(p) | Arg::U64(p) => b.arg(p),
                Arg::I64(v) => b.arg(v),
                Arg::I32(v) => b.arg(v),
                Arg::F32(v) => b.arg(v),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: grid,
            block_dim: block,
            shared_mem_bytes: 0,
        };
        // SAFETY: the argument list matches the kernel's signature in
        // kernels.rs, and every pointer is a live block of the allocator.
        unsafe { b.launch(cfg) }
            .map(|_| ())
            .map_err(|e| err(&format!("launch {name}"), e))
    }

    fn read_f32(&mut self, src: u64) -> Result<f32, String> {
        let mut out = [0.0f32];
        // SAFETY: src is a live 4-byte block; a device-to-host copy completes before returning.
        unsafe { result::memcpy_dtoh_sync(&mut out, src) }.map_err(|e| err("cuMemcpyDtoH", e))?;
        Ok(out[0])
    }
}
