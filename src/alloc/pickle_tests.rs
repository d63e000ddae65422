//! Tests of the pickle guard with the inputs that broke the snapshot
//! reader: a NaN in a set (a panic in serde-pickle's sort), one string
//! referenced a hundred thousand times (gigabytes from kilobytes), and
//! nesting and cycles.

use super::pickle_guard::{check_pickle_shape, check_with};
use super::snapshot::parse_snapshot;

/// PROTO 4, a 64 KiB string memoized, then a list of `copies` GETs of it:
/// 64 KiB + 3 bytes a copy of file, 64 KiB a copy decoded.
pub(crate) fn shared_leaf_bomb(copies: usize) -> Vec<u8> {
    let mut b = b"\x80\x04]\x94(X\x00\x00\x01\x00".to_vec();
    b.extend(std::iter::repeat_n(b'x', 1 << 16));
    b.push(0x94);
    b.extend(std::iter::repeat_n(*b"h\x01", copies).flatten());
    b.extend(b"e.");
    b
}

#[test]
fn nesting_and_expansion_are_bounded() {
    // [[[]]]: PROTO 4, ']' ']' ']' 'a' 'a' STOP -> depth 3, 3 containers.
    assert_eq!(check_with(b"\x80\x04]]]aa.", 3, 3 * 64), Ok(()));
    let err = check_with(b"\x80\x04]]]aa.", 2, 1000).unwrap_err();
    assert!(err.contains("3 levels"), "{err}");
    // L = []; memoize; then twice: push L, push L, build a 2-tuple,
    // memoize. Each tuple holds two copies of the previous one: the tree
    // has 1 + 2 + 4 = 7 containers although the file has 3 of them.
    let doubling = b"\x80\x04]\x94h\x00h\x00\x86\x94h\x01h\x01\x86\x94.";
    assert_eq!(check_with(doubling, 10, 7 * 64), Ok(()));
    assert!(check_with(doubling, 10, 6 * 64).is_err());
    // A list that contains itself.
    let err = check_with(b"\x80\x04]\x94h\x00a.", 10, 1000).unwrap_err();
    assert!(err.contains("recursive"), "{err}");
    // Truncated arguments and stray opcodes are errors, not panics.
    assert!(check_pickle_shape(b"\x80\x04X\xff\xff\xff\x7f").is_err());
    assert!(check_pickle_shape(b"\x80\x04a.").is_err());
    assert!(check_pickle_shape(b"hello").is_err());
}

#[test]
fn a_shared_leaf_is_counted_at_every_use() {
    // 100,000 copies of a 64 KiB string: 6.5 GB decoded from a 364 KB file
    // (the old guard counted one container and let it through).
    let bomb = shared_leaf_bomb(100_000);
    assert!(bomb.len() < 400_000);
    let t = std::time::Instant::now();
    let err = parse_snapshot(&bomb).unwrap_err();
    assert!(err.contains("largest expansion"), "{err}");
    assert!(t.elapsed().as_secs() < 2);
    // A handful of copies is fine for the guard.
    assert_eq!(check_pickle_shape(&shared_leaf_bomb(10)), Ok(()));
}

#[test]
fn a_float_key_or_set_element_is_refused_before_serde_pickle_sorts_it() {
    // {NaN, 1.0, NaN, 2}: EMPTY_SET MARK BINFLOAT(nan) ... ADDITEMS. This
    // panicked (exit 101) in the sort behind serde-pickle's BTreeSet.
    let nan = f64::NAN.to_be_bytes();
    let mut set = b"\x80\x04\x8f(G".to_vec();
    set.extend(nan);
    set.extend(b"G\x3f\xf0\x00\x00\x00\x00\x00\x00G");
    set.extend(nan);
    set.extend(b"K\x02\x90.");
    let err = parse_snapshot(&set).unwrap_err();
    assert!(err.contains("float as a dict key"), "{err}");
    // A float inside a tuple used as a dict key, and in a frozenset.
    let mut key = b"\x80\x04}(K\x01G".to_vec();
    key.extend(nan);
    key.extend(b"\x86K\x00u.");
    assert!(
        parse_snapshot(&key)
            .unwrap_err()
            .contains("float as a dict key")
    );
    let mut frozen = b"\x80\x04(G".to_vec();
    frozen.extend(nan);
    frozen.extend(b"\x91.");
    assert!(check_pickle_shape(&frozen).is_err());
    // Floats as values are fine: [1.5].
    assert_eq!(
        check_pickle_shape(b"\x80\x04]G\x3f\xf8\x00\x00\x00\x00\x00\x00a."),
        Ok(())
    );
}

#[test]
fn memo_and_marks_alone_cannot_grow_the_walker() {
    // A MEMOIZE opcode per byte keeps the walker's memo growing with no
    // push: it must still stop at the object limit, not at the end.
    let mut b = b"\x80\x04N".to_vec();
    b.extend(std::iter::repeat_n(0x94u8, 20_000));
    b.push(b'.');
    let err = check_with(&b, 64, 10_000 * 64).unwrap_err();
    assert!(err.contains("largest expansion"), "{err}");
}
