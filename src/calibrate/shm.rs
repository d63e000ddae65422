//! Shared memory the calibration workload lives in: anonymous memfd files
//! (no name in /dev/shm, so nothing is left behind and no /dev/shm size limit
//! applies) mapped `MAP_SHARED`, inherited by the re-executed workers as file
//! descriptors, the way forked DataLoader workers share the parent's tensors
//! and hand batches back through `/dev/shm`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// One memfd and, while mapped, its mapping.
#[derive(Debug)]
pub struct Region {
    fd: OwnedFd,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; access is through &/&mut self.
unsafe impl Send for Region {}

fn last_error(what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

impl Region {
    /// A new memfd of `len` bytes, mapped read-write; inherited across exec
    /// (no MFD_CLOEXEC) so workers can map it by number.
    pub fn create(name: &str, len: usize) -> io::Result<Region> {
        let cname = std::ffi::CString::new(name).map_err(io::Error::other)?;
        // SAFETY: a valid C string and flags; the fd is checked below.
        let fd = unsafe { libc::memfd_create(cname.as_ptr(), 0) };
        if fd < 0 {
            return Err(last_error("memfd_create"));
        }
        // SAFETY: fd was just returned by memfd_create and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut r = Region {
            fd,
            ptr: std::ptr::null_mut(),
            len: 0,
        };
        r.resize(len)?;
        Ok(r)
    }

    /// Adopts an inherited descriptor (a worker's view); not mapped until [`Self::map`].
    ///
    /// # Safety
    /// `fd` must be an open memfd that nothing else in this process owns.
    pub unsafe fn adopt(fd: RawFd) -> Region {
        Region {
            // SAFETY: the caller guarantees ownership.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            ptr: std::ptr::null_mut(),
            len: 0,
        }
    }

    /// The descriptor number workers are told.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Drops the mapping (the file and its pages stay).
    pub fn unmap(&mut self) {
        if !self.ptr.is_null() {
            // SAFETY: ptr/len came from a successful mmap of exactly this size.
            unsafe { libc::munmap(self.ptr.cast(), self.len) };
        }
        self.ptr = std::ptr::null_mut();
        self.len = 0;
    }

    /// Sets the file to `len` bytes and maps all of it (0 frees every page:
    /// tmpfs gives truncated pages back at once).
    pub fn resize(&mut self, len: usize) -> io::Result<()> {
        self.unmap();
        // SAFETY: ftruncate on a descriptor we own.
        if unsafe { libc::ftruncate(self.fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(last_error("ftruncate"));
        }
        self.map(len)
    }

    /// Maps the first `len` bytes of the file (already that long).
    pub fn map(&mut self, len: usize) -> io::Result<()> {
        self.unmap();
        if len == 0 {
            return Ok(());
        }
        // SAFETY: a fresh shared mapping of our own descriptor; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                self.fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(last_error("mmap"));
        }
        self.ptr = p.cast();
        self.len = len;
        Ok(())
    }

    /// Bytes of pages the file holds (fstat's blocks): shared memory charged
    /// to the cgroup whether or not any process maps it.
    pub fn allocated_bytes(&self) -> u64 {
        allocated_bytes(self.fd.as_raw_fd())
    }

    /// Whether this process maps the file now.
    pub fn is_mapped(&self) -> bool {
        !self.ptr.is_null()
    }

    /// The mapping as bytes.
    pub fn bytes(&self) -> &[u8] {
        if self.ptr.is_null() {
            return &[];
        }
        // SAFETY: ptr is a live mapping of len bytes.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The mapping as writable bytes.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        if self.ptr.is_null() {
            return &mut [];
        }
        // SAFETY: ptr is a live, writable mapping of len bytes, borrowed uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// `count` elements of `T` at byte `offset` (aligned to 8 by the layouts here).
    pub fn slice<T: Pod>(&self, offset: usize, count: usize) -> &[T] {
        let b = &self.bytes()[offset..offset + count * size_of::<T>()];
        // SAFETY: in bounds (the index above checks), mapping is page-aligned and
        // offsets are multiples of 8, and T is plain data.
        unsafe { std::slice::from_raw_parts(b.as_ptr().cast(), count) }
    }

    /// Writable `count` elements of `T` at byte `offset`.
    pub fn slice_mut<T: Pod>(&mut self, offset: usize, count: usize) -> &mut [T] {
        let b = &mut self.bytes_mut()[offset..offset + count * size_of::<T>()];
        // SAFETY: as in `slice`, uniquely borrowed.
        unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr().cast(), count) }
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        self.unmap();
    }
}

/// Bytes of pages the open file `fd` holds (fstat's blocks), 0 if unknown.
pub fn allocated_bytes(fd: RawFd) -> u64 {
    // SAFETY: fstat writes only the struct it is given.
    let st = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return 0;
        }
        st
    };
    st.st_blocks as u64 * 512
}

/// Plain numbers that may be viewed in raw shared bytes.
pub trait Pod: Copy {}
impl Pod for i64 {}
impl Pod for f32 {}

/// Rounds up to a multiple of 8 so every array in a layout stays aligned.
pub fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_region_maps_writes_and_truncates() {
        let mut r = Region::create("t", 4096 * 2).unwrap();
        r.slice_mut::<i64>(8, 3).copy_from_slice(&[1, 2, 3]);
        assert_eq!(r.slice::<i64>(8, 3), &[1, 2, 3]);
        // A second mapping of the same file sees the same bytes.
        let mut view = unsafe { Region::adopt(libc::dup(r.raw_fd())) };
        view.map(4096 * 2).unwrap();
        assert_eq!(view.slice::<i64>(16, 1), &[2]);
        r.resize(0).unwrap();
        assert!(r.is_empty());
        assert_eq!(align8(13), 16);
    }
}
