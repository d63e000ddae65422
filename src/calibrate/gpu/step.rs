//! The calibration's training step on a device: the same two-layer SAGE as
//! the CPU step (`train.rs`), its tensors allocated through the
//! device-backed caching allocator in the order autograd creates them and
//! freed when autograd would drop them, its arithmetic done by the kernels
//! of `kernels.rs`. Written against [`Ops`] so the allocation sequence runs
//! (and is tested) without a GPU.

use super::backed::{BackedAllocator, DevBuf, SegmentDriver};
use super::launch::{Graph, Step};
pub use super::ops::{Arg, HostBatch, Ops};

/// The model on the device: lin_l weight and bias and lin_r weight per layer.
#[derive(Debug, Clone)]
pub struct DeviceSage {
    w: [DevBuf; 6],
    dims: [usize; 3],
    lr: f32,
}

impl DeviceSage {
    /// Uploads a model from `features` through `hidden` to `classes`.
    pub fn new<D: SegmentDriver + Ops>(
        a: &mut BackedAllocator<D>,
        dims: [usize; 3],
        seed: u64,
    ) -> Result<DeviceSage, String> {
        let mut rng = crate::calibrate::rng::Rng::new(seed);
        let mut st = Step { a };
        let mut w = |st: &mut Step<D>, d_in: usize, d_out: usize, zero: bool| {
            let scale = (1.0 / d_in as f64).sqrt();
            let v: Vec<f32> = (0..d_in * d_out)
                .map(|_| {
                    if zero {
                        0.0
                    } else {
                        ((rng.next_f64() * 2.0 - 1.0) * scale) as f32
                    }
                })
                .collect();
            st.put(&v)
        };
        let [f, h, c] = dims;
        let w = [
            w(&mut st, f, h, false)?,
            w(&mut st, 1, h, true)?,
            w(&mut st, f, h, false)?,
            w(&mut st, h, c, false)?,
            w(&mut st, 1, c, true)?,
            w(&mut st, h, c, false)?,
        ];
        Ok(DeviceSage { w, dims, lr: 0.05 })
    }

    /// Bytes of the parameters.
    pub fn param_bytes(&self) -> u64 {
        self.w.iter().map(|b| b.bytes).sum()
    }

    /// One forward, backward and SGD step; `at_peak` runs when the step's
    /// allocations are at their largest (the messages' gradient beside every
    /// saved tensor). Returns the mean loss over the seeds.
    pub fn step<D: SegmentDriver + Ops>(
        &self,
        a: &mut BackedAllocator<D>,
        b: &HostBatch,
        seed: u64,
        at_peak: &mut dyn FnMut(&mut BackedAllocator<D>),
    ) -> Result<f32, String> {
        let [f, h, c] = self.dims;
        let (s, e, seeds) = (b.y.len(), b.row.len(), b.input.len().min(b.y.len()));
        let [w1l, b1l, w1r, w2l, b2l, w2r] = &self.w;
        let mut st = Step { a };
        // batch.to(device): every tensor the loader built.
        let inputs = [
            st.put(&b.n_id)?,
            st.put(&b.input)?,
            st.put(&b.y)?,
            st.put(&b.row)?,
            st.put(&b.col)?,
            st.put(&b.e_id)?,
            st.put(&b.x)?,
        ];
        let [_, _, y, row, col, _, x] = inputs;
        let deg = st.zeros(s * 4)?;
        st.k1(
            "count_degree",
            e,
            &[Arg::Ptr(deg.ptr), Arg::Ptr(col.ptr), Arg::I64(e as i64)],
        )?;
        let g = Graph {
            s,
            e,
            row,
            col,
            deg,
        };
        // Layer 1: lin_l(mean of x_j) + lin_r(x), ReLU, dropout.
        let agg1 = st.aggregate(&x, f, &g)?;
        let out1l = st.empty(s * h * 4)?;
        st.gemm(
            &out1l,
            &agg1,
            w1l,
            Some(b1l),
            (s, h, f),
            (false, false),
            false,
        )?;
        let out1r = st.empty(s * h * 4)?;
        st.gemm(&out1r, &x, w1r, None, (s, h, f), (false, false), false)?;
        let (relu, h1, mask) = (st.empty(s * h * 4)?, st.empty(s * h * 4)?, st.empty(s * h)?);
        let n1 = s * h;
        st.k1(
            "relu_dropout",
            n1,
            &[
                Arg::Ptr(relu.ptr),
                Arg::Ptr(h1.ptr),
                Arg::Ptr(mask.ptr),
                Arg::Ptr(out1l.ptr),
                Arg::Ptr(out1r.ptr),
                Arg::I64(n1 as i64),
                Arg::U64(seed),
            ],
        )?;
        // Layer 2 and the loss.
        let agg2 = st.aggregate(&h1, h, &g)?;
        let out2l = st.empty(s * c * 4)?;
        st.gemm(
            &out2l,
            &agg2,
            w2l,
            Some(b2l),
            (s, c, h),
            (false, false),
            false,
        )?;
        let out2r = st.empty(s * c * 4)?;
        st.gemm(&out2r, &h1, w2r, None, (s, c, h), (false, false), false)?;
        let dlogit = st.empty(s * c * 4)?;
        let loss = st.zeros(4)?;
        st.k1(
            "softmax_xent",
            s,
            &[
                Arg::Ptr(dlogit.ptr),
                Arg::Ptr(loss.ptr),
                Arg::Ptr(out2l.ptr),
                Arg::Ptr(out2r.ptr),
                Arg::Ptr(y.ptr),
                Arg::I64(seeds as i64),
                Arg::I64(s as i64),
                Arg::I32(c as i32),
            ],
        )?;
        // Backward, layer 2: weight gradients, d h1 through lin_r and through
        // the mean aggregation (messages' gradient materialised, then index_add).
        let (g2l, g2r, gb2) = (st.empty(h * c * 4)?, st.empty(h * c * 4)?, st.empty(c * 4)?);
        st.gemm(&g2l, &agg2, &dlogit, None, (h, c, s), (true, false), false)?;
        st.gemm(&g2r, &h1, &dlogit, None, (h, c, s), (true, false), false)?;
        st.column_sums(&gb2, &dlogit, s, c)?;
        let dagg2 = st.empty(s * h * 4)?;
        st.gemm(&dagg2, &dlogit, w2l, None, (s, h, c), (false, true), false)?;
        let dh1 = st.empty(s * h * 4)?;
        st.gemm(&dh1, &dlogit, w2r, None, (s, h, c), (false, true), false)?;
        st.divide_rows(&dagg2, &g, h)?;
        let dmsg = st.empty(e * h * 4)?;
        st.gather_rows(&dmsg, &dagg2, &g.col, e, h)?;
        at_peak(st.a);
        st.scatter_add_rows(&dh1, &dmsg, &g.row, e, h)?;
        st.free(&[dmsg, dagg2, agg2, out2l, out2r, dlogit])?;
        // Layer 1: through dropout and ReLU, then the weight gradients (the
        // input aggregate and x need none).
        let dout1 = st.empty(s * h * 4)?;
        st.k1(
            "relu_dropout_backward",
            n1,
            &[
                Arg::Ptr(dout1.ptr),
                Arg::Ptr(dh1.ptr),
                Arg::Ptr(mask.ptr),
                Arg::Ptr(relu.ptr),
                Arg::I64(n1 as i64),
            ],
        )?;
        st.free(&[dh1, relu, mask, h1])?;
        let (g1l, g1r, gb1) = (st.empty(f * h * 4)?, st.empty(f * h * 4)?, st.empty(h * 4)?);
        st.gemm(&g1l, &agg1, &dout1, None, (f, h, s), (true, false), false)?;
        st.gemm(&g1r, &x, &dout1, None, (f, h, s), (true, false), false)?;
        st.column_sums(&gb1, &dout1, s, h)?;
        st.free(&[dout1, agg1, out1l, out1r])?;
        // optimizer.step(), then zero_grad(set_to_none=True).
        let grads = [g1l, gb1, g1r, g2l, gb2, g2r];
        for (w, gr) in self.w.iter().zip(&grads) {
            let n = (w.bytes / 4) as usize;
            st.k1(
                "sgd",
                n,
                &[
                    Arg::Ptr(w.ptr),
                    Arg::Ptr(gr.ptr),
                    Arg::I64(n as i64),
                    Arg::F32(self.lr),
                ],
            )?;
        }
        let loss_value = st.a.driver_mut().read_f32(loss.ptr)?;
        st.free(&grads)?;
        st.free(&[loss, g.deg])?;
        st.free(&inputs)?;
        Ok(loss_value)
    }
}
