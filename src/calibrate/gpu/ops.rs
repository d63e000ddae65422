//! What the GPU step needs from a device besides memory ([`Ops`]: copies,
//! memsets, kernel launches, one read-back) and what it feeds it: kernel
//! arguments and a sampled batch on the host. The real device is
//! `cuda.rs`; the tests' recording device is in `tests.rs`.

/// A kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Arg {
    /// A device pointer (0 for NULL).
    Ptr(u64),
    /// `long long`.
    I64(i64),
    /// `int`.
    I32(i32),
    /// `unsigned long long`.
    U64(u64),
    /// `float`.
    F32(f32),
}

/// What the step needs from a device besides memory.
pub trait Ops {
    /// Copies host bytes to a device pointer.
    fn upload(&mut self, dst: u64, bytes: &[u8]) -> Result<(), String>;
    /// Sets device bytes to zero.
    fn zero(&mut self, dst: u64, bytes: u64) -> Result<(), String>;
    /// Launches a kernel of `kernels::NAMES`.
    fn launch(
        &mut self,
        name: &'static str,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        args: &[Arg],
    ) -> Result<(), String>;
    /// Reads one float back (waits for the device).
    fn read_f32(&mut self, src: u64) -> Result<f32, String>;
}

/// A sampled batch on the host, as a worker hands it over.
#[derive(Debug, Clone, Default)]
pub struct HostBatch {
    /// Features of the S nodes, S×F.
    pub x: Vec<f32>,
    /// Labels of the S nodes.
    pub y: Vec<i64>,
    /// Global node ids.
    pub n_id: Vec<i64>,
    /// The seeds (input nodes).
    pub input: Vec<i64>,
    /// Local source per edge.
    pub row: Vec<i64>,
    /// Local destination per edge.
    pub col: Vec<i64>,
    /// Global edge ids.
    pub e_id: Vec<i64>,
}
