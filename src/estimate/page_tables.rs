//! The page tables of forked DataLoader workers. `fork()` copies the
//! page-table entries of every anonymous page of the parent (mm/memory.c,
//! `copy_page_range`: only mappings with no anonymous pages are skipped
//! and left to fault), 8 bytes per 4 KiB page. They are kernel memory: a
//! memory cgroup charges them (cgroup v2 always, v1 in
//! `memory.usage_in_bytes` with its kmem counter), the OOM killer counts
//! them, and no process's RSS or USS shows them, so `worker_private_bytes`
//! (measured as workers' private pages) holds none of them.
//!
//! Measured here (benches/pyg/fork_page_tables.py): eight children forked
//! from a Python holding a 4 GiB tensor raised the cgroup's kmem by 73 MiB,
//! 9.1 MiB a child against 8 MiB from 4 GiB / 512 (the rest is the
//! children's own kernel objects). On DGraphFin's end-to-end run the cgroup's usage less its
//! anon, file and shmem was 53 MiB with 12 workers of a 2.1 GiB main
//! process (50 MiB by this rule) and 152 MiB with 12 workers of a 5.5 GiB
//! one (132 MiB). For ogbn-papers100M's 80 GiB main process that is
//! 160 MiB a worker.

/// Page-table bytes per byte of the parent's anonymous memory: one 8-byte
/// entry per 4 KiB page (transparent huge pages, which PyTorch's CPU
/// allocator does not ask for, would need 512 times less).
pub const PER_MAPPED_BYTE: f64 = 8.0 / 4096.0;

/// Kernel bytes of `workers` processes forked from a parent holding
/// `parent_anon` bytes of anonymous memory; 0 under RSS-sum accounting,
/// which sums RSS and sees no kernel memory.
pub fn forked_page_tables(workers: f64, parent_anon: f64, rss_sum: bool) -> f64 {
    if rss_sum {
        0.0
    } else {
        workers * parent_anon * PER_MAPPED_BYTE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_of_a_four_gib_parent_copies_eight_mib_of_entries() {
        let gib = f64::from(1u32 << 30);
        assert_eq!(
            forked_page_tables(1.0, 4.0 * gib, false),
            8.0 * 1024.0 * 1024.0
        );
        assert_eq!(
            forked_page_tables(12.0, 4.0 * gib, false),
            96.0 * 1024.0 * 1024.0
        );
        assert_eq!(forked_page_tables(12.0, 4.0 * gib, true), 0.0);
    }
}
