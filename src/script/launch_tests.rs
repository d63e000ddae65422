use super::*;

fn launch(text: &str) -> Launch {
    follow(text, Path::new("/jobs/run.sbatch")).unwrap()
}

#[test]
fn launchers_are_followed_to_the_script() {
    let l = launch(
        "#!/bin/bash\n#SBATCH -c 8\n#SBATCH --gres=gpu:a100:4\nBS=${BATCH:-2048}\n\
        srun --ntasks-per-node=1 torchrun --standalone --nproc_per_node gpu \\\n  src/train.py --batch_size $BS --workers $SLURM_CPUS_PER_TASK\n",
    );
    assert_eq!(l.script, PathBuf::from("/jobs/src/train.py"));
    assert_eq!(l.argv, ["--batch_size", "2048", "--workers", "8"]);
    assert_eq!(l.at, "run.sbatch:5");
    assert_eq!(
        l.ranks.unwrap().value,
        Value::Int(4),
        "gpu = the GPUs of the node"
    );
    let l = launch("cd code\npython -u -m trainer.main --config 'cfg a.yaml'\n");
    assert_eq!(l.script, PathBuf::from("/jobs/code/trainer/main.py"));
    assert_eq!(l.argv, ["--config", "cfg a.yaml"]);
    let l = launch("accelerate launch --multi_gpu --num_processes 2 train.py\n");
    assert_eq!(l.ranks.unwrap().value, Value::Int(2));
    let l = launch("mpirun -np 4 python3 train.py -b 8\n");
    assert_eq!(l.argv, ["-b", "8"]);
    let l = launch("python -m torch.distributed.run --nproc-per-node=3 train.py\n");
    assert_eq!(l.ranks.unwrap().value, Value::Int(3));
    let l = launch("CUDA_VISIBLE_DEVICES=0 nohup python -u t.py --x 1 > log 2>&1 &\n");
    assert_eq!(
        (l.script, l.argv),
        (
            PathBuf::from("/jobs/t.py"),
            vec!["--x".to_string(), "1".into()]
        )
    );
    assert!(follow("#SBATCH --mem=1G\necho hi\n", Path::new("s")).is_none());
}

#[test]
fn every_run_and_every_loop_value_is_a_launch() {
    let f = follow_all(
        "python a.py --epochs 3\nfor bs in 512 1024; do\n  python b.py --bs $bs\ndone\n",
        Path::new("/jobs/run.sh"),
    );
    let runs: Vec<(String, Vec<String>)> = f
        .runs
        .iter()
        .map(|l| (l.at.clone(), l.argv.clone()))
        .collect();
    assert_eq!(
        runs,
        [
            (
                "run.sh:1".to_string(),
                vec!["--epochs".to_string(), "3".into()]
            ),
            (
                "run.sh:3 (bs=512)".into(),
                vec!["--bs".into(), "512".into()]
            ),
            (
                "run.sh:3 (bs=1024)".into(),
                vec!["--bs".into(), "1024".into()]
            ),
        ]
    );
}

#[test]
fn a_launch_file_calling_another_binds_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("scripts/products")).unwrap();
    std::fs::write(
        root.join("scripts/train.sh"),
        "model=$2\nout=out/$model\npython main.py --mode train --out $out \\\n  $@ 2>&1 | tee $out/log\n",
    )
    .unwrap();
    std::fs::write(root.join("main.py"), "").unwrap();
    let top = root.join("scripts/products/x.sh");
    let text = "m=SAGE\nbash scripts/train.sh --model $m \\\n  --lr 0.01\n";
    std::fs::write(&top, text).unwrap();
    let f = follow_all(text, &top);
    let l = &f.runs[0];
    assert_eq!(l.script, root.join("main.py").canonicalize().unwrap());
    assert_eq!(
        l.argv,
        [
            "--mode", "train", "--out", "out/SAGE", "--model", "SAGE", "--lr", "0.01"
        ]
    );
    assert_eq!(l.at, "train.sh:3 (called at x.sh:2)");
    assert!(f.notes[0].contains("scripts/train.sh"), "{:?}", f.notes);
}
