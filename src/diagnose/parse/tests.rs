//! The wordings of issue 14 through the whole scanner (line splitting at
//! `\r`, the trigger prefilter, every parser): each test feeds the bytes a
//! terminal or a tool writes and checks the evidence and numbers that come
//! out. The real logs these shapes come from are in the corpus test.

use crate::diagnose::LogScanner;
use crate::diagnose::category::Category;
use crate::diagnose::verdict::Findings;

fn scan(bytes: &[u8]) -> Findings {
    let mut scanner = LogScanner::new();
    scanner
        .scan_reader("t.log", bytes, false)
        .expect("in-memory read");
    scanner.finish()
}

fn kinds(f: &Findings) -> Vec<&'static str> {
    f.evidence.items().iter().map(|e| e.kind).collect()
}

fn number(f: &Findings, name: &str) -> Option<u64> {
    f.evidence
        .items()
        .iter()
        .find_map(|e| e.numbers.get(name).copied())
}

#[test]
fn killed_glued_to_a_tqdm_redraw_is_the_shells_word() {
    let f =
        scan(b"\r  0%|          | 0/2975\r 19%|##| 569/2975 [03:31<1:35:15,  2.38s/it]Killed\n");
    assert_eq!(kinds(&f), ["bare_killed"]);
    assert_eq!(f.evidence.items()[0].line, Some(1));
    // Inside a word it is not the shell's: "Killed" must end the line.
    assert!(kinds(&scan(b"[step 3] Killed workers: 0, restarting\n")).is_empty());
}

#[test]
fn zsh_fish_macos_and_windows_wordings() {
    let cases: [(&[u8], &str); 6] = [
        (b"zsh: killed     python train.py\n", "bare_killed"),
        (
            b"zsh: segmentation fault (core dumped)  python -c 'import torch_geometric'\n",
            "segmentation_fault",
        ),
        (
            b"fish: Job 1, 'python train.py' terminated by signal SIGKILL (Forced quit)\n",
            "bare_killed",
        ),
        (b"Killed: 9\n", "bare_killed"),
        (
            b"Process finished with exit code -1073741819 (0xC0000005)\n",
            "windows_access_violation",
        ),
        (
            b"[1]+  Killed                  python train.py\n",
            "bare_killed",
        ),
    ];
    for (text, kind) in cases {
        assert_eq!(
            kinds(&scan(text)),
            [kind],
            "{}",
            String::from_utf8_lossy(text)
        );
    }
    assert!(kinds(&scan(b"zsh: command not found: python\n")).is_empty());
}

#[test]
fn make_and_pipestatus_report_sigpipe() {
    let f = scan(b"make: *** [Makefile:95: create_full_environment] Error 141\n");
    assert_eq!(f.exit_from_logs.and_then(|s| s.signal), Some(13));
    let f = scan(b"$ seq 100000 | head -n 1; echo ${PIPESTATUS[@]}\n1\n141 0\n");
    assert_eq!(kinds(&f), ["pipestatus_141"]);
    // The values must follow the PIPESTATUS line closely.
    assert!(kinds(&scan(b"echo ${PIPESTATUS[@]}\na\nb\nc\nd\n141 0\n")).is_empty());
}

#[test]
fn sacct_default_layout_is_read_by_its_dashed_row() {
    let table = b"JobID           JobName  ReqCPUS     ReqMem     AveRSS     MaxRSS    Elapsed      State ExitCode
------------ ---------- -------- ---------- ---------- ---------- ---------- ---------- --------
569966          testjob        1         1M                         00:00:06 OUT_OF_ME+    0:125
569966.batch      batch        1                 1312K      1312K   00:00:06 OUT_OF_ME+    0:125
";
    let f = scan(table);
    let oom = f
        .evidence
        .items()
        .iter()
        .filter(|e| e.kind == "sacct_out_of_memory");
    assert_eq!(oom.count(), 2);
    assert_eq!(number(&f, "max_rss_bytes"), Some(1312 << 10));
    assert_eq!(f.exit_from_logs.and_then(|s| s.signal), Some(125));
}

#[test]
fn sacct_json_state_lines_and_seffs_meaningless_exit_code() {
    for line in [
        &b"        \"current\": [\n          \"OUT_OF_MEMORY\"\n        ],\n"[..],
        b"    \"state\": \"OUT_OF_MEMORY\",\n",
    ] {
        assert_eq!(kinds(&scan(line)), ["sacct_out_of_memory"]);
    }
    // seff prints the exit half of 0:125; it is not the job's status.
    let f = scan(b"State: OUT_OF_MEMORY (exit code 0)\n");
    assert_eq!(kinds(&f), ["sacct_out_of_memory"]);
    assert!(f.exit_from_logs.is_none());
    let f = scan(b"State: FAILED (exit code 1)\n");
    assert_eq!(f.exit_from_logs.and_then(|s| s.code), Some(1));
}

#[test]
fn torchrun_names_the_rank_that_failed_first() {
    let f = scan(b"ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917) of binary: /usr/bin/python\n");
    assert_eq!(number(&f, "failed_local_rank"), Some(3));
    assert_eq!(f.exit_from_logs.and_then(|s| s.signal), Some(9));
    let table = b"Root Cause (first observed failure):
[0]:
  time      : 2025-05-21_15:43:03
  rank      : 5 (local_rank: 1)
  exitcode  : -9 (pid: 14750)
  traceback : Signal 9 (SIGKILL) received by PID 14750
============================================================
";
    let f = scan(table);
    assert_eq!(number(&f, "failed_rank"), Some(5));
    assert_eq!(number(&f, "failed_local_rank"), Some(1));
}

#[test]
fn slurm_time_limit_with_the_node_after_the_reason() {
    let f = scan(b"slurmstepd: *** JOB 830329 CANCELLED AT 2018-08-06T17:21:44 DUE TO TIME LIMIT on n447 ***\n");
    assert_eq!(kinds(&f), ["slurm_job_id", "slurm_time_limit"]);
    assert_eq!(number(&f, "slurm_job_id"), Some(830329));
    // Before 22.05 the polling kill's figures are KiB...
    let f = scan(b"slurmstepd: error: Job 848444 exceeded memory limit (33715636 > 32757760), being killed\n");
    let kill = f
        .evidence
        .items()
        .iter()
        .find(|e| e.kind == "slurm_memory_limit_kill")
        .expect("kill");
    assert_eq!(kill.category, Category::HostOomRssSum);
    assert_eq!(number(&f, "slurm_limit_bytes"), Some(32757760 * 1024));
    // ...from 22.05 on they are bytes (real line from the sealed Slurm set).
    let f = scan(b"slurmstepd-vm: error: StepId=1.batch exceeded memory limit (356438016 > 314572800), being killed\n");
    assert_eq!(number(&f, "slurm_measured_bytes"), Some(356438016));
    assert_eq!(number(&f, "slurm_limit_bytes"), Some(314572800));
}

#[test]
fn host_allocation_refusals_carry_the_request() {
    let f = scan(b"RuntimeError: [enforce fail at alloc_cpu.cpp:81] data. DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.\n");
    assert_eq!(number(&f, "alloc_requested_bytes"), Some(1 << 30));
    assert_eq!(
        kinds(&scan(
            b"numpy.core._exceptions._ArrayMemoryError: Unable to allocate 3.5 GiB\n"
        )),
        ["python_memory_error"]
    );
    // torch's CUDA error type contains "MemoryError" but is not host memory.
    let f = scan(b"torch.cuda.OutOfMemoryError: CUDA out of memory.\n");
    assert!(!kinds(&f).contains(&"python_memory_error"));
}
