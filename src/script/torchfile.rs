//! The tensors of a file `torch.save` wrote (PyTorch's zip format: an
//! `archive/data.pkl` pickle whose tensors are `_rebuild_tensor_v2(storage,
//! offset, size, stride, ...)` calls over persistent storages `('storage',
//! torch.FloatStorage, key, location, numel)`), read without Python: a small
//! pickle machine that builds strings, numbers, tuples, lists and dicts,
//! turns the rebuild calls into (dtype, shape) and keeps every other object
//! opaque. A PyG processed file (`(data_dict, slices, ...)` or a `Data`
//! whose state is such a dict) then names its tensors by their keys.

use std::collections::HashMap;

use super::datafile::{Array, Member};

/// Opcodes and objects past these stop the reading: the file is not a
/// plain processed dataset.
const MAX_OPS: usize = 2_000_000;
const MAX_PICKLE: usize = 64 << 20;

#[derive(Debug, Clone)]
enum Obj {
    Str(String),
    Int(i64),
    Tuple(Vec<Obj>),
    List(Vec<Obj>),
    Dict(Vec<(Obj, Obj)>),
    Global(String),
    /// A persistent storage: its type and its key in the archive's data/.
    Storage(String, String),
    Tensor(Array),
    Other,
    Mark,
}

/// The named tensors of the torch zip `f` with `members`.
pub fn arrays(f: &mut std::fs::File, members: &[Member]) -> Result<Vec<(String, Array)>, String> {
    let m = members
        .iter()
        .find(|m| m.name.ends_with("data.pkl"))
        .ok_or("no data.pkl")?;
    if m.method != 0 {
        return Err("a compressed data.pkl".into());
    }
    if m.size as usize > MAX_PICKLE {
        return Err(format!("a data.pkl of {} bytes", m.size));
    }
    let b = m.read(f, m.size as usize)?;
    let root = run(&b)?;
    let mut out = Vec::new();
    collect(&root, "", &mut out, 0);
    Ok(out)
}

/// Every tensor under `o`, named by the dict keys leading to it.
fn collect(o: &Obj, path: &str, out: &mut Vec<(String, Array)>, depth: usize) {
    if depth > 16 {
        return;
    }
    match o {
        Obj::Tensor(a) => out.push((path.to_string(), a.clone())),
        Obj::Dict(items) => {
            for (k, v) in items {
                let key = match k {
                    Obj::Str(s) => s.clone(),
                    _ => continue,
                };
                let p = if path.is_empty() {
                    key
                } else {
                    format!("{path}/{key}")
                };
                collect(v, &p, out, depth + 1);
            }
        }
        Obj::Tuple(v) | Obj::List(v) => {
            for x in v.iter().take(8) {
                collect(x, path, out, depth + 1);
            }
        }
        _ => {}
    }
}

fn dtype_of(storage: &str) -> String {
    let s = storage.rsplit('.').next().unwrap_or(storage);
    match s {
        "FloatStorage" => "float",
        "DoubleStorage" => "double",
        "HalfStorage" => "half",
        "BFloat16Storage" => "bfloat16",
        "LongStorage" => "long",
        "IntStorage" => "int",
        "BoolStorage" => "bool",
        "ByteStorage" => "uint8",
        _ => "float",
    }
    .to_string()
}

fn run(b: &[u8]) -> Result<Obj, String> {
    let mut stack: Vec<Obj> = Vec::new();
    let mut memo: HashMap<u32, Obj> = HashMap::new();
    let mut i = 0usize;
    let bad = || "a pickle the reader cannot follow".to_string();
    let take = |i: &mut usize, n: usize| -> Result<&[u8], String> {
        let s = b.get(*i..*i + n).ok_or("a truncated pickle")?;
        *i += n;
        Ok(s)
    };
    let pop_mark = |stack: &mut Vec<Obj>| -> Vec<Obj> {
        let at = stack
            .iter()
            .rposition(|o| matches!(o, Obj::Mark))
            .unwrap_or(0);
        let items = stack.split_off(at);
        items.into_iter().skip(1).collect()
    };
    for _ in 0..MAX_OPS {
        let op = *b.get(i).ok_or("a pickle without STOP")?;
        i += 1;
        match op {
            0x80 => i += 1,                             // PROTO
            0x95 => i += 8,                             // FRAME
            b'.' => return stack.pop().ok_or_else(bad), // STOP
            b'(' => stack.push(Obj::Mark),
            b'N' | 0x88 | 0x89 => stack.push(Obj::Other),
            b'}' => stack.push(Obj::Dict(vec![])),
            b']' => stack.push(Obj::List(vec![])),
            b')' => stack.push(Obj::Tuple(vec![])),
            b'J' => stack.push(Obj::Int(i32::from_le_bytes(
                take(&mut i, 4)?.try_into().map_err(|_| bad())?,
            ) as i64)),
            b'K' => stack.push(Obj::Int(take(&mut i, 1)?[0] as i64)),
            b'M' => stack.push(Obj::Int(u16::from_le_bytes(
                take(&mut i, 2)?.try_into().map_err(|_| bad())?,
            ) as i64)),
            0x8a => {
                let n = take(&mut i, 1)?[0] as usize;
                let bytes = take(&mut i, n)?;
                let mut v = 0i64;
                for (k, x) in bytes.iter().enumerate().take(8) {
                    v |= (*x as i64) << (8 * k);
                }
                stack.push(Obj::Int(v));
            }
            b'G' => {
                take(&mut i, 8)?;
                stack.push(Obj::Other);
            }
            b'X' | 0x8c | b'B' | b'C' | 0x8e => {
                let n =
                    match op {
                        0x8c | b'C' => take(&mut i, 1)?[0] as usize,
                        0x8e => u64::from_le_bytes(take(&mut i, 8)?.try_into().map_err(|_| bad())?)
                            as usize,
                        _ => u32::from_le_bytes(take(&mut i, 4)?.try_into().map_err(|_| bad())?)
                            as usize,
                    };
                let s = take(&mut i, n)?;
                stack.push(if matches!(op, b'X' | 0x8c) {
                    Obj::Str(String::from_utf8_lossy(s).to_string())
                } else {
                    Obj::Other
                });
            }
            b'c' => {
                let end = b[i..].iter().position(|c| *c == b'\n').ok_or_else(bad)?;
                let module = String::from_utf8_lossy(&b[i..i + end]).to_string();
                i += end + 1;
                let end = b[i..].iter().position(|c| *c == b'\n').ok_or_else(bad)?;
                let name = String::from_utf8_lossy(&b[i..i + end]).to_string();
                i += end + 1;
                stack.push(Obj::Global(format!("{module}.{name}")));
            }
            0x93 => {
                let name = stack.pop().ok_or_else(bad)?;
                let module = stack.pop().ok_or_else(bad)?;
                match (module, name) {
                    (Obj::Str(m), Obj::Str(n)) => stack.push(Obj::Global(format!("{m}.{n}"))),
                    _ => stack.push(Obj::Other),
                }
            }
            b'q' => {
                let k = take(&mut i, 1)?[0] as u32;
                memo.insert(k, stack.last().cloned().ok_or_else(bad)?);
            }
            b'r' => {
                let k = u32::from_le_bytes(take(&mut i, 4)?.try_into().map_err(|_| bad())?);
                memo.insert(k, stack.last().cloned().ok_or_else(bad)?);
            }
            0x94 => {
                let k = memo.len() as u32;
                memo.insert(k, stack.last().cloned().ok_or_else(bad)?);
            }
            b'h' => {
                let k = take(&mut i, 1)?[0] as u32;
                stack.push(memo.get(&k).cloned().ok_or_else(bad)?);
            }
            b'j' => {
                let k = u32::from_le_bytes(take(&mut i, 4)?.try_into().map_err(|_| bad())?);
                stack.push(memo.get(&k).cloned().ok_or_else(bad)?);
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let items = stack.split_off(stack.len().checked_sub(n).ok_or_else(bad)?);
                stack.push(Obj::Tuple(items));
            }
            b't' => {
                let items = pop_mark(&mut stack);
                stack.push(Obj::Tuple(items));
            }
            b'l' => {
                let items = pop_mark(&mut stack);
                stack.push(Obj::List(items));
            }
            b'd' => {
                let items = pop_mark(&mut stack);
                stack.push(Obj::Dict(
                    items
                        .chunks(2)
                        .filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone())))
                        .collect(),
                ));
            }
            b'e' => {
                let items = pop_mark(&mut stack);
                if let Some(Obj::List(l)) = stack.last_mut() {
                    l.extend(items);
                }
            }
            b'a' => {
                let v = stack.pop().ok_or_else(bad)?;
                if let Some(Obj::List(l)) = stack.last_mut() {
                    l.push(v);
                }
            }
            b's' => {
                let v = stack.pop().ok_or_else(bad)?;
                let k = stack.pop().ok_or_else(bad)?;
                if let Some(Obj::Dict(d)) = stack.last_mut() {
                    d.push((k, v));
                }
            }
            b'u' => {
                let items = pop_mark(&mut stack);
                if let Some(Obj::Dict(d)) = stack.last_mut() {
                    d.extend(
                        items
                            .chunks(2)
                            .filter_map(|p| Some((p.first()?.clone(), p.get(1)?.clone()))),
                    );
                }
            }
            b'Q' => {
                // BINPERSID: ('storage', storage_type, key, location, numel)
                let pid = stack.pop().ok_or_else(bad)?;
                let (kind, key) = match &pid {
                    Obj::Tuple(t) => (
                        match t.get(1) {
                            Some(Obj::Global(g)) => g.clone(),
                            _ => String::new(),
                        },
                        match t.get(2) {
                            Some(Obj::Str(k)) => k.clone(),
                            _ => String::new(),
                        },
                    ),
                    _ => (String::new(), String::new()),
                };
                stack.push(Obj::Storage(kind, key));
            }
            b'R' => {
                let args = stack.pop().ok_or_else(bad)?;
                let f = stack.pop().ok_or_else(bad)?;
                stack.push(reduce(&f, args));
            }
            0x81 => {
                let _args = stack.pop().ok_or_else(bad)?;
                let _cls = stack.pop().ok_or_else(bad)?;
                stack.push(Obj::Other);
            }
            b'b' => {
                // BUILD: a Data object's state is its dict of stores.
                let state = stack.pop().ok_or_else(bad)?;
                if let Some(top) = stack.last_mut()
                    && matches!(top, Obj::Other)
                {
                    *top = state;
                }
            }
            0x90 => {
                let items = pop_mark(&mut stack);
                stack.push(Obj::List(items)); // FROZENSET, as a list
            }
            0x91 => {
                let items = pop_mark(&mut stack);
                if let Some(Obj::List(l)) = stack.last_mut() {
                    l.extend(items); // ADDITEMS
                }
            }
            b'0' => {
                stack.pop();
            }
            b'1' => {
                pop_mark(&mut stack);
            }
            b'2' => {
                let top = stack.last().cloned().ok_or_else(bad)?;
                stack.push(top);
            }
            _ => return Err(format!("pickle opcode 0x{op:02x} at byte {}", i - 1)),
        }
    }
    Err("a pickle too long to follow".into())
}

/// A REDUCE: tensors rebuilt from storages; OrderedDict and friends kept as dicts.
fn reduce(f: &Obj, args: Obj) -> Obj {
    let name = match f {
        Obj::Global(g) => g.as_str(),
        _ => return Obj::Other,
    };
    let args = match args {
        Obj::Tuple(a) => a,
        _ => return Obj::Other,
    };
    if name.ends_with("_rebuild_tensor_v2") || name.ends_with("_rebuild_tensor") {
        let (dtype, key) = match args.first() {
            Some(Obj::Storage(s, k)) => (dtype_of(s), Some(k.clone())),
            _ => ("float".into(), None),
        };
        let ints = |o: Option<&Obj>| -> Vec<u64> {
            match o {
                Some(Obj::Tuple(s)) => s
                    .iter()
                    .filter_map(|x| match x {
                        Obj::Int(i) => u64::try_from(*i).ok(),
                        _ => None,
                    })
                    .collect(),
                _ => vec![],
            }
        };
        let shape = ints(args.get(2));
        let strides = ints(args.get(3));
        // The storage's member (`<archive>/data/<key>`) is named by key
        // alone here; degree_file.rs finds it among the members.
        let data = match (key, args.get(1)) {
            (Some(k), Some(Obj::Int(off))) if strides.len() == shape.len() => {
                super::datafile::elem_size(&dtype).map(|e| super::datafile::DataAt {
                    member: Some(format!("data/{k}")),
                    offset: (*off).max(0) as u64 * e,
                    strides,
                })
            }
            _ => None,
        };
        return Obj::Tensor(Array { dtype, shape, data });
    }
    if name.ends_with("OrderedDict") || name.ends_with("defaultdict") {
        return Obj::Dict(vec![]);
    }
    Obj::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dict_of_rebuilt_tensors() {
        // {'x': _rebuild_tensor_v2(('storage', torch.FloatStorage, '0', 'cpu', 40), 0, (10, 4), (4, 1))}
        let mut p: Vec<u8> = vec![0x80, 2, b'}', b'('];
        p.extend(b"X\x01\x00\x00\x00x");
        p.extend(b"ctorch._utils\n_rebuild_tensor_v2\n(");
        p.extend(b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK(tQ");
        p.extend(b"K\x00K\nK\x04\x86K\x04K\x01\x86tR");
        p.extend(b"u.");
        let root = run(&p).unwrap();
        let mut out = Vec::new();
        collect(&root, "", &mut out, 0);
        assert_eq!(
            out,
            vec![(
                "x".to_string(),
                Array {
                    dtype: "float".into(),
                    shape: vec![10, 4],
                    // A float tensor: only integer edge lists are located.
                    data: None
                }
            )]
        );
    }
}
