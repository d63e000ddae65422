//! The CUDA caching-allocator simulator (work in progress).

pub mod cli;
