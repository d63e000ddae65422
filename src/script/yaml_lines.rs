//! The line of a key inside one mapping of a YAML config's text, following
//! the mapping's merge keys (`<<: *base`, `<<: [*a, *b]`) to the anchored
//! mapping the value really comes from, in PyYAML's order: the mapping's
//! own keys, then each merged mapping in the list's order.

/// Merges followed at most (a cycle of anchors ends).
const MAX_MERGES: usize = 8;

fn indent(l: &str) -> usize {
    l.len() - l.trim_start().len()
}

fn blank(l: &str) -> bool {
    let t = l.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// Whether `line` (trimmed of its indent) is `key:` (quoted or not).
fn is_key(line: &str, key: &str) -> bool {
    let t = line.trim_start().trim_start_matches(['"', '\'']);
    t.strip_prefix(key).is_some_and(|r| {
        r.trim_start_matches(['"', '\''])
            .trim_start()
            .starts_with(':')
    })
}

/// The 0-based line of `key` in the mapping whose own line is `at`
/// (0-based), through its merge keys; None when it is not there.
pub fn key_line(text: &str, at: usize, key: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    find(&lines, at, key, 0)
}

fn find(lines: &[&str], at: usize, key: &str, depth: usize) -> Option<usize> {
    let own = indent(lines.get(at)?);
    let block: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .skip(at + 1)
        .filter(|(_, l)| !blank(l))
        .take_while(|(_, l)| indent(l) > own)
        .map(|(i, l)| (i, *l))
        .collect();
    let child = block.first().map(|(_, l)| indent(l))?;
    let top = || block.iter().filter(|(_, l)| indent(l) == child);
    if let Some((i, _)) = top().find(|(_, l)| is_key(l, key)) {
        return Some(*i);
    }
    if depth >= MAX_MERGES {
        return None;
    }
    let (_, merge) = top().find(|(_, l)| is_key(l, "<<"))?;
    let aliases = merge.split_once(':')?.1;
    aliases
        .split(|c: char| c == ',' || c == '[' || c == ']' || c.is_whitespace())
        .filter_map(|a| a.strip_prefix('*'))
        .filter(|a| !a.is_empty())
        .find_map(|name| {
            let anchor = format!("&{name}");
            let (j, _) = lines.iter().enumerate().find(|(_, l)| {
                l.split_whitespace()
                    .any(|w| w == anchor || w.trim_end_matches(',') == anchor)
            })?;
            find(lines, j, key, depth + 1)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// skip-connections-inGNNs' conf/config.yaml, in its shape: the run's
    /// section merges a section that overrides what it merges itself.
    const TEXT: &str = "key: B_tuned\n\
base: &base\n  n_hid: 128\n  epochs: 11\n\
tuned: &tuned\n  <<: [*base]\n  n_hid: 256 # override\n\
skip: &skip\n  summary: lstm\n\
B_tuned: &B_tuned\n  <<: [*skip, *tuned]\n  lr: 0.1\n";

    #[test]
    fn a_merged_key_is_traced_to_the_mapping_that_gives_it() {
        let at = TEXT.lines().position(|l| l.starts_with("B_tuned")).unwrap();
        // Its own key; then skip's; then tuned's override, not base's.
        assert_eq!(key_line(TEXT, at, "lr"), Some(11));
        assert_eq!(key_line(TEXT, at, "summary"), Some(8));
        assert_eq!(key_line(TEXT, at, "n_hid"), Some(6));
        assert_eq!(key_line(TEXT, at, "epochs"), Some(3));
        assert_eq!(key_line(TEXT, at, "absent"), None);
    }

    #[test]
    fn anchors_that_merge_each_other_end() {
        let text = "a: &a\n  <<: *b\nb: &b\n  <<: *a\n";
        assert_eq!(key_line(text, 0, "x"), None);
    }
}
