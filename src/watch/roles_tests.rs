//! Roles from command lines as real jobs show them (`ps -o pid,ppid,args`
//! of a PyG training run with fork workers, and of Python's spawn method).

use super::*;

fn p(pid: u32, ppid: u32, comm: &str, cmdline: &str) -> NewProcess {
    NewProcess {
        pid,
        ppid,
        comm: comm.into(),
        cmdline: cmdline.into(),
    }
}

const TRAIN: &str = "/usr/bin/python3 train.py --epochs 3";

#[test]
fn fork_workers_train_then_eval_workers_while_train_ones_persist() {
    let mut book = RoleBook::default();
    // sbatch's script runs python, which forks 2 training workers and a
    // resource tracker.
    book.assign(
        0.0,
        vec![
            p(
                10,
                1,
                "bash",
                "/bin/bash /var/spool/slurmd/job42/slurm_script",
            ),
            p(11, 10, "python3", TRAIN),
        ],
        |pid| pid == 10,
    );
    book.assign(
        5.0,
        vec![
            p(12, 11, "python3", TRAIN),
            p(13, 11, "python3", TRAIN),
            p(
                14,
                11,
                "python3",
                "/usr/bin/python3 -c from multiprocessing.resource_tracker import main;main(5)",
            ),
        ],
        |_| false,
    );
    // A second loader's workers appear 60 s later while 12 and 13 live on.
    book.assign(65.0, vec![p(20, 11, "python3", TRAIN)], |_| false);
    book.assign(65.5, vec![p(21, 11, "python3", TRAIN)], |_| false);
    assert_eq!(book.role(10), Some(Role::Main));
    assert_eq!(book.role(11), Some(Role::Main));
    assert_eq!(book.role(12), Some(Role::TrainWorkers));
    assert_eq!(book.role(13), Some(Role::TrainWorkers));
    assert_eq!(book.role(14), Some(Role::Other));
    assert_eq!(book.role(20), Some(Role::EvalWorkers));
    assert_eq!(book.role(21), Some(Role::EvalWorkers));
    // Once every worker has gone, the next cohort is training again.
    book.retain(|pid| pid <= 11 || pid == 14);
    book.assign(130.0, vec![p(30, 11, "python3", TRAIN)], |_| false);
    assert_eq!(book.role(30), Some(Role::TrainWorkers));
}

#[test]
fn spawn_workers_are_workers_and_a_shell_out_is_other() {
    let mut book = RoleBook::default();
    book.assign(0.0, vec![p(1, 0, "python3", TRAIN)], |pid| pid == 1);
    book.assign(
        1.0,
        vec![
            p(
                2,
                1,
                "python3",
                "/usr/bin/python3 -c from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=5, pipe_handle=7) --multiprocessing-fork",
            ),
            p(3, 1, "nvidia-smi", "nvidia-smi --query-gpu=memory.used"),
        ],
        |_| false,
    );
    assert_eq!(book.role(2), Some(Role::TrainWorkers));
    assert_eq!(book.role(3), Some(Role::Other));
    assert!(!book.is_new(3));
    assert!(book.is_new(4));
}
