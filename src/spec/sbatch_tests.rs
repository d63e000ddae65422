use super::*;
use crate::spec::DatasetRef;
use crate::units::Bytes;

const SCRIPT: &str = "#!/bin/bash\n#SBATCH --mem=256G\n#SBATCH --cpus-per-task=8\n#SBATCH --gres=gpu:a40:1\n\
    BATCH_SIZE=512\nNUM_NEIGHBORS=\"10 5\"\nNUM_WORKERS=0\n\
    srun python Train_OGBN_HPC_MiniBatch.py --dataset ogbn-papers100M --batch_size 1024 \\\n  --num_neighbors $NUM_NEIGHBORS --num_workers ${NUM_WORKERS}\n";

#[test]
fn reads_directives_variables_and_python_arguments() {
    let (spec, warnings) = parse(SCRIPT, "train.sbatch").unwrap();
    assert_eq!(spec.budget.host, Some(Bytes(256 << 30)));
    assert_eq!(spec.budget.gpu.as_deref(), Some("a40"));
    assert_eq!(spec.cpus, Some(8));
    assert_eq!(spec.loader.batch_size, 1024, "python's argument wins");
    assert_eq!(spec.loader.fanout, vec![10, 5]);
    assert_eq!(spec.loader.num_workers, 0);
    assert!(matches!(&spec.dataset, DatasetRef::Name(n) if n == "ogbn-papers100M"));
    let contradicted: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("BATCH_SIZE=512"))
        .collect();
    assert_eq!(contradicted.len(), 1, "{warnings:?}");
}

#[test]
fn mem_as_sbatch_reads_it() {
    // Slurm's GB is GiB (str_to_mbytes); 0 is the whole node, kept as 0
    // for the resolver to refuse or replace with --node-mem.
    for (mem, bytes) in [("256GB", 256u64 << 30), ("0", 0), ("512K", 1 << 20)] {
        let text = format!("#SBATCH --mem={mem}\npython t.py --dataset reddit\n");
        let (spec, _) = parse(&text, "s").unwrap();
        assert_eq!(spec.budget.host, Some(Bytes(bytes)), "{mem}");
    }
    let err = parse("#SBATCH --mem=1.5G\npython t.py --dataset reddit\n", "s").unwrap_err();
    assert!(err.to_string().contains("sbatch accepts"), "{err}");
}

#[test]
fn bare_mem_is_mebibytes_and_plain_gres_has_no_type() {
    let text = "#SBATCH --mem 4000\n#SBATCH --gres=gpu:2\npython t.py --dataset reddit\n";
    let (spec, _) = parse(text, "s").unwrap();
    assert_eq!(spec.budget.host, Some(Bytes(4000 << 20)));
    assert_eq!(spec.budget.gpu, None);
}

#[test]
fn an_empty_fanout_hop_on_the_python_line_is_refused() {
    let text = "python t.py --dataset reddit --num_neighbors 15,,10\n";
    let err = parse(text, "s").unwrap_err().to_string();
    assert!(err.contains("hop 2 is empty"), "{err}");
}

#[test]
fn a_script_without_dataset_is_refused() {
    let err = parse("#SBATCH --mem=1G\npython t.py\n", "s").unwrap_err();
    assert!(err.to_string().contains("names no dataset"));
}

#[test]
fn an_unknown_gpu_type_is_refused_as_plan_refuses_it() {
    let err = parse(
        "#SBATCH --gres=gpu:mi250x:1\npython t.py --dataset reddit\n",
        "s.sbatch",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        err,
        crate::script::gpu_unknown("s.sbatch:1 asks for GPU type 'mi250x' (--gres=gpu:mi250x:1)")
            .to_string()
    );
}

#[test]
fn doubling_a_variable_stops_at_the_limit_with_a_short_message() {
    // The script of the issue: 40 doublings would be 2^40 bytes.
    let mut text = "#!/bin/bash\nA=xxxxxxxx\n".to_string();
    text.push_str(&"A=$A$A\n".repeat(40));
    text.push_str("python t.py --dataset $A\n");
    let err = parse(&text, "bomb.sbatch").unwrap_err().to_string();
    assert!(err.contains("longest variable"), "{err}");
    assert!(err.len() < 600, "the message is {} bytes", err.len());
}
