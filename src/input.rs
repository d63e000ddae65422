//! Reading a file the user named, as the one way every verb does it: only
//! a regular file (or `-` for standard input where the verb allows it),
//! never more than a stated number of bytes. A FIFO blocks until a writer
//! comes, a device like /dev/zero never ends and a directory or a symlink
//! loop gets a misleading "Is a directory"/"os error 40" from `read`, so the
//! file's type is checked first and named in the error.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::error::{Error, Result};
use crate::limits;

/// What a path is, when it is not a regular file.
fn special_kind(ft: &std::fs::FileType) -> Option<&'static str> {
    if ft.is_dir() {
        Some("is a directory")
    } else if ft.is_fifo() {
        Some("is a FIFO (named pipe)")
    } else if ft.is_char_device() {
        Some("is a character device")
    } else if ft.is_block_device() {
        Some("is a block device")
    } else if ft.is_socket() {
        Some("is a socket")
    } else {
        None
    }
}

/// Refuses `path` unless it is a regular file (or a FIFO, for a streamed
/// log when `fifo_ok`), naming what it is instead.
fn check_kind(path: &Path, what: &str, fifo_ok: bool) -> Result<()> {
    let shown = crate::output::shown(&path.display().to_string());
    let meta = std::fs::metadata(path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => Error::bad(format!("{shown}: is a symlink loop, not {what}")),
        _ => Error::io(path, e),
    })?;
    match special_kind(&meta.file_type()) {
        Some(_) if fifo_ok && meta.file_type().is_fifo() => Ok(()),
        Some(kind) => Err(Error::bad(format!(
            "{shown}: {kind}, not {what} (give a regular file, or - for standard input)"
        ))),
        None => Ok(()),
    }
}

/// Opens `path` for reading when it is a regular file; otherwise a one-line
/// error naming what it is instead (`what` says what the file should hold).
pub fn open_regular(path: &Path, what: &str) -> Result<File> {
    check_kind(path, what, false)?;
    // O_NONBLOCK: should the path be swapped for a FIFO after the check,
    // open does not wait for a writer; reads of a regular file ignore it.
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if let Some(kind) = special_kind(&meta.file_type()) {
        let shown = crate::output::shown(&path.display().to_string());
        return Err(Error::bad(format!("{shown}: {kind}, not {what}")));
    }
    Ok(file)
}

/// Opens a log to be streamed: a regular file or a FIFO (`<(dmesg)`), never
/// a device (/dev/zero would be read forever) or a directory.
pub fn open_log(path: &Path) -> Result<File> {
    check_kind(path, "a log file", true)?;
    File::open(path).map_err(|e| Error::io(path, e))
}

/// Reads all of `reader` up to `max` bytes; one byte more is an error.
fn read_capped(reader: impl Read, max: u64, name: &str, what: &str) -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(name, e))?;
    if bytes.len() as u64 > max {
        return Err(limits::exceeded(
            &format!("{} ({what})", crate::output::shown(name)),
            "the largest file",
            crate::units::fmt_bytes(max),
        ));
    }
    Ok(bytes)
}

/// The bytes of `path` (`-`: standard input, when `stdin_ok`), at most `max`.
pub fn read_file(path: &Path, what: &str, max: u64, stdin_ok: bool) -> Result<Vec<u8>> {
    if stdin_ok && path == Path::new("-") {
        return read_capped(std::io::stdin().lock(), max, "<stdin>", what);
    }
    let file = open_regular(path, what)?;
    // The size the file says it has is checked first so a huge one is
    // refused without reading; the capped read catches one that grows.
    if let Ok(m) = file.metadata()
        && m.len() > max
    {
        return Err(limits::exceeded(
            &format!(
                "{} ({what})",
                crate::output::shown(&path.display().to_string())
            ),
            "the largest file",
            crate::units::fmt_bytes(max),
        ));
    }
    read_capped(file, max, &path.display().to_string(), what)
}

/// The text of `path`, at most [`limits::MAX_TEXT_FILE_BYTES`], as UTF-8.
pub fn read_text(path: &Path, what: &str, stdin_ok: bool) -> Result<String> {
    let bytes = read_file(path, what, limits::MAX_TEXT_FILE_BYTES, stdin_ok)?;
    String::from_utf8(bytes).map_err(|_| {
        Error::bad(format!(
            "{}: not UTF-8 text, not {what}",
            crate::output::shown(&path.display().to_string())
        ))
    })
}
