//! The card's own facts through the driver API (cudarc) and NVML, with no
//! framework in the process: what a bare CUDA context costs as NVML sees it,
//! before and after its first kernel; the virtual-memory allocation
//! granularity (cuMemGetAllocationGranularity); and what cuMemAlloc of a
//! given size really takes (NVML's growth), from 1 B up. Only reached after
//! the driver library was found: cudarc's dynamic loading panics without it.

use std::sync::Arc;

use cudarc::driver::sys;
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg, result};
use serde::{Deserialize, Serialize};

use super::meter::Meter;

/// What one cuMemAlloc took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocCost {
    /// Bytes asked for.
    pub request: u64,
    /// NVML's growth while it was held, bytes.
    pub nvml_bytes: u64,
}

/// The driver's and NVML's side of the card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFacts {
    /// The device's name.
    pub device: String,
    /// Compute capability.
    pub compute_capability: (i32, i32),
    /// Total memory (`cuDeviceTotalMem`), bytes.
    pub total_bytes: u64,
    /// NVML's figure for this process once the primary context exists, bytes.
    pub context_bytes: u64,
    /// The same after one kernel (hand-written PTX, JIT-compiled) ran.
    pub context_after_kernel_bytes: u64,
    /// cuMemGetAllocationGranularity, minimum and recommended, bytes.
    pub granularity: (u64, u64),
    /// cuMemAlloc of growing sizes against NVML.
    pub alloc_costs: Vec<AllocCost>,
    /// How NVML was read: `per-process` or `device delta`.
    pub nvml_source: String,
}

fn err(what: &str, e: impl std::fmt::Debug) -> String {
    format!("{what}: {e:?}")
}

/// The requests whose cost is read: the smallest, one past each of the
/// allocator's boundaries (512 B, 2 MiB, 20 MiB).
pub const REQUESTS: [u64; 6] = [
    1,
    513,
    (2 << 20) - 1,
    (2 << 20) + 1,
    20 << 20,
    (20 << 20) + 1,
];

/// Measures GPU 0 (call only where `super::culib_present()`).
pub fn measure() -> Result<DeviceFacts, String> {
    let mut meter = Meter::open(std::process::id())?;
    let ctx = CudaContext::new(0).map_err(|e| err("cannot create a CUDA context", e))?;
    ctx.synchronize().map_err(|e| err("synchronize", e))?;
    let context_bytes = meter
        .read()
        .ok_or("NVML gives no reading for this process")?;
    run_kernel(&ctx)?;
    let after = meter.read().unwrap_or(context_bytes);
    let mut alloc_costs = Vec::new();
    for request in REQUESTS {
        let before = meter.read().unwrap_or(after);
        // SAFETY: a plain allocation in the bound context, freed below.
        let p =
            unsafe { result::malloc_sync(request as usize) }.map_err(|e| err("cuMemAlloc", e))?;
        let held = meter.read().unwrap_or(before);
        // SAFETY: `p` came from malloc_sync above and is freed once.
        unsafe { result::free_sync(p) }.map_err(|e| err("cuMemFree", e))?;
        alloc_costs.push(AllocCost {
            request,
            nvml_bytes: held.saturating_sub(before),
        });
    }
    Ok(DeviceFacts {
        device: ctx.name().unwrap_or_else(|_| "unknown GPU".into()),
        compute_capability: ctx
            .compute_capability()
            .map_err(|e| err("compute capability", e))?,
        total_bytes: ctx.total_mem().map_err(|e| err("cuDeviceTotalMem", e))? as u64,
        context_bytes,
        context_after_kernel_bytes: after,
        granularity: (granularity(0, false)?, granularity(0, true)?),
        alloc_costs,
        nvml_source: meter.source().into(),
    })
}

/// Loads the kernel, fills 1,024 elements and reads one back.
fn run_kernel(ctx: &Arc<CudaContext>) -> Result<(), String> {
    let (major, minor) = ctx
        .compute_capability()
        .map_err(|e| err("compute capability", e))?;
    let module = ctx
        .load_module(cudarc::nvrtc::Ptx::from_src(super::kernel::ptx(
            major, minor,
        )))
        .map_err(|e| err("the driver could not load the kernel's PTX", e))?;
    let f = module
        .load_function(super::kernel::NAME)
        .map_err(|e| err("kernel missing", e))?;
    let n: u32 = 1024;
    // SAFETY: 4 KiB in the bound context, freed below.
    let buf = unsafe { result::malloc_sync(n as usize * 4) }.map_err(|e| err("cuMemAlloc", e))?;
    let value: u32 = 0x4865_6164;
    let stream = ctx.default_stream();
    let mut b = stream.launch_builder(&f);
    b.arg(&buf).arg(&n).arg(&value);
    let cfg = LaunchConfig {
        grid_dim: (n.div_ceil(256), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments match fill(u64 dst, u32 n, u32 value); dst holds n u32.
    unsafe { b.launch(cfg) }.map_err(|e| err("launch", e))?;
    ctx.synchronize().map_err(|e| err("synchronize", e))?;
    let mut back = [0u32; 1];
    // SAFETY: reads the last element of the live buffer.
    unsafe { result::memcpy_dtoh_sync(&mut back, buf + u64::from(n - 1) * 4) }
        .map_err(|e| err("cuMemcpyDtoH", e))?;
    // SAFETY: freed once.
    unsafe { result::free_sync(buf) }.map_err(|e| err("cuMemFree", e))?;
    if back[0] != value {
        return Err(format!("the kernel ran but wrote {:#x}", back[0]));
    }
    Ok(())
}

/// cuMemGetAllocationGranularity of pinned device memory on `ordinal`.
fn granularity(ordinal: i32, recommended: bool) -> Result<u64, String> {
    // SAFETY: a zeroed plain-data struct is a valid CUmemAllocationProp.
    let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ordinal;
    let option = if recommended {
        sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
    } else {
        sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM
    };
    let mut g = 0usize;
    // SAFETY: `g` and `prop` outlive the call.
    unsafe { sys::cuMemGetAllocationGranularity(&mut g, &prop, option) }
        .result()
        .map_err(|e| err("cuMemGetAllocationGranularity", e))?;
    Ok(g as u64)
}
