//! The opcode walk behind the pickle guard (pickle_guard.rs): the pickle
//! machine run without building anything, keeping per container only the
//! bytes of its own leaves and its links to other containers, so that what
//! serde-pickle would build can be measured first. A leaf pushed again by a
//! memo GET is weighed again at every place it lands, which is exactly
//! what serde-pickle's clones cost. Floats are tracked into tuples so that
//! one used as a dict key or set element is refused here.
use std::collections::HashMap;

use crate::limits::PICKLE_NODE_BYTES;

/// One stack slot: a leaf (its decoded bytes and whether it is or holds a
/// float) or a container, by index.
#[derive(Clone, Copy)]
pub(super) enum Item {
    Leaf { bytes: u64, float: bool },
    Node(u32),
}

/// A container: what its own leaves weigh, and whether it is a tuple or
/// frozenset holding a float (it would then be unorderable as a key).
pub(super) struct Node {
    pub(super) own: u64,
    pub(super) float: bool,
}

pub(super) struct Walker<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
    pub(super) nodes: Vec<Node>,
    /// (parent, child) links between containers.
    pub(super) edges: Vec<(u32, u32)>,
    pub(super) stack: Vec<Item>,
    pub(super) marks: Vec<usize>,
    pub(super) memo: HashMap<u64, Item>,
    /// The most objects (containers, their links, memo entries, stack
    /// slots) the walker itself may hold: each stands for at least one
    /// decoded object, so more already exceed the expansion limit.
    pub(super) max_objects: usize,
    pub(super) max_bytes: u64,
}

const FLOAT_KEY: &str =
    "a float as a dict key or set element (a memory snapshot has none; NaN cannot be ordered)";

fn is_float(item: Item, nodes: &[Node]) -> bool {
    match item {
        Item::Leaf { float, .. } => float,
        Item::Node(n) => nodes[n as usize].float,
    }
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
    fn line(&mut self) -> Result<&[u8], String> {
        let rest = &self.b[self.i..];
        let n = memchr::memchr(b'\n', rest).ok_or("truncated text argument")?;
        self.i += n + 1;
        Ok(&rest[..n])
    }
    fn index_line(&mut self) -> Result<u64, String> {
        let l = self.line()?;
        std::str::from_utf8(l)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| "bad memo index".into())
    }
    /// Every slot the walker adds passes here, so its own memory is bounded.
    fn budget(&self) -> Result<(), String> {
        let held = self.nodes.len() + self.edges.len() + self.memo.len() + self.stack.len();
        match held >= self.max_objects {
            true => Err(super::pickle_guard::too_big(self.max_bytes)),
            false => Ok(()),
        }
    }
    fn push(&mut self, item: Item) -> Result<(), String> {
        self.budget()?;
        self.stack.push(item);
        Ok(())
    }
    fn pop(&mut self) -> Result<Item, String> {
        self.stack
            .pop()
            .ok_or_else(|| "stack underflow".to_string())
    }
    pub(super) fn top(&self) -> Result<Item, String> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| "stack underflow".to_string())
    }
    fn pop_mark(&mut self) -> Result<Vec<Item>, String> {
        let m = self.marks.pop().ok_or("MARK missing")?;
        if m > self.stack.len() {
            return Err("MARK beyond the stack".into());
        }
        Ok(self.stack.split_off(m))
    }
    /// Puts `kids` into container `n` (a leaf top takes nothing: serde-pickle
    /// refuses to append to one).
    fn adopt(&mut self, n: u32, kids: &[Item]) {
        for &k in kids {
            match k {
                Item::Leaf { bytes, .. } => {
                    let own = &mut self.nodes[n as usize].own;
                    *own = own.saturating_add(bytes);
                }
                Item::Node(c) => self.edges.push((n, c)),
            }
        }
    }
    fn node(&mut self, kids: &[Item], float: bool) -> Result<(), String> {
        let n = self.nodes.len() as u32;
        self.nodes.push(Node {
            own: PICKLE_NODE_BYTES,
            float,
        });
        self.adopt(n, kids);
        self.push(Item::Node(n))
    }
    fn add_to_top(&mut self, kids: &[Item]) -> Result<(), String> {
        if let Item::Node(n) = self.top()? {
            self.adopt(n, kids);
        }
        Ok(())
    }
    fn keys_not_float<'k>(&self, mut keys: impl Iterator<Item = &'k Item>) -> Result<(), String> {
        match keys.any(|&k| is_float(k, &self.nodes)) {
            true => Err(FLOAT_KEY.into()),
            false => Ok(()),
        }
    }
    fn leaf(&mut self, payload: usize, float: bool) -> Result<(), String> {
        self.take(payload)?;
        self.push(Item::Leaf {
            bytes: PICKLE_NODE_BYTES + payload as u64,
            float,
        })
    }
    fn text_leaf(&mut self, float: bool) -> Result<(), String> {
        let n = self.line()?.len();
        self.push(Item::Leaf {
            bytes: PICKLE_NODE_BYTES + n as u64,
            float,
        })
    }

    pub(super) fn step(&mut self, op: u8) -> Result<bool, String> {
        match op {
            b'.' => return Ok(false),
            0x80 => drop(self.take(1)?),
            0x95 => drop(self.take(8)?),
            b'(' => {
                self.budget()?;
                self.marks.push(self.stack.len());
            }
            b'0' => drop(self.pop()?),
            b'1' => drop(self.pop_mark()?),
            b'2' => self.push(self.top()?)?,
            b'N' | 0x88 | 0x89 | 0x97 => self.leaf(0, false)?,
            0x98 => {}
            b']' | b')' | b'}' | 0x8f => self.node(&[], false)?,
            b'a' => {
                let x = self.pop()?;
                self.add_to_top(&[x])?;
            }
            b's' => {
                let (v, k) = (self.pop()?, self.pop()?);
                self.keys_not_float([k].iter())?;
                self.add_to_top(&[k, v])?;
            }
            b'e' => {
                let items = self.pop_mark()?;
                self.add_to_top(&items)?;
            }
            b'u' | 0x90 => {
                let items = self.pop_mark()?;
                let step = if op == b'u' { 2 } else { 1 };
                self.keys_not_float(items.iter().step_by(step))?;
                self.add_to_top(&items)?;
            }
            b'd' => {
                let items = self.pop_mark()?;
                self.keys_not_float(items.iter().step_by(2))?;
                self.node(&items, false)?;
            }
            0x91 => {
                let items = self.pop_mark()?;
                self.keys_not_float(items.iter())?;
                self.node(&items, false)?;
            }
            b't' | 0x85..=0x87 => {
                let items = match op {
                    b't' => self.pop_mark()?,
                    _ => {
                        let n = (op - 0x84) as usize;
                        let at = self.stack.len().checked_sub(n).ok_or("stack underflow")?;
                        self.stack.split_off(at)
                    }
                };
                let float = items.iter().any(|&k| is_float(k, &self.nodes));
                self.node(&items, float)?;
            }
            b'l' | b'o' => {
                let items = self.pop_mark()?;
                self.node(&items, false)?;
            }
            b'R' | 0x81 => {
                let (a, c) = (self.pop()?, self.pop()?);
                self.node(&[c, a], false)?;
            }
            0x92 => {
                let (k, a, c) = (self.pop()?, self.pop()?, self.pop()?);
                self.node(&[c, a, k], false)?;
            }
            b'b' => {
                let s = self.pop()?;
                self.add_to_top(&[s])?;
            }
            0x93 => {
                self.pop()?;
                self.pop()?;
                self.leaf(0, false)?;
            }
            b'c' => {
                self.line()?;
                self.line()?;
                self.leaf(0, false)?;
            }
            b'i' => {
                self.line()?;
                self.line()?;
                let items = self.pop_mark()?;
                self.node(&items, false)?;
            }
            b'Q' => {
                self.pop()?;
                self.leaf(0, false)?;
            }
            0x94 | b'q' | b'r' | b'p' => {
                let idx = match op {
                    0x94 => self.memo.len() as u64,
                    b'q' => self.uint(1)?,
                    b'r' => self.uint(4)?,
                    _ => self.index_line()?,
                };
                let t = self.top()?;
                self.budget()?;
                self.memo.insert(idx, t);
            }
            b'h' | b'j' | b'g' => {
                let idx = match op {
                    b'h' => self.uint(1)?,
                    b'j' => self.uint(4)?,
                    _ => self.index_line()?,
                };
                let t = *self.memo.get(&idx).ok_or("GET of an unknown memo entry")?;
                self.push(t)?;
            }
            b'K' | 0x82 => self.leaf(1, false)?,
            b'M' | 0x83 => self.leaf(2, false)?,
            b'J' | 0x84 => self.leaf(4, false)?,
            b'G' => self.leaf(8, true)?,
            0x8a | b'U' | 0x8c | b'C' => {
                let n = self.uint(1)? as usize;
                self.leaf(n, false)?;
            }
            0x8b | b'T' | b'X' | b'B' => {
                let n = self.uint(4)? as usize;
                self.leaf(n, false)?;
            }
            0x8d | 0x8e | 0x96 => {
                let n = usize::try_from(self.uint(8)?).map_err(|_| "length overflows")?;
                self.leaf(n, false)?;
            }
            b'F' => self.text_leaf(true)?,
            b'I' | b'L' | b'S' | b'V' | b'P' => self.text_leaf(false)?,
            other => return Err(format!("unknown opcode 0x{other:02x}")),
        }
        Ok(true)
    }
}
