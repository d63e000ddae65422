//! The training step of the calibration workload on the CPU: a two-layer
//! GraphSAGE (mean aggregation, `lin_l(mean of x_j) + lin_r(x)`, ReLU and
//! dropout after the first layer), softmax cross-entropy on the seed nodes,
//! backward by hand and an SGD update. It allocates what PyTorch's autograd
//! keeps for this model: the gathered messages `x_j` (Es·d_in) until
//! scatter-mean, the aggregate and both linear outputs per layer, the ReLU
//! and dropout outputs and the dropout mask, then gradient buffers.

use super::rng::Rng;

/// One layer's weights: lin_l (d_in×d_out, with bias) and lin_r (d_in×d_out).
#[derive(Debug, Clone)]
struct Layer {
    d_in: usize,
    d_out: usize,
    wl: Vec<f32>,
    bl: Vec<f32>,
    wr: Vec<f32>,
}

impl Layer {
    fn new(d_in: usize, d_out: usize, rng: &mut Rng) -> Layer {
        let scale = (1.0 / d_in as f64).sqrt();
        let mut w = || {
            (0..d_in * d_out)
                .map(|_| ((rng.next_f64() * 2.0 - 1.0) * scale) as f32)
                .collect::<Vec<f32>>()
        };
        let (wl, wr) = (w(), w());
        Layer {
            d_in,
            d_out,
            wl,
            bl: vec![0.0; d_out],
            wr,
        }
    }
}

/// The model and its learning rate.
#[derive(Debug, Clone)]
pub struct Sage {
    layers: [Layer; 2],
    lr: f32,
}

/// The edges of a batch in local indices, and which nodes are seeds.
#[derive(Debug, Clone, Copy)]
pub struct BatchView<'a> {
    /// Features of the S sampled nodes, row-major S×F.
    pub x: &'a [f32],
    /// Labels of the S sampled nodes.
    pub y: &'a [i64],
    /// Local source of each edge.
    pub row: &'a [i64],
    /// Local destination of each edge.
    pub col: &'a [i64],
    /// The first `seeds` nodes carry the loss.
    pub seeds: usize,
}

/// out (S×n) = a (S×k) · w (k×n), accumulated into `out`.
fn matmul_acc(a: &[f32], w: &[f32], k: usize, n: usize, out: &mut [f32]) {
    for (arow, orow) in a.chunks_exact(k).zip(out.chunks_exact_mut(n)) {
        for (&av, wrow) in arow.iter().zip(w.chunks_exact(n)) {
            for (o, &wv) in orow.iter_mut().zip(wrow) {
                *o += av * wv;
            }
        }
    }
}

/// grad_w (k×n) += aᵀ (k×S) · g (S×n).
fn matmul_t_acc(a: &[f32], g: &[f32], k: usize, n: usize, grad: &mut [f32]) {
    for (arow, grow) in a.chunks_exact(k).zip(g.chunks_exact(n)) {
        for (&av, gw) in arow.iter().zip(grad.chunks_exact_mut(n)) {
            for (o, &gv) in gw.iter_mut().zip(grow) {
                *o += av * gv;
            }
        }
    }
}

/// dx (S×k) += g (S×n) · wᵀ (n×k).
fn matmul_wt_acc(g: &[f32], w: &[f32], k: usize, n: usize, dx: &mut [f32]) {
    for (grow, drow) in g.chunks_exact(n).zip(dx.chunks_exact_mut(k)) {
        for (d, wrow) in drow.iter_mut().zip(w.chunks_exact(n)) {
            *d += grow.iter().zip(wrow).map(|(a, b)| a * b).sum::<f32>();
        }
    }
}

/// Mean of the messages into each destination: gathers x_j (Es·d) first, as PyG does.
fn aggregate(h: &[f32], d: usize, b: &BatchView, s: usize) -> (Vec<f32>, Vec<f32>) {
    let mut msgs = Vec::with_capacity(b.row.len() * d);
    for &r in b.row {
        msgs.extend_from_slice(&h[r as usize * d..(r as usize + 1) * d]);
    }
    let mut agg = vec![0.0f32; s * d];
    let mut deg = vec![0.0f32; s];
    for (m, &c) in msgs.chunks_exact(d).zip(b.col) {
        let c = c as usize;
        deg[c] += 1.0;
        for (a, &v) in agg[c * d..(c + 1) * d].iter_mut().zip(m) {
            *a += v;
        }
    }
    drop(msgs);
    for (row, &n) in agg.chunks_exact_mut(d).zip(&deg) {
        if n > 0.0 {
            row.iter_mut().for_each(|v| *v /= n);
        }
    }
    (agg, deg)
}

impl Sage {
    /// A model from `features` through `hidden` to `classes`.
    pub fn new(features: usize, hidden: usize, classes: usize, seed: u64) -> Sage {
        let mut rng = Rng::new(seed);
        Sage {
            layers: [
                Layer::new(features, hidden, &mut rng),
                Layer::new(hidden, classes, &mut rng),
            ],
            lr: 0.05,
        }
    }

    /// One forward, backward and SGD step; `at_peak` runs at the moments the
    /// step's memory can be largest (the messages' gradient alive beside
    /// every saved tensor; the weight gradients of the first layer).
    /// Returns the mean loss over the seeds.
    pub fn step(&mut self, b: &BatchView, rng: &mut Rng, at_peak: &mut dyn FnMut()) -> f32 {
        let [l1, l2] = &self.layers;
        let s = b.y.len();
        let (f, h, c) = (l1.d_in, l1.d_out, l2.d_out);
        // Layer 1.
        let (agg1, deg) = aggregate(b.x, f, b, s);
        let mut out1l: Vec<f32> = (0..s).flat_map(|_| l1.bl.iter().copied()).collect();
        matmul_acc(&agg1, &l1.wl, f, h, &mut out1l);
        let mut out1r = vec![0.0f32; s * h];
        matmul_acc(b.x, &l1.wr, f, h, &mut out1r);
        let relu: Vec<f32> = out1l
            .iter()
            .zip(&out1r)
            .map(|(a, b)| (a + b).max(0.0))
            .collect();
        let mask: Vec<u8> = (0..s * h)
            .map(|_| u8::from(rng.next_f64() >= 0.5))
            .collect();
        let h1: Vec<f32> = relu
            .iter()
            .zip(&mask)
            .map(|(&v, &m)| v * 2.0 * f32::from(m))
            .collect();
        // Layer 2.
        let (agg2, _) = aggregate(&h1, h, b, s);
        let mut out2l: Vec<f32> = (0..s).flat_map(|_| l2.bl.iter().copied()).collect();
        matmul_acc(&agg2, &l2.wl, h, c, &mut out2l);
        let mut out2r = vec![0.0f32; s * c];
        matmul_acc(&h1, &l2.wr, h, c, &mut out2r);
        // Softmax cross-entropy on the seeds: d logits.
        let seeds = b.seeds.min(s);
        let mut dlogit = vec![0.0f32; s * c];
        let mut loss = 0.0f32;
        for i in 0..seeds {
            let z: Vec<f32> = (0..c)
                .map(|k| out2l[i * c + k] + out2r[i * c + k])
                .collect();
            let m = z.iter().copied().fold(f32::MIN, f32::max);
            let e: Vec<f32> = z.iter().map(|v| (v - m).exp()).collect();
            let sum: f32 = e.iter().sum();
            let y = (b.y[i].max(0) as usize).min(c - 1);
            loss -= (e[y] / sum).ln();
            for k in 0..c {
                dlogit[i * c + k] = (e[k] / sum - f32::from(k == y)) / seeds as f32;
            }
        }
        // Backward, layer 2: weight gradients, then d h1 through lin_r and
        // through the mean aggregation (scattered back along the edges).
        let mut g2l = vec![0.0f32; h * c];
        let mut g2r = vec![0.0f32; h * c];
        matmul_t_acc(&agg2, &dlogit, h, c, &mut g2l);
        matmul_t_acc(&h1, &dlogit, h, c, &mut g2r);
        let mut dagg2 = vec![0.0f32; s * h];
        matmul_wt_acc(&dlogit, &l2.wl, h, c, &mut dagg2);
        let mut dh1 = vec![0.0f32; s * h];
        matmul_wt_acc(&dlogit, &l2.wr, h, c, &mut dh1);
        // Mean aggregation backward, as autograd runs it: the messages'
        // gradient (Es·H, grad_out[col] / degree) is materialised, then
        // index_add'ed into the sources.
        let mut dmsg = Vec::with_capacity(b.row.len() * h);
        for &cc in b.col {
            let cc = cc as usize;
            let n = deg[cc].max(1.0);
            dmsg.extend(dagg2[cc * h..(cc + 1) * h].iter().map(|g| g / n));
        }
        at_peak();
        for (m, &r) in dmsg.chunks_exact(h).zip(b.row) {
            let r = r as usize;
            for (d, &g) in dh1[r * h..(r + 1) * h].iter_mut().zip(m) {
                *d += g;
            }
        }
        drop(dmsg);
        // Layer 1: through dropout and ReLU, then the weight gradients.
        let dout1: Vec<f32> = dh1
            .iter()
            .zip(&mask)
            .zip(&relu)
            .map(|((&g, &m), &r)| if r > 0.0 { g * 2.0 * f32::from(m) } else { 0.0 })
            .collect();
        let mut g1l = vec![0.0f32; f * h];
        let mut g1r = vec![0.0f32; f * h];
        matmul_t_acc(&agg1, &dout1, f, h, &mut g1l);
        matmul_t_acc(b.x, &dout1, f, h, &mut g1r);
        at_peak();
        let b1: Vec<f32> = (0..h)
            .map(|k| dout1.iter().skip(k).step_by(h).sum())
            .collect();
        let b2: Vec<f32> = (0..c)
            .map(|k| dlogit.iter().skip(k).step_by(c).sum())
            .collect();
        let lr = self.lr;
        let [l1, l2] = &mut self.layers;
        let upd = |w: &mut [f32], g: &[f32]| w.iter_mut().zip(g).for_each(|(w, g)| *w -= lr * g);
        upd(&mut l1.wl, &g1l);
        upd(&mut l1.wr, &g1r);
        upd(&mut l1.bl, &b1);
        upd(&mut l2.wl, &g2l);
        upd(&mut l2.wr, &g2r);
        upd(&mut l2.bl, &b2);
        loss / seeds.max(1) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmuls_by_hand() {
        // [1 2; 3 4] · [1 0; 0 1] = itself; aᵀ·g and g·wᵀ on the same numbers.
        let a = [1.0, 2.0, 3.0, 4.0];
        let id = [1.0, 0.0, 0.0, 1.0];
        let mut out = [0.0; 4];
        matmul_acc(&a, &id, 2, 2, &mut out);
        assert_eq!(out, a);
        let mut g = [0.0; 4];
        matmul_t_acc(&a, &id, 2, 2, &mut g); // aᵀ = [1 3; 2 4]
        assert_eq!(g, [1.0, 3.0, 2.0, 4.0]);
        let mut dx = [0.0; 4];
        matmul_wt_acc(&id, &a, 2, 2, &mut dx); // wᵀ = [1 3; 2 4]
        assert_eq!(dx, [1.0, 3.0, 2.0, 4.0]);
    }

    #[test]
    fn training_on_a_fixed_batch_lowers_the_loss() {
        // Two nodes with distinct one-hot features and labels, each the other's neighbor.
        let x = [1.0, 0.0, 0.0, 1.0];
        let b = BatchView {
            x: &x,
            y: &[0, 1],
            row: &[1, 0],
            col: &[0, 1],
            seeds: 2,
        };
        let mut m = Sage::new(2, 8, 2, 1);
        let mut rng = Rng::new(2);
        let first = m.step(&b, &mut rng, &mut || {});
        let mut last = first;
        for _ in 0..200 {
            last = m.step(&b, &mut rng, &mut || {});
        }
        assert!(last < first * 0.5, "loss {first} → {last}");
    }
}
