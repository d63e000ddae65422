//! A first pass over a pickle's opcodes that bounds the object it would
//! build, before serde-pickle builds it: nesting depth (serde-pickle recurses,
//! so a crafted file of nested lists would overflow the stack) and the size
//! of the tree after memo references are expanded (a few bytes of GETs can
//! stand for an exponential number of copies). Opcodes and their arguments
//! as listed in CPython's Lib/pickletools.py (protocols 0-5).

use std::collections::HashMap;

const LEAF: u32 = u32::MAX;

struct Walker<'a> {
    b: &'a [u8],
    i: usize,
    children: Vec<Vec<u32>>,
    stack: Vec<u32>,
    marks: Vec<usize>,
    memo: HashMap<u64, u32>,
}

impl Walker<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        let end = self
            .i
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or("truncated")?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }
    fn uint(&mut self, n: usize) -> Result<u64, String> {
        Ok(self
            .take(n)?
            .iter()
            .rev()
            .fold(0u64, |a, &x| (a << 8) | x as u64))
    }
    fn line(&mut self) -> Result<String, String> {
        let rest = &self.b[self.i..];
        let n = rest
            .iter()
            .position(|&c| c == b'\n')
            .ok_or("truncated text argument")?;
        self.i += n + 1;
        Ok(String::from_utf8_lossy(&rest[..n]).into_owned())
    }
    fn pop(&mut self) -> Result<u32, String> {
        self.stack
            .pop()
            .ok_or_else(|| "stack underflow".to_string())
    }
    fn pop_mark(&mut self) -> Result<Vec<u32>, String> {
        let m = self.marks.pop().ok_or("MARK missing")?;
        if m > self.stack.len() {
            return Err("MARK beyond the stack".into());
        }
        Ok(self.stack.split_off(m))
    }
    fn node(&mut self, kids: Vec<u32>) {
        self.children
            .push(kids.into_iter().filter(|&k| k != LEAF).collect());
        self.stack.push((self.children.len() - 1) as u32);
    }
    fn add_to_top(&mut self, kids: &[u32]) -> Result<(), String> {
        let top = *self.stack.last().ok_or("stack underflow")?;
        if top != LEAF {
            self.children[top as usize].extend(kids.iter().filter(|&&k| k != LEAF));
        }
        Ok(())
    }

    fn step(&mut self, op: u8) -> Result<bool, String> {
        match op {
            b'.' => return Ok(false),
            0x80 => drop(self.take(1)?),
            0x95 => drop(self.take(8)?),
            b'(' => self.marks.push(self.stack.len()),
            b'0' => drop(self.pop()?),
            b'1' => drop(self.pop_mark()?),
            b'2' => {
                let t = *self.stack.last().ok_or("stack underflow")?;
                self.stack.push(t);
            }
            b'N' | 0x88 | 0x89 | 0x97 => self.stack.push(LEAF),
            0x98 => {}
            b']' | b')' | b'}' | 0x8f => self.node(Vec::new()),
            b'a' => {
                let x = self.pop()?;
                self.add_to_top(&[x])?;
            }
            b's' => {
                let (v, k) = (self.pop()?, self.pop()?);
                self.add_to_top(&[k, v])?;
            }
            b'e' | b'u' | 0x90 => {
                let items = self.pop_mark()?;
                self.add_to_top(&items)?;
            }
            b'l' | b't' | b'd' | 0x91 | b'o' => {
                let items = self.pop_mark()?;
                self.node(items);
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                let at = self.stack.len().checked_sub(n).ok_or("stack underflow")?;
                let items = self.stack.split_off(at);
                self.node(items);
            }
            b'R' | 0x81 => {
                let (a, c) = (self.pop()?, self.pop()?);
                self.node(vec![c, a]);
            }
            0x92 => {
                let (k, a, c) = (self.pop()?, self.pop()?, self.pop()?);
                self.node(vec![c, a, k]);
            }
            b'b' => {
                let s = self.pop()?;
                self.add_to_top(&[s])?;
            }
            0x93 => {
                self.pop()?;
                self.pop()?;
                self.stack.push(LEAF);
            }
            b'c' => {
                self.line()?;
                self.line()?;
                self.stack.push(LEAF);
            }
            b'i' => {
                self.line()?;
                self.line()?;
                let items = self.pop_mark()?;
                self.node(items);
            }
            b'Q' => {
                self.pop()?;
                self.stack.push(LEAF);
            }
            0x94 => {
                let t = *self.stack.last().ok_or("stack underflow")?;
                self.memo.insert(self.memo.len() as u64, t);
            }
            b'q' | b'r' | b'p' => {
                let idx = match op {
                    b'q' => self.uint(1)?,
                    b'r' => self.uint(4)?,
                    _ => self.line()?.trim().parse().map_err(|_| "bad PUT index")?,
                };
                let t = *self.stack.last().ok_or("stack underflow")?;
                self.memo.insert(idx, t);
            }
            b'h' | b'j' | b'g' => {
                let idx = match op {
                    b'h' => self.uint(1)?,
                    b'j' => self.uint(4)?,
                    _ => self.line()?.trim().parse().map_err(|_| "bad GET index")?,
                };
                let t = *self.memo.get(&idx).ok_or("GET of an unknown memo entry")?;
                self.stack.push(t);
            }
            b'K' | 0x82 => self.leaf_after(1)?,
            b'M' | 0x83 => self.leaf_after(2)?,
            b'J' | 0x84 => self.leaf_after(4)?,
            b'G' => self.leaf_after(8)?,
            0x8a | b'U' | 0x8c | b'C' => {
                let n = self.uint(1)? as usize;
                self.leaf_after(n)?;
            }
            0x8b | b'T' | b'X' | b'B' => {
                let n = self.uint(4)? as usize;
                self.leaf_after(n)?;
            }
            0x8d | 0x8e | 0x96 => {
                let n = usize::try_from(self.uint(8)?).map_err(|_| "length overflows")?;
                self.leaf_after(n)?;
            }
            b'I' | b'L' | b'F' | b'S' | b'V' | b'P' => {
                self.line()?;
                self.stack.push(LEAF);
            }
            other => return Err(format!("unknown opcode 0x{other:02x}")),
        }
        Ok(true)
    }

    fn leaf_after(&mut self, n: usize) -> Result<(), String> {
        self.take(n)?;
        self.stack.push(LEAF);
        Ok(())
    }
}

/// Depth and expanded size of the tree under `root`, or an error for a cycle.
fn measure(children: &[Vec<u32>], root: u32) -> Result<(usize, u64), String> {
    // 0 = unseen, 1 = on the path, 2 = done
    let mut state = vec![0u8; children.len()];
    let mut depth = vec![0usize; children.len()];
    let mut size = vec![0u64; children.len()];
    let mut stack = vec![(root, 0usize)];
    state[root as usize] = 1;
    while let Some(&mut (n, ref mut next)) = stack.last_mut() {
        let kids = &children[n as usize];
        if *next < kids.len() {
            let k = kids[*next];
            *next += 1;
            match state[k as usize] {
                0 => {
                    state[k as usize] = 1;
                    stack.push((k, 0));
                }
                1 => return Err("recursive structure".into()),
                _ => {}
            }
        } else {
            let (d, s) = kids.iter().fold((0, 1u64), |(d, s), &k| {
                (d.max(depth[k as usize]), s.saturating_add(size[k as usize]))
            });
            depth[n as usize] = d + 1;
            size[n as usize] = s;
            state[n as usize] = 2;
            stack.pop();
        }
    }
    Ok((depth[root as usize], size[root as usize]))
}

/// Checks that the pickle in `bytes` is well formed and builds an object no
/// deeper than `max_depth` and with at most `max_nodes` containers.
pub fn check_pickle_shape(bytes: &[u8], max_depth: usize, max_nodes: u64) -> Result<(), String> {
    let mut w = Walker {
        b: bytes,
        i: 0,
        children: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
    };
    loop {
        let op = *w.b.get(w.i).ok_or("truncated: no STOP opcode")?;
        w.i += 1;
        if !w.step(op)? {
            break;
        }
    }
    let root = *w.stack.last().ok_or("empty pickle")?;
    if root == LEAF {
        return Ok(());
    }
    let (depth, nodes) = measure(&w.children, root)?;
    if depth > max_depth {
        return Err(format!(
            "nested {depth} levels deep (a memory snapshot has fewer than {max_depth})"
        ));
    }
    if nodes > max_nodes {
        return Err(format!("expands to more than {max_nodes} containers"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_and_expansion_are_bounded() {
        // [[[]]]: PROTO 4, ']' ']' ']' 'a' 'a' STOP -> depth 3, 3 containers.
        assert_eq!(check_pickle_shape(b"\x80\x04]]]aa.", 3, 3), Ok(()));
        assert!(
            check_pickle_shape(b"\x80\x04]]]aa.", 2, 10)
                .unwrap_err()
                .contains("3 levels")
        );
        // L = []; memoize; then twice: push L, push L, build a 2-tuple,
        // memoize. Each tuple holds two copies of the previous one: the tree
        // has 1 + 2 + 4 = 7 containers although the file has 3 of them.
        let doubling = b"\x80\x04]\x94h\x00h\x00\x86\x94h\x01h\x01\x86\x94.";
        assert_eq!(check_pickle_shape(doubling, 10, 7), Ok(()));
        assert!(check_pickle_shape(doubling, 10, 6).is_err());
        // A list that contains itself.
        assert!(
            check_pickle_shape(b"\x80\x04]\x94h\x00a.", 10, 10)
                .unwrap_err()
                .contains("recursive")
        );
        // Truncated arguments and stray opcodes are errors, not panics.
        assert!(check_pickle_shape(b"\x80\x04X\xff\xff\xff\x7f", 10, 10).is_err());
        assert!(check_pickle_shape(b"\x80\x04a.", 10, 10).is_err());
        assert!(check_pickle_shape(b"hello", 10, 10).is_err());
    }
}
