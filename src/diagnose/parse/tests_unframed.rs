//! Issue 25's misses through the whole scanner and the verdict: failures
//! printed without the frame the older parsers waited for (no traceback
//! header, no `RuntimeError:` prefix, another locale, markdown around the
//! line, a progress line under it). Each line is the shape a real report in
//! `tests/fixtures/diagnose/real/sealed.yaml` or the issue's own list holds.

use crate::diagnose::LogScanner;
use crate::diagnose::category::Category;
use crate::diagnose::report::Diagnosis;
use crate::diagnose::verdict::{Facts, verdict_from_evidence};

fn diagnose(text: &str) -> Diagnosis {
    let mut scanner = LogScanner::new();
    scanner
        .scan_reader("t.log", text.as_bytes(), false)
        .expect("in-memory read");
    verdict_from_evidence(scanner.finish(), &Facts::default())
}

fn category(text: &str) -> Category {
    diagnose(text).category
}

#[test]
fn th_and_aten_errors_without_a_traceback_are_python_errors() {
    // PyTorch 1.x's TH message, pasted alone.
    let th = "RuntimeError: index out of range: Tried to access index 50257 out of table with 50256 rows. at /pytorch/aten/src/TH/generic/THTensorEvenMoreMath.cpp:418";
    assert_eq!(category(th), Category::PythonError);
    // IPython's traceback has no "Traceback (most recent call last):" header.
    let ipython = "-> 2233 return torch.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)\n\nIndexError: index out of range in self\n";
    assert_eq!(category(ipython), Category::PythonError);
    // A word ending in Error inside a sentence is not an exception line.
    assert_eq!(
        category("the loader raised no ValueError here\n"),
        Category::Unknown
    );
}

#[test]
fn device_side_assert_lines_are_python_errors() {
    let lines = "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:60: lambda [](int)->auto::operator()(int)->auto: block: [0,0,0], thread: [32,0,0] Assertion `index >= -sizes[i] && index < sizes[i] && \"index out of bounds\"` failed.\n../aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: [134,0,0], thread: [1,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n";
    let d = diagnose(lines);
    assert_eq!(d.category, Category::PythonError);
    assert_eq!(d.evidence[0].kind, "cuda_device_assert");
    assert_eq!(
        category("RuntimeError: CUDA error: device-side assert triggered\n"),
        Category::PythonError
    );
}

#[test]
fn a_worker_bus_error_split_over_three_lines_is_shm() {
    let text = "DataLoader worker (pid 13176) is killed by signal: Bus\nerror. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared\nmemory limit.\n";
    let d = diagnose(text);
    assert_eq!(d.category, Category::ShmBusError);
    assert_eq!(d.numbers.get("worker_pid"), Some(&13176));
    // Cut right after "signal:" as well.
    let cut = "DataLoader worker (pid 20991) is killed by signal:\nBus error. Details are lost due to multiprocessing.\n";
    assert_eq!(category(cut), Category::ShmBusError);
}

#[test]
fn a_segfault_after_a_dataset_download_is_a_segfault() {
    let plain = "Extracting ./data/MNIST/raw/t10k-labels-idx1-ubyte.gz to ./data/MNIST/raw\nProcessing...\nDone!\nSegmentation fault (core dumped)\n";
    assert_eq!(category(plain), Category::Segfault);
    let glued = "Files already downloaded and verified\nDone!Segmentation fault (core dumped)\n";
    assert_eq!(category(glued), Category::Segfault);
    assert_eq!(
        category("**Segmentation fault (core dumped)**\n"),
        Category::Segfault
    );
}

#[test]
fn a_worker_killed_by_sigsegv_is_a_segfault_that_killed_a_worker() {
    let d = diagnose(
        "RuntimeError: DataLoader worker (pid 7699) is killed by signal: Segmentation fault. Details are lost due to multiprocessing. Rerunning with num_workers=0 may give better error trace.\n",
    );
    assert_eq!(d.category, Category::Segfault);
    assert_eq!(d.chain, vec![Category::DataloaderWorkerKilled]);
    assert!(
        d.verdict.contains("DataLoader worker (pid 7699)"),
        "{}",
        d.verdict
    );
}

#[test]
fn a_kubelet_eviction_is_not_the_kernels_oom_killer() {
    let evicted = diagnose(
        "Message:        The node was low on resource: memory. Container egg was using 5053216Ki, which exceeds its request of 0.\n",
    );
    assert_eq!(evicted.category, Category::HostOomKernel);
    assert!(
        evicted.verdict.contains("kubelet evicted the pod"),
        "{}",
        evicted.verdict
    );
    assert!(evicted.verdict.contains("OOM killer did not act"));
    let kernel = diagnose(
        "[2059991.491542] Out of memory: Killed process 25315 (python3) total-vm:53312244kB, anon-rss:31451456kB, file-rss:74816kB, shmem-rss:12296kB, UID:0 pgtables:69068kB oom_score_adj:0\n",
    );
    assert!(
        kernel.verdict.contains("kernel's OOM killer killed"),
        "{}",
        kernel.verdict
    );
    assert!(!kernel.verdict.contains("kubelet"));
}

#[test]
fn a_1x_cuda_oom_for_2_mib_names_both_causes_it_fits() {
    // 10.9 GiB of the card not explained by this process's 20 MiB reserved,
    // and 2.81 MiB reserved but unallocated against a 2 MiB request.
    let d = diagnose(
        "RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB (GPU 0; 10.92 GiB total capacity; 17.19 MiB already allocated; 3.38 MiB free; 20.00 MiB reserved in total by PyTorch)\n",
    );
    assert_eq!(d.category, Category::CudaOomOtherProcess);
    assert!(
        d.verdict.contains("also fit fragmentation"),
        "{}",
        d.verdict
    );
    assert!(d.verdict.contains("CUDA context"), "{}", d.verdict);
    assert!(d.verdict.contains("nvidia-smi"));
    // 2.1+ counts the process's own memory: no context caveat then.
    let v2 = diagnose(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 23.65 GiB of which 1.06 MiB is free. Process 9 has 20.00 GiB memory in use. Including non-PyTorch memory, this process has 3.60 GiB memory in use. Of the allocated memory 3.10 GiB is allocated by PyTorch, and 1.00 MiB is reserved by PyTorch but unallocated.\n",
    );
    assert_eq!(v2.category, Category::CudaOomOtherProcess);
    assert!(!v2.verdict.contains("CUDA context"), "{}", v2.verdict);
    assert!(!v2.verdict.contains("also fit fragmentation"));
}

#[test]
fn kills_in_other_locales_and_in_markdown_are_kills() {
    for text in [
        "  0%|          | 0/16733 [00:00<?, ?b/s]\n已杀死\n",
        "/var/spool/slurmd/job42/slurm_script: Zeile 25: 1613720 Getötet                 python train.py\n",
        "**Killed**\n",
        "> **Killed**\n",
        "`Killed`\n",
        "Killedg in train batch: 127687 / 263115\n",
    ] {
        assert_eq!(category(text), Category::HostOomKernel, "{text}");
    }
    // "Killed" starting an ordinary word with no figures is not the shell's.
    assert_eq!(category("Killedmode enabled\n"), Category::Unknown);
}

#[test]
fn a_launchers_died_with_sigkill_is_the_cause_not_its_python_error() {
    let text = "Traceback (most recent call last):\n  File \"/usr/local/lib/python3.9/dist-packages/accelerate/commands/launch.py\", line 567, in simple_launcher\n    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)\nsubprocess.CalledProcessError: Command '['/usr/bin/python3', 'train_network.py']' died with <Signals.SIGKILL: 9>.\n";
    let d = diagnose(text);
    assert_eq!(d.category, Category::HostOomKernel);
    assert_eq!(d.exit.as_ref().and_then(|e| e.signal), Some(9));
}

#[test]
fn pytorch_04_buy_new_ram_is_a_refused_allocation() {
    let d = diagnose(
        "RuntimeError: $ Torch: not enough memory: you tried to allocate 256GB. Buy new RAM! at /opt/conda/conda-bld/pytorch_1524584710464/work/aten/src/TH/THGeneral.c:218\n",
    );
    assert_eq!(d.category, Category::HostAllocFailed);
    assert_eq!(
        d.numbers.get("alloc_requested_bytes"),
        Some(&(256u64 << 30))
    );
}

#[test]
fn memory_error_glued_to_its_neighbours_is_a_refused_allocation() {
    for text in [
        "MemoryErrorTraceback (most recent call last):\n",
        "    return _ForkingPickler.loads(res) if rebuild else res.from_parent)MemoryError\n",
        "A bad error i could not solveMemoryError: Unable to allocate 12.5 GiB for an array with shape (87000, 227, 227, 3) and data type uint8\n",
    ] {
        assert_eq!(category(text), Category::HostAllocFailed, "{text}");
    }
}
