//! Streaming over logs: reads any input in fixed-size chunks, finds the few
//! lines that contain a trigger word with one Aho-Corasick pass over the
//! chunk, and hands only those lines (cleaned: lossy UTF-8, no ANSI colour
//! codes) to the parsers. Memory is one chunk plus one line, whatever the
//! log's size.
//!
//! Lines end at `\n`, `\r\n` or a lone `\r` (tqdm redraws its bar with `\r`,
//! so one physical line can hold thousands of updates and an error message
//! after them). Line numbers count `\n` only, as an editor shows them.

use std::io::Read;
use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::clean::clean_line;
use super::evidence::{EvidenceSet, Location};
use super::exit::ExitStatus;
use super::parse::cuda_oom::CudaOom;
use super::parse::{LineParsers, Sink, TRIGGERS};
use super::verdict::Findings;

/// Bytes read at a time.
const CHUNK: usize = 1 << 20;
/// Longest line handed to the parsers; the rest of a longer line is skipped.
const MAX_LINE: usize = 64 << 10;
/// How far into an input NUL bytes mark it as binary (git's heuristic).
const BINARY_SNIFF: usize = 8 << 10;

/// Leftmost-first semantics let aho-corasick use its SIMD (Teddy) searcher;
/// any match will do, only its line matters.
static PREFILTER: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .build(TRIGGERS.iter().chain(super::parse::locale_words::TRIGGERS))
        .expect("static trigger list")
});

/// What was read from one input.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct InputStats {
    /// The input's name (`<stdin>` for `-`).
    pub source: String,
    /// Bytes read.
    pub bytes: u64,
    /// Lines read (counting `\n`; a last line without one counts too).
    pub lines: u64,
    /// Whether NUL bytes in its first 8 KiB mark it as binary.
    pub binary: bool,
}

/// Gathers evidence from any number of inputs, then hands it to the verdict.
#[derive(Debug, Default)]
pub struct LogScanner {
    evidence: EvidenceSet,
    exit_from_logs: Option<ExitStatus>,
    cuda_oom: Option<CudaOom>,
    loose: LineParsers,
    /// Bytes gathered before scanning (CHUNK; tests use tiny ones to split lines).
    chunk: Option<usize>,
}

impl LogScanner {
    /// A scanner with no evidence yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads one whole input (`sacct`: it is `sacct -P` output).
    pub fn scan_reader(
        &mut self,
        source: &str,
        mut reader: impl Read,
        sacct: bool,
    ) -> std::io::Result<InputStats> {
        let mut parsers = LineParsers::default();
        if sacct {
            parsers.expect_sacct();
        }
        let mut stats = InputStats {
            source: source.to_string(),
            ..InputStats::default()
        };
        // One buffer for the whole input, never re-zeroed: a pipe that hands
        // out 64 KiB per read must not cost a 1 MiB memset per read.
        let chunk = self.chunk.unwrap_or(CHUNK);
        let mut buf = vec![0u8; chunk + MAX_LINE];
        let mut filled = 0;
        let mut line_no: u64 = 1;
        let mut last_byte = None;
        let mut want = chunk;
        loop {
            let mut eof = false;
            while filled < want {
                let n = read_some(&mut reader, &mut buf[filled..])?;
                if n == 0 {
                    eof = true;
                    break;
                }
                let sniffed = (stats.bytes as usize).min(BINARY_SNIFF);
                let take = n.min(BINARY_SNIFF - sniffed);
                stats.binary |= memchr::memchr(0, &buf[filled..filled + take]).is_some();
                stats.bytes += n as u64;
                last_byte = Some(buf[filled + n - 1]);
                filled += n;
            }
            // Up to the last line end; without one, read on until the buffer is
            // full, and only a line longer than the buffer is split.
            let end = match memchr::memrchr2(b'\n', b'\r', &buf[..filled]) {
                _ if eof || filled == buf.len() => filled,
                Some(i) => i + 1,
                None => {
                    want = buf.len();
                    continue;
                }
            };
            want = chunk;
            if line_no == 1
                && buf[..filled]
                    .iter()
                    .find(|b| !b.is_ascii_whitespace())
                    .is_some_and(|&b| b == b'{')
            {
                // A whole JSON document (sacct --json) passed as a plain
                // input: its opening line has no trigger word.
                parsers.expect_json();
            }
            let mut sink = Sink {
                evidence: &mut self.evidence,
                exit_from_logs: &mut self.exit_from_logs,
            };
            line_no = scan_region(&buf[..end], line_no, source, &mut parsers, &mut sink);
            buf.copy_within(end..filled, 0);
            filled -= end;
            if eof {
                parsers.finish(&mut sink);
                break;
            }
        }
        stats.lines = line_no - 1 + u64::from(last_byte.is_some_and(|b| b != b'\n'));
        if let Some(oom) = parsers.cuda.first.take() {
            self.keep_cuda_oom(oom);
        }
        Ok(stats)
    }

    /// Evidence lines seen so far (kept or not).
    pub fn evidence_seen(&self) -> u64 {
        self.evidence.total()
    }

    /// Feeds one line that did not come from a file (a captured stderr tail).
    pub fn feed_line(&mut self, source: &str, line_no: u64, line: &str) {
        let mut sink = Sink {
            evidence: &mut self.evidence,
            exit_from_logs: &mut self.exit_from_logs,
        };
        let clean = clean_line(line.as_bytes());
        self.loose.feed(
            &Location {
                source,
                line: line_no,
            },
            &clean,
            &mut sink,
        );
    }

    /// Ends the scan: what was found, the exit status the logs reported, and
    /// the CUDA OOM numbers.
    pub fn finish(mut self) -> Findings {
        let mut sink = Sink {
            evidence: &mut self.evidence,
            exit_from_logs: &mut self.exit_from_logs,
        };
        self.loose.finish(&mut sink);
        if let Some(oom) = self.loose.cuda.first.take() {
            self.keep_cuda_oom(oom);
        }
        Findings {
            evidence: self.evidence,
            exit_from_logs: self.exit_from_logs,
            cuda_oom: self.cuda_oom,
        }
    }

    fn keep_cuda_oom(&mut self, oom: CudaOom) {
        if self
            .cuda_oom
            .as_ref()
            .is_none_or(|old| !old.is_complete() && oom.is_complete())
        {
            self.cuda_oom = Some(oom);
        }
    }
}

fn read_some(reader: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match reader.read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Scans complete lines in `region`, returning the line number after it.
fn scan_region(
    region: &[u8],
    mut line_no: u64,
    source: &str,
    parsers: &mut LineParsers,
    sink: &mut Sink<'_>,
) -> u64 {
    let mut pos = 0;
    while pos < region.len() {
        let start = if parsers.wants_every_line() {
            pos
        } else {
            match PREFILTER.find(&region[pos..]) {
                None => {
                    line_no += memchr::memchr_iter(b'\n', &region[pos..]).count() as u64;
                    break;
                }
                Some(m) => {
                    let hit = pos + m.start();
                    let ls = memchr::memrchr2(b'\n', b'\r', &region[pos..hit])
                        .map_or(pos, |i| pos + i + 1);
                    line_no += memchr::memchr_iter(b'\n', &region[pos..ls]).count() as u64;
                    ls
                }
            }
        };
        let le =
            memchr::memchr2(b'\n', b'\r', &region[start..]).map_or(region.len(), |i| start + i);
        let line = &region[start..le.min(start + MAX_LINE)];
        if !line.is_empty() {
            let clean = clean_line(line);
            parsers.feed(
                &Location {
                    source,
                    line: line_no,
                },
                &clean,
                sink,
            );
        }
        pos = le;
        if pos < region.len() {
            if region[pos] == b'\r' && region.get(pos + 1) == Some(&b'\n') {
                pos += 1;
            }
            if region[pos] == b'\n' {
                line_no += 1;
            }
            pos += 1;
        }
    }
    line_no
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A reader that hands out its data in the given (cycled) read sizes, so
    /// lines and CRLF pairs get split across reads.
    struct Trickle<'a> {
        data: &'a [u8],
        sizes: Vec<usize>,
        turn: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.sizes[self.turn % self.sizes.len()]
                .min(buf.len())
                .min(self.data.len());
            self.turn += 1;
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    proptest! {
        #[test]
        fn evidence_keeps_its_line_number_whatever_the_read_sizes(
            before in 0usize..300,
            crlf in any::<bool>(),
            sizes in prop::collection::vec(1usize..64, 1..8),
            chunk in 1usize..80,
            junk in prop::collection::vec(any::<u8>(), 0..400),
        ) {
            let eol: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut data = Vec::new();
            for i in 0..before {
                data.extend_from_slice(format!("step {i}\r 50%|#####| {i}/300").as_bytes());
                data.extend_from_slice(eol);
            }
            data.extend_from_slice(b"slurmstepd: error: Detected 1 oom_kill event in StepId=1.batch.");
            data.extend_from_slice(eol);
            data.extend_from_slice(&junk);
            let mut scanner = LogScanner { chunk: Some(chunk), ..LogScanner::new() };
            let stats = scanner
                .scan_reader("t.log", Trickle { data: &data, sizes, turn: 0 }, false)
                .unwrap();
            let newlines = data.iter().filter(|&&b| b == b'\n').count() as u64;
            let last_open = u64::from(data.last() != Some(&b'\n'));
            prop_assert_eq!(stats.lines, newlines + last_open);
            let findings = scanner.finish();
            let ev = findings.evidence.items().iter().find(|e| e.kind == "slurm_oom_kill_event").cloned();
            prop_assert_eq!(ev.and_then(|e| e.line), Some(before as u64 + 1));
        }
    }
}
