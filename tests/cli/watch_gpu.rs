//! `headroom watch` against a real GPU: a PyTorch process that holds a known
//! allocation must show in NVML's readings. Runs only where an NVIDIA driver
//! and a Python with CUDA torch are found; says plainly that it skipped
//! otherwise (the no-driver half is `watch::jsonl_rows_and_no_gpu_without_a_driver`).

use crate::util::{headroom, python, read_json};

const GIB: u64 = 1 << 30;

/// A Python whose torch sees a CUDA device, or None.
fn cuda_python() -> Option<String> {
    if !std::path::Path::new("/proc/driver/nvidia").exists() {
        return None;
    }
    let py = python()?;
    let ok = std::process::Command::new(&py)
        .args([
            "-c",
            "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(py)
}

#[test]
fn a_held_cuda_allocation_shows_in_the_nvml_peak_of_its_process_and_device() {
    let Some(py) = cuda_python() else {
        eprintln!("SKIPPED: no NVIDIA driver or no Python with CUDA torch here");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (tl, summary) = (dir.path().join("t.jsonl"), dir.path().join("s.json"));
    // 3 GiB requested exactly (uint8), held 2 s: 40 samples at 50 ms.
    let script = "import torch, time\n\
        x = torch.empty(3 << 30, dtype=torch.uint8, device='cuda')\n\
        torch.cuda.synchronize()\n\
        time.sleep(2)\n";
    headroom()
        .args(["watch", "--interval", "50ms", "--format", "jsonl", "--out"])
        .arg(&tl)
        .arg("--summary")
        .arg(&summary)
        .args(["--", &py, "-c", script])
        .assert()
        .success();
    let s = read_json(&summary);
    assert_ne!(s["gpu"], "no NVIDIA driver", "{s}");
    let peak = s["peak_gpu_bytes"].as_u64().expect("a GPU peak");
    // The allocation plus PyTorch's CUDA context (a few hundred MiB; under
    // 3 GiB on every card seen), and nothing else on the device.
    assert!(
        (3 * GIB..6 * GIB).contains(&peak),
        "device peak {peak} B for a 3 GiB tensor"
    );
    let rows: Vec<serde_json::Value> = std::fs::read_to_string(&tl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let per_process = rows
        .iter()
        .filter_map(|r| r["gpu_process_bytes"].as_u64())
        .max()
        .expect("NVML's per-process reading of the tree");
    assert!(
        (3 * GIB..=peak).contains(&per_process),
        "the tree's own GPU memory {per_process} B, device {peak} B"
    );
}
