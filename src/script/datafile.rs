//! A graph's size read from the files on disk, without Python: numpy's
//! `.npy` header (`{'descr': '<f4', 'fortran_order': False, 'shape': (N,
//! F), }`, numpy's format.py) and the members of an `.npz` (a zip archive
//! of `.npy` files, read through its central directory). Node features are
//! the array named `x`/`feat`/`features`/`node_feat`, edges `edge_index`
//! (2×E or E×2), labels `y`. Only headers are read; a compressed member
//! cannot be (it says so). PyTorch's zip format (`data.pt`) is read by
//! torchfile.rs.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// An array's element type and shape, from its header.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    /// numpy's `descr` (`<f4`) or torch's storage type (`float`).
    pub dtype: String,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Where its elements lie, when the header says (degree_file.rs reads
    /// an edge list's values from there).
    pub data: Option<DataAt>,
}

/// Where an array's elements lie in its file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DataAt {
    /// The zip member holding them; None for a plain `.npy` file.
    pub member: Option<String>,
    /// Bytes from the start of the member's data (or of the file) to element 0.
    pub offset: u64,
    /// Strides in elements, one per dimension.
    pub strides: Vec<u64>,
}

/// Bytes per element of the integer types an edge list is stored in.
pub fn elem_size(dtype: &str) -> Option<u64> {
    match dtype.trim_start_matches(['<', '=', '|']) {
        "i8" | "long" | "int64" => Some(8),
        "i4" | "int" | "int32" => Some(4),
        _ => None,
    }
}

/// Row-major (C order) strides of `shape`, in elements.
pub fn c_strides(shape: &[u64]) -> Vec<u64> {
    let mut out = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1].saturating_mul(shape[i + 1]);
    }
    out
}

/// The graph the arrays of a file make.
#[derive(Debug, Clone, PartialEq)]
pub struct FileGraph {
    /// Nodes (rows of the features, else of the labels).
    pub nodes: u64,
    /// Edges as stored.
    pub edges: u64,
    /// Feature dimension.
    pub features: u64,
    /// The features' element type as the profile names it.
    pub feature_dtype: &'static str,
}

/// The named arrays of `path` (an `.npz`, an `.npy`, or a torch zip).
pub fn arrays(path: &Path) -> Result<Vec<(String, Array)>, String> {
    let name = path
        .file_name()
        .map_or(String::new(), |n| n.to_string_lossy().to_string());
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if name.ends_with(".npy") {
        let stem = name.trim_end_matches(".npy").to_string();
        let mut head = vec![0u8; 4096];
        let n = f.read(&mut head).map_err(|e| e.to_string())?;
        return Ok(vec![(stem, npy_header(&head[..n])?)]);
    }
    let members = zip_members(&mut f)?;
    if members.iter().any(|m| m.name.ends_with("data.pkl")) {
        return super::torchfile::arrays(&mut f, &members);
    }
    let mut out = Vec::new();
    for m in members.iter().filter(|m| m.name.ends_with(".npy")) {
        if m.method != 0 {
            return Err(format!(
                "{}: {} is compressed (np.savez_compressed): its header cannot be read without inflating it",
                path.display(),
                m.name
            ));
        }
        let head = m.read(&mut f, 4096)?;
        let mut a = npy_header(&head)?;
        if let Some(d) = a.data.as_mut() {
            d.member = Some(m.name.clone());
        }
        out.push((m.name.trim_end_matches(".npy").to_string(), a));
    }
    Ok(out)
}

/// The graph `arrays` describe, when they name features and edges.
pub fn graph(arrays: &[(String, Array)]) -> Option<FileGraph> {
    let find = |names: &[&str]| {
        arrays
            .iter()
            .find(|(n, _)| names.contains(&n.rsplit('/').next().unwrap_or(n)))
            .map(|(_, a)| a)
    };
    let x = find(&[
        "x",
        "feat",
        "feats",
        "features",
        "node_feat",
        "node_features",
    ])?;
    let e = find(&["edge_index", "edges", "edge_list", "edge"])?;
    let nodes = *x.shape.first()?;
    let features = x.shape.get(1).copied().unwrap_or(1);
    let edges = match e.shape.as_slice() {
        [2, m] | [m, 2] => *m,
        [m] => *m,
        _ => return None,
    };
    let feature_dtype = match x.dtype.trim_start_matches(['<', '>', '|', '=']) {
        "f2" | "half" | "float16" => "float16",
        "f8" | "double" | "float64" => "float64",
        "i8" | "long" | "int64" => "int64",
        _ => "float32",
    };
    Some(FileGraph {
        nodes,
        edges,
        features,
        feature_dtype,
    })
}

/// Parses an `.npy` header.
pub fn npy_header(b: &[u8]) -> Result<Array, String> {
    if !b.starts_with(b"\x93NUMPY") || b.len() < 10 {
        return Err("not a .npy array".into());
    }
    let (len, start) = match b[6] {
        1 => (u16::from_le_bytes([b[8], b[9]]) as usize, 10),
        _ if b.len() >= 12 => (u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize, 12),
        _ => return Err("a truncated .npy header".into()),
    };
    let text = String::from_utf8_lossy(
        b.get(start..start + len.min(b.len() - start))
            .unwrap_or(&[]),
    );
    let field = |key: &str| -> Option<String> {
        let at = text.find(&format!("'{key}'"))?;
        let rest = text[at + key.len() + 2..]
            .trim_start()
            .strip_prefix(':')?
            .trim_start();
        Some(rest.to_string())
    };
    let descr = field("descr")
        .and_then(|d| {
            d.strip_prefix('\'')
                .and_then(|d| d.split('\'').next())
                .map(str::to_string)
        })
        .ok_or("no descr in the .npy header")?;
    let shape = field("shape").ok_or("no shape in the .npy header")?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or("a shape that is not a tuple")?;
    let shape: Result<Vec<u64>, _> = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::parse)
        .collect();
    let shape = shape.map_err(|_| "a shape that is not numbers")?;
    let mut strides = c_strides(&shape);
    if field("fortran_order").is_some_and(|f| f.starts_with("True")) {
        strides = c_strides(&shape.iter().rev().copied().collect::<Vec<_>>());
        strides.reverse();
    }
    Ok(Array {
        dtype: descr,
        data: Some(DataAt {
            member: None,
            offset: (start + len) as u64,
            strides,
        }),
        shape,
    })
}

/// A member of a zip archive, by its central directory.
pub struct Member {
    /// Its name in the archive.
    pub name: String,
    /// 0 stored, 8 deflated.
    pub method: u16,
    /// Offset of its local header.
    pub offset: u64,
    /// Its size as stored.
    pub size: u64,
}

impl Member {
    /// Where the member's data starts in the file (past its local header).
    pub fn data_start(&self, f: &mut std::fs::File) -> Result<u64, String> {
        let mut local = [0u8; 30];
        f.seek(SeekFrom::Start(self.offset))
            .map_err(|e| e.to_string())?;
        f.read_exact(&mut local).map_err(|e| e.to_string())?;
        if local[..4] != [0x50, 0x4b, 0x03, 0x04] {
            return Err(format!(
                "{}: a zip member without its local header",
                self.name
            ));
        }
        Ok(self.offset
            + 30
            + u16::from_le_bytes([local[26], local[27]]) as u64
            + u16::from_le_bytes([local[28], local[29]]) as u64)
    }

    /// The first `max` bytes of the member (stored members only).
    pub fn read(&self, f: &mut std::fs::File, max: usize) -> Result<Vec<u8>, String> {
        let start = self.data_start(f)?;
        f.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; max.min(self.size as usize)];
        f.read_exact(&mut buf).map_err(|e| e.to_string())?;
        Ok(buf)
    }
}

/// The members of the zip archive `f` (zip64 offsets not read).
pub fn zip_members(f: &mut std::fs::File) -> Result<Vec<Member>, String> {
    let len = f.seek(SeekFrom::End(0)).map_err(|e| e.to_string())?;
    let tail = len.min(65_557);
    f.seek(SeekFrom::Start(len - tail))
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; tail as usize];
    f.read_exact(&mut buf).map_err(|e| e.to_string())?;
    let eocd = (0..buf.len().saturating_sub(21))
        .rev()
        .find(|&i| buf[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or("not a zip archive")?;
    let u16_at = |b: &[u8], i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let count = u16_at(&buf, eocd + 10) as usize;
    let cd_size = u32_at(&buf, eocd + 12) as u64;
    let cd_off = u32_at(&buf, eocd + 16) as u64;
    if cd_size > 64 << 20 || cd_off + cd_size > len {
        return Err("a zip central directory out of the file".into());
    }
    f.seek(SeekFrom::Start(cd_off)).map_err(|e| e.to_string())?;
    let mut cd = vec![0u8; cd_size as usize];
    f.read_exact(&mut cd).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut i = 0;
    while out.len() < count && i + 46 <= cd.len() && cd[i..i + 4] == [0x50, 0x4b, 0x01, 0x02] {
        let n = u16_at(&cd, i + 28) as usize;
        let extra = u16_at(&cd, i + 30) as usize + u16_at(&cd, i + 32) as usize;
        let name = String::from_utf8_lossy(cd.get(i + 46..i + 46 + n).unwrap_or(&[])).to_string();
        out.push(Member {
            name,
            method: u16_at(&cd, i + 10),
            offset: u32_at(&cd, i + 42) as u64,
            size: u32_at(&cd, i + 20) as u64,
        });
        i += 46 + n + extra;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_of_both_versions() {
        let h = b"\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3700550, 17), }      \n";
        assert_eq!(
            npy_header(h).unwrap(),
            Array {
                dtype: "<f4".into(),
                shape: vec![3700550, 17],
                data: Some(DataAt {
                    member: None,
                    offset: 80,
                    strides: vec![17, 1]
                })
            }
        );
        let dict = b"{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }";
        let mut h = b"\x93NUMPY\x02\x00".to_vec();
        h.extend((dict.len() as u32).to_le_bytes());
        h.extend(dict);
        assert_eq!(npy_header(&h).unwrap().shape, vec![5]);
        assert!(npy_header(b"PK\x03\x04").is_err());
    }

    #[test]
    fn the_graph_of_named_arrays() {
        let a = |d: &str, s: &[u64]| Array {
            dtype: d.into(),
            shape: s.to_vec(),
            data: None,
        };
        let g = graph(&[
            ("x".into(), a("<f2", &[10, 4])),
            ("edge_index".into(), a("<i8", &[30, 2])),
        ])
        .unwrap();
        assert_eq!(
            g,
            FileGraph {
                nodes: 10,
                edges: 30,
                features: 4,
                feature_dtype: "float16"
            }
        );
        assert!(graph(&[("x".into(), a("<f4", &[10, 4]))]).is_none());
    }
}
