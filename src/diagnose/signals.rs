//! Linux signals by number: the name `kill -l` gives each (SIGKILL,
//! SIGRTMIN+10), and what usually sends it to a training job on a cluster,
//! as the parts of a sentence. Every number an exit status can carry gets a
//! whole phrase: a signal with no usual sender is said to be unusual rather
//! than put in the sender's place, and a number Linux never sends is said to
//! be one. `watch` and `diagnose` both name signals here.

/// The lowest real-time signal a process sees (glibc keeps 32 and 33 for its
/// threads, so `kill -l` starts SIGRTMIN at 34).
const SIGRTMIN: i32 = 34;
/// The highest signal number on Linux.
const SIGRTMAX: i32 = 64;

/// The name `kill -l` prints for `sig` (with `SIG`), or None where Linux
/// has no signal of that number for a process (0, 32, 33, above 64).
pub fn signal_name(sig: i32) -> Option<String> {
    let classic = match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        16 => "SIGSTKFLT",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        21 => "SIGTTIN",
        22 => "SIGTTOU",
        23 => "SIGURG",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        28 => "SIGWINCH",
        29 => "SIGIO",
        30 => "SIGPWR",
        31 => "SIGSYS",
        // bash's `kill -l` counts the first half up from SIGRTMIN and the
        // second half down from SIGRTMAX.
        s if s == SIGRTMIN => return Some("SIGRTMIN".into()),
        s if s == SIGRTMAX => return Some("SIGRTMAX".into()),
        s if (SIGRTMIN + 1..=SIGRTMIN + 15).contains(&s) => {
            return Some(format!("SIGRTMIN+{}", s - SIGRTMIN));
        }
        s if (SIGRTMIN + 16..SIGRTMAX).contains(&s) => {
            return Some(format!("SIGRTMAX-{}", SIGRTMAX - s));
        }
        _ => return None,
    };
    Some(classic.to_string())
}

/// Who usually sends `sig` to a training job, as a noun phrase that follows
/// "usually sent by"; None for a signal no one usually sends to one.
fn usual_sender(sig: i32) -> Option<&'static str> {
    Some(match sig {
        9 => {
            "the kernel or cgroup OOM killer, scancel --signal=KILL, or Slurm ending a step that ignored SIGTERM"
        }
        15 => {
            "Slurm at the time limit or on preemption, scancel, or a launcher shutting ranks down"
        }
        7 => {
            "the kernel on a bus error; in DataLoader workers almost always a full /dev/shm (containers default to 64 MiB)"
        }
        11 => {
            "the kernel on a segmentation fault in native code (an extension, a driver, a worker)"
        }
        13 => {
            "the kernel on a write to a pipe whose reader went away (`| head`, a dead tee, pipefail)"
        }
        6 => "abort() after a C++ exception or assertion in native code (NCCL, CUDA, a library)",
        2 => "Ctrl-C or a launcher forwarding an interrupt",
        1 => "the terminal going away (an ssh session closed without nohup)",
        24 => "the kernel at the CPU time limit (ulimit -t)",
        25 => "the kernel at the file size limit (ulimit -f)",
        10 | 12 => "sbatch --signal, before the time limit, when the job asked for it",
        _ => return None,
    })
}

/// What `sig` is and who usually sends it, as one phrase that can stand
/// after "= " or "killed by signal N: " (`SIGKILL, usually sent by …`).
pub fn signal_phrase(sig: i32) -> String {
    match (signal_name(sig), usual_sender(sig)) {
        (Some(name), Some(sender)) => format!("{name}, usually sent by {sender}"),
        (Some(name), None) if sig >= SIGRTMIN => {
            format!(
                "{name}, a real-time signal: only a program that means to sends one, never the kernel or Slurm"
            )
        }
        (Some(name), None) => {
            format!("{name}, which training jobs rarely get: find what sent it")
        }
        (None, _) if sig == 32 || sig == 33 => {
            "one of the two signals glibc keeps for its own threads: no process dies of one".into()
        }
        (None, _) => format!("a number no Linux signal has (they run from 1 to {SIGRTMAX})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are what the shell itself prints (`kill -l N`), where bash is.
    #[test]
    fn names_are_what_kill_l_prints() {
        let Ok(out) = std::process::Command::new("bash")
            .args([
                "-c",
                "for n in $(seq 1 64); do echo \"$n $(kill -l $n 2>/dev/null)\"; done",
            ])
            .output()
        else {
            eprintln!("skipped: no bash to ask `kill -l`");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        let mut compared = 0;
        for line in text.lines() {
            let mut words = line.split_whitespace();
            let n: i32 = words.next().unwrap().parse().unwrap();
            match words.next() {
                Some(name) => {
                    assert_eq!(signal_name(n), Some(format!("SIG{name}")), "signal {n}");
                    compared += 1;
                }
                None => assert_eq!(signal_name(n), None, "signal {n}: kill -l has none"),
            }
        }
        assert!(compared >= 60, "{compared} names compared:\n{text}");
    }
}
