//! The second half of the pickle guard: given the containers the opcode
//! walk found (each with the bytes of its own leaves) and the links between
//! them, the depth and decoded size of the tree under the root, counting a
//! container shared through the memo once for every place it is used (that
//! is what serde-pickle's clones cost). A link back to a container still
//! being measured is a recursive structure, which serde-pickle cannot build.

/// (depth, decoded bytes) of the tree under `root`, or an error for a cycle.
pub(super) fn measure(
    own: &[u64],
    mut edges: Vec<(u32, u32)>,
    root: u32,
) -> Result<(usize, u64), String> {
    // Links grouped by parent (compressed rows): offsets[n]..offsets[n+1].
    edges.sort_unstable_by_key(|&(p, _)| p);
    let mut offsets = vec![0usize; own.len() + 1];
    for &(p, _) in &edges {
        offsets[p as usize + 1] += 1;
    }
    for i in 0..own.len() {
        offsets[i + 1] += offsets[i];
    }
    let kids = |n: u32| &edges[offsets[n as usize]..offsets[n as usize + 1]];
    // 0 = unseen, 1 = on the path, 2 = done
    let mut state = vec![0u8; own.len()];
    let mut depth = vec![0usize; own.len()];
    let mut size = vec![0u64; own.len()];
    let mut stack = vec![(root, 0usize)];
    state[root as usize] = 1;
    while let Some(&mut (n, ref mut next)) = stack.last_mut() {
        if let Some(&(_, k)) = kids(n).get(*next) {
            *next += 1;
            match state[k as usize] {
                0 => {
                    state[k as usize] = 1;
                    stack.push((k, 0));
                }
                1 => return Err("a recursive structure (a container inside itself)".into()),
                _ => {}
            }
        } else {
            let (d, s) = kids(n)
                .iter()
                .fold((0, own[n as usize]), |(d, s), &(_, k)| {
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
