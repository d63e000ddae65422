//! The step's building blocks over a device-backed allocator: tensors
//! allocated (and uploaded or zeroed) through the caching-allocator rules,
//! freed back to its cache, 1-D and GEMM launches, and the mean aggregation
//! with its gathered messages freed as soon as they are scattered.

use super::backed::{BackedAllocator, DevBuf, SegmentDriver};
use super::ops::{Arg, Ops};

/// A slice of plain numbers as its bytes, for uploading.
fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: f32/i64/u8 slices viewed as their bytes; no padding, any bit pattern valid.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast(), std::mem::size_of_val(v)) }
}

/// One thread per element, 256 a block.
fn grid1(n: usize) -> Result<(u32, u32, u32), String> {
    let blocks = n.div_ceil(256).max(1);
    u32::try_from(blocks)
        .map(|b| (b, 1, 1))
        .map_err(|_| format!("{n} elements exceed one launch"))
}

pub(super) struct Step<'a, D: SegmentDriver + Ops> {
    pub(super) a: &'a mut BackedAllocator<D>,
}

impl<D: SegmentDriver + Ops> Step<'_, D> {
    pub(super) fn put<T: Copy>(&mut self, v: &[T]) -> Result<DevBuf, String> {
        let b = self.a.alloc(std::mem::size_of_val(v) as u64)?;
        self.a.driver_mut().upload(b.ptr, bytes_of(v))?;
        Ok(b)
    }
    pub(super) fn zeros(&mut self, bytes: usize) -> Result<DevBuf, String> {
        let b = self.a.alloc(bytes as u64)?;
        self.a.driver_mut().zero(b.ptr, bytes as u64)?;
        Ok(b)
    }
    pub(super) fn empty(&mut self, bytes: usize) -> Result<DevBuf, String> {
        self.a.alloc(bytes as u64)
    }
    pub(super) fn free(&mut self, bufs: &[DevBuf]) -> Result<(), String> {
        bufs.iter().try_for_each(|&b| self.a.free(b))
    }
    pub(super) fn k1(&mut self, name: &'static str, n: usize, args: &[Arg]) -> Result<(), String> {
        let grid = grid1(n)?;
        self.a.driver_mut().launch(name, grid, (256, 1, 1), args)
    }
    /// out (m×n) = op(a)·op(b) (+ bias) (+ out).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm(
        &mut self,
        out: &DevBuf,
        a: &DevBuf,
        b: &DevBuf,
        bias: Option<&DevBuf>,
        (m, n, k): (usize, usize, usize),
        (ta, tb): (bool, bool),
        acc: bool,
    ) -> Result<(), String> {
        let t = super::kernels::TILE as usize;
        let (gx, gy) = (n.div_ceil(t).max(1), m.div_ceil(t).max(1));
        if gy > 65_535 || m > i32::MAX as usize || k > i32::MAX as usize {
            return Err(format!("a {m}×{k} GEMM exceeds one launch"));
        }
        let grid = (gx as u32, gy as u32, 1);
        let tile = (t as u32, t as u32, 1);
        let args = [
            Arg::Ptr(out.ptr),
            Arg::Ptr(a.ptr),
            Arg::Ptr(b.ptr),
            Arg::Ptr(bias.map_or(0, |b| b.ptr)),
            Arg::I32(m as i32),
            Arg::I32(n as i32),
            Arg::I32(k as i32),
            Arg::I32(ta.into()),
            Arg::I32(tb.into()),
            Arg::I32(acc.into()),
        ];
        self.a.driver_mut().launch("gemm", grid, tile, &args)
    }
    /// out[i, :] = src[idx[i], :] for the n rows of `idx`, d columns.
    pub(super) fn gather_rows(
        &mut self,
        out: &DevBuf,
        src: &DevBuf,
        idx: &DevBuf,
        n: usize,
        d: usize,
    ) -> Result<(), String> {
        let args = [
            Arg::Ptr(out.ptr),
            Arg::Ptr(src.ptr),
            Arg::Ptr(idx.ptr),
            Arg::I64(n as i64),
            Arg::I32(d as i32),
        ];
        self.k1("gather_rows", n * d, &args)
    }
    /// out[idx[i], :] += src[i, :] for the n rows of `src`, d columns.
    pub(super) fn scatter_add_rows(
        &mut self,
        out: &DevBuf,
        src: &DevBuf,
        idx: &DevBuf,
        n: usize,
        d: usize,
    ) -> Result<(), String> {
        let args = [
            Arg::Ptr(out.ptr),
            Arg::Ptr(src.ptr),
            Arg::Ptr(idx.ptr),
            Arg::I64(n as i64),
            Arg::I32(d as i32),
        ];
        self.k1("scatter_add_rows", n * d, &args)
    }
    /// Divides each of the s rows of `out` by its node's degree (where not 0).
    pub(super) fn divide_rows(&mut self, out: &DevBuf, g: &Graph, d: usize) -> Result<(), String> {
        let args = [
            Arg::Ptr(out.ptr),
            Arg::Ptr(g.deg.ptr),
            Arg::I64(g.s as i64),
            Arg::I32(d as i32),
        ];
        self.k1("divide_rows", g.s * d, &args)
    }
    /// out[j] = the sum of column j of `src` (s rows, c columns): a bias gradient.
    pub(super) fn column_sums(
        &mut self,
        out: &DevBuf,
        src: &DevBuf,
        s: usize,
        c: usize,
    ) -> Result<(), String> {
        let args = [
            Arg::Ptr(out.ptr),
            Arg::Ptr(src.ptr),
            Arg::I64(s as i64),
            Arg::I32(c as i32),
        ];
        self.k1("column_sums", c, &args)
    }
    /// Mean of the rows of `h` (S×d) along the edges: gathers the messages
    /// (E×d, freed at once, as PyG's scatter frees x_j) then scatter-mean.
    pub(super) fn aggregate(&mut self, h: &DevBuf, d: usize, g: &Graph) -> Result<DevBuf, String> {
        let msgs = self.empty(g.e * d * 4)?;
        self.gather_rows(&msgs, h, &g.row, g.e, d)?;
        let agg = self.zeros(g.s * d * 4)?;
        self.scatter_add_rows(&agg, &msgs, &g.col, g.e, d)?;
        self.free(&[msgs])?;
        self.divide_rows(&agg, g, d)?;
        Ok(agg)
    }
}

/// The batch's graph on the device.
pub(super) struct Graph {
    pub(super) s: usize,
    pub(super) e: usize,
    pub(super) row: DevBuf,
    pub(super) col: DevBuf,
    pub(super) deg: DevBuf,
}
