//! The device kernels of the calibration's SAGE step, as CUDA C compiled at
//! run time by NVRTC: row gather (`x[index]`), degree count, scatter-add and
//! row division (scatter-mean), a tiled GEMM with optional transposes, bias
//! and accumulation, ReLU with dropout and its backward, softmax
//! cross-entropy with its gradient, the gradient of the mean aggregation,
//! column sums (bias gradients) and the SGD update. All row-major float32,
//! indices int64 as PyTorch keeps them.

/// Names of the kernels, in the order [`SOURCE`] defines them.
pub const NAMES: [&str; 10] = [
    "gather_rows",
    "count_degree",
    "scatter_add_rows",
    "divide_rows",
    "gemm",
    "relu_dropout",
    "relu_dropout_backward",
    "softmax_xent",
    "column_sums",
    "sgd",
];

/// Side of the GEMM's square tiles (and of its thread blocks).
pub const TILE: u32 = 16;

/// The CUDA C source.
pub const SOURCE: &str = r#"
typedef long long i64;
#define TILE 16

// out[i, :] = x[idx[i], :]
extern "C" __global__ void gather_rows(float* out, const float* x, const i64* idx, i64 n, int d) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * d) return;
    i64 r = i / d; int c = (int)(i % d);
    out[i] = x[idx[r] * d + c];
}

// deg[col[e]] += 1
extern "C" __global__ void count_degree(float* deg, const i64* col, i64 e) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < e) atomicAdd(&deg[col[i]], 1.0f);
}

// out[idx[i], :] += msgs[i, :]
extern "C" __global__ void scatter_add_rows(float* out, const float* msgs, const i64* idx, i64 n, int d) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * d) return;
    i64 r = i / d; int c = (int)(i % d);
    atomicAdd(&out[idx[r] * d + c], msgs[i]);
}

// out[i, :] /= deg[i] where deg[i] > 0
extern "C" __global__ void divide_rows(float* out, const float* deg, i64 s, int d) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s * d) return;
    float n = deg[i / d];
    if (n > 0.0f) out[i] /= n;
}

// C (m x n) = op(A) (m x k) . op(B) (k x n) [+ bias over columns] [+ C]
// A is m x k, or k x m when ta; B is k x n, or n x k when tb.
extern "C" __global__ void gemm(float* C, const float* A, const float* B, const float* bias,
                                int m, int n, int k, int ta, int tb, int acc) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int ty = threadIdx.y, tx = threadIdx.x;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float sum = 0.0f;
    for (int t0 = 0; t0 < k; t0 += TILE) {
        int ka = t0 + tx, kb = t0 + ty;
        As[ty][tx] = (row < m && ka < k) ? (ta ? A[(i64)ka * m + row] : A[(i64)row * k + ka]) : 0.0f;
        Bs[ty][tx] = (kb < k && col < n) ? (tb ? B[(i64)col * k + kb] : B[(i64)kb * n + col]) : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE; j++) sum += As[ty][j] * Bs[j][tx];
        __syncthreads();
    }
    if (row < m && col < n) {
        i64 o = (i64)row * n + col;
        float v = sum + (bias ? bias[col] : 0.0f);
        C[o] = acc ? C[o] + v : v;
    }
}

__device__ unsigned int mix(unsigned long long x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;
    return (unsigned int)x;
}

// relu = max(a + b, 0); mask = keep with p 0.5; h = relu * mask * 2
extern "C" __global__ void relu_dropout(float* relu, float* h, unsigned char* mask, const float* a,
                                        const float* b, i64 n, unsigned long long seed) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = fmaxf(a[i] + b[i], 0.0f);
    unsigned char keep = (mix(seed ^ (unsigned long long)i) & 1u) ? 1 : 0;
    relu[i] = v; mask[i] = keep; h[i] = keep ? 2.0f * v : 0.0f;
}

// dout = dh * mask * 2 where relu > 0
extern "C" __global__ void relu_dropout_backward(float* dout, const float* dh, const unsigned char* mask,
                                                 const float* relu, i64 n) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    dout[i] = (relu[i] > 0.0f && mask[i]) ? 2.0f * dh[i] : 0.0f;
}

// One thread per row: logits zl + zr; rows < seeds carry the mean loss.
extern "C" __global__ void softmax_xent(float* dlogit, float* loss, const float* zl, const float* zr,
                                        const i64* y, i64 seeds, i64 s, int c) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s) return;
    float* g = dlogit + i * c;
    if (i >= seeds) { for (int k = 0; k < c; k++) g[k] = 0.0f; return; }
    float m = -3.402823466e38f;
    for (int k = 0; k < c; k++) m = fmaxf(m, zl[i * c + k] + zr[i * c + k]);
    float sum = 0.0f;
    for (int k = 0; k < c; k++) sum += expf(zl[i * c + k] + zr[i * c + k] - m);
    i64 label = y[i]; if (label < 0) label = 0; if (label >= c) label = c - 1;
    for (int k = 0; k < c; k++) {
        float p = expf(zl[i * c + k] + zr[i * c + k] - m) / sum;
        g[k] = (p - (k == label ? 1.0f : 0.0f)) / (float)seeds;
        if (k == label) atomicAdd(loss, -logf(fmaxf(p, 1e-30f)) / (float)seeds);
    }
}

// out[j] = sum over rows of g[:, j]
extern "C" __global__ void column_sums(float* out, const float* g, i64 s, int c) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= c) return;
    float acc = 0.0f;
    for (i64 i = 0; i < s; i++) acc += g[i * c + j];
    out[j] = acc;
}

// w -= lr * g
extern "C" __global__ void sgd(float* w, const float* g, i64 n, float lr) {
    i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) w[i] -= lr * g[i];
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_kernel_is_defined_once() {
        for n in NAMES {
            let def = format!("__global__ void {n}(");
            assert_eq!(SOURCE.matches(&def).count(), 1, "{n}");
        }
        assert_eq!(SOURCE.matches("__global__").count(), NAMES.len());
        assert!(SOURCE.contains(&format!("#define TILE {TILE}")));
    }
}
