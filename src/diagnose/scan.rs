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
        .build(TRIGGERS)
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
        let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + MAX_LINE);
        let mut line_no: u64 = 1;
        let mut sniffed = 0;
        let mut last_byte = None;
        loop {
            let start = buf.len();
            buf.resize(start + CHUNK, 0);
            let n = read_some(&mut reader, &mut buf[start..])?;
            buf.truncate(start + n);
            stats.bytes += n as u64;
            if n > 0 {
                last_byte = buf.last().copied();
            }
            if sniffed < BINARY_SNIFF {
                let take = n.min(BINARY_SNIFF - sniffed);
                stats.binary |= memchr::memchr(0, &buf[start..start + take]).is_some();
                sniffed += take;
            }
            let eof = n == 0;
            let end = if eof || buf.len() >= CHUNK + MAX_LINE {
                buf.len()
            } else {
                match memchr::memrchr2(b'\n', b'\r', &buf) {
                    Some(i) => i + 1,
                    None => continue,
                }
            };
            let mut sink = Sink {
                evidence: &mut self.evidence,
                exit_from_logs: &mut self.exit_from_logs,
            };
            line_no = scan_region(&buf[..end], line_no, source, &mut parsers, &mut sink);
            buf.drain(..end);
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
