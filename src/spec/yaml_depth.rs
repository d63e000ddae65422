//! The check made before any YAML text reaches the parser: the number of
//! flow collections it opens, which bounds how deeply they can nest (see
//! [`crate::limits::MAX_YAML_FLOW_COLLECTIONS`]). Block nesting needs
//! indentation, so the file size limit already bounds it.

use crate::error::Result;
use crate::limits::{MAX_YAML_FLOW_COLLECTIONS, exceeded};

/// Refuses `text` when it opens more flow collections than the limit.
pub fn check(text: &str, source: &str) -> Result<()> {
    let openers = memchr::memchr2_iter(b'[', b'{', text.as_bytes()).count();
    if openers > MAX_YAML_FLOW_COLLECTIONS {
        return Err(exceeded(
            &crate::output::shown(source),
            "YAML nesting",
            format!("{openers} '[' and '{{' where at most {MAX_YAML_FLOW_COLLECTIONS} may open"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hundred_thousand_level_file_is_refused_before_parsing() {
        // The input that took 54 s in serde_yaml: `{a: ` nested 100,000 deep.
        // (How fast the refusal is belongs to a benchmark, not a timed test:
        // on a loaded 2-core machine this one failed at 500 ms.)
        let text = format!("{}1{}", "{a: ".repeat(100_000), "}".repeat(100_000));
        let err = check(&text, "deep.yaml").unwrap_err().to_string();
        assert!(
            err.contains("YAML nesting") && err.contains("100000"),
            "{err}"
        );
        assert!(check("loader: {fanout: [15, 10]}\n", "ok.yaml").is_ok());
    }
}
