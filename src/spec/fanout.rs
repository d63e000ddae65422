//! A fanout list as people write it on a command line or pass it to python:
//! `15,10`, `15 10` or `[15, 10]`. An empty hop (`15,,10`, `15,`) is refused,
//! not skipped: the user meant some number there. The counts themselves (0,
//! negatives other than PyG's -1 for "all neighbours") are judged with the
//! rest of the job in `Job::from_spec`.

/// The hops of `text`, or why it is not a fanout list.
pub fn parse_fanout(text: &str) -> Result<Vec<i64>, String> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    let hops: Vec<&str> = if inner.contains(',') {
        inner.split(',').map(str::trim).collect()
    } else {
        inner.split_whitespace().collect()
    };
    hops.iter()
        .enumerate()
        .map(|(i, s)| match s.parse::<i64>() {
            Ok(n) => Ok(n),
            Err(_) if s.is_empty() => Err(format!(
                "fanout '{text}': hop {} is empty (write e.g. 15,10)",
                i + 1
            )),
            Err(_) => Err(format!("fanout '{text}': '{s}' is not a whole number")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_fanout;

    #[test]
    fn the_three_ways_of_writing_it() {
        for text in ["15,10", "15 10", "[15, 10]", " 15 , 10 "] {
            assert_eq!(parse_fanout(text), Ok(vec![15, 10]), "{text}");
        }
        assert_eq!(parse_fanout("-1"), Ok(vec![-1]));
    }

    #[test]
    fn empty_hops_and_words_are_refused() {
        for text in ["15,,10", "15,", ",10", "[15,,10]"] {
            assert!(parse_fanout(text).unwrap_err().contains("empty"), "{text}");
        }
        assert!(parse_fanout("15,ten").unwrap_err().contains("'ten'"));
    }
}
