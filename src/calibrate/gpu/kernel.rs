//! The one kernel the GPU step launches, in PTX written by hand and
//! JIT-compiled by the driver (cuModuleLoadData): no NVRTC library and no
//! nvcc are needed, so the step runs with nothing but the driver whatever
//! CUDA toolkit (12 or 13) is or is not installed. It fills a buffer with a
//! value; its launch makes the context allocate what a context allocates
//! only at a first launch (the kernel's code, local memory), and reading
//! the buffer back proves it ran.

/// The kernel's name.
pub const NAME: &str = "fill";

/// The PTX body: `fill(u32 *dst, u32 n, u32 value)`, one thread an element.
const BODY: &str = r"
.visible .entry fill(
	.param .u64 fill_dst,
	.param .u32 fill_n,
	.param .u32 fill_value
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<6>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [fill_dst];
	ld.param.u32 	%r2, [fill_n];
	ld.param.u32 	%r3, [fill_value];
	mov.u32 	%r4, %ctaid.x;
	mov.u32 	%r5, %ntid.x;
	mov.u32 	%r1, %tid.x;
	mad.lo.s32 	%r1, %r4, %r5, %r1;
	setp.ge.u32 	%p1, %r1, %r2;
	@%p1 bra 	DONE;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.u32 	[%rd4], %r3;
DONE:
	ret;
}
";

/// The module for a device of compute capability `(major, minor)`: PTX ISA
/// 6.4 (CUDA 10.1, every driver since), targeting the device's own
/// architecture below 7.5 and sm_75 from there (CUDA 13 compiles nothing
/// older; PTX for sm_75 is JIT-compiled for every later GPU).
pub fn ptx(major: i32, minor: i32) -> String {
    let target = if (major, minor) >= (7, 5) {
        "sm_75".to_string()
    } else {
        format!("sm_{major}{minor}")
    };
    format!(".version 6.4\n.target {target}\n.address_size 64\n{BODY}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ptxas to assemble with: $HEADROOM_PTXAS, else Triton's in
    /// benches/pyg/.venv, else one on PATH.
    fn ptxas() -> Option<std::path::PathBuf> {
        let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "benches/pyg/.venv/lib/python3.11/site-packages/triton/backends/nvidia/bin/ptxas",
        );
        std::env::var_os("HEADROOM_PTXAS")
            .map(std::path::PathBuf::from)
            .into_iter()
            .chain([venv, "ptxas".into()])
            .find(|p| {
                std::process::Command::new(p)
                    .arg("--version")
                    .output()
                    .is_ok_and(|o| o.status.success())
            })
    }

    #[test]
    fn the_target_follows_the_device_up_to_sm_75() {
        assert!(ptx(9, 0).contains(".target sm_75\n"));
        assert!(ptx(7, 0).contains(".target sm_70\n"));
        assert!(ptx(6, 1).contains(".target sm_61\n"));
    }

    #[test]
    fn ptxas_assembles_the_kernel_for_the_gpus_it_targets() {
        let Some(ptxas) = ptxas() else {
            eprintln!("skipped: no ptxas here (HEADROOM_PTXAS, Triton's, or on PATH)");
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        for (cc, arch) in [((9, 0), "sm_90"), ((8, 0), "sm_80"), ((7, 5), "sm_75")] {
            let src = dir.path().join(format!("{arch}.ptx"));
            std::fs::write(&src, ptx(cc.0, cc.1)).unwrap();
            let out = std::process::Command::new(&ptxas)
                .arg(format!("-arch={arch}"))
                .arg(&src)
                .arg("-o")
                .arg(dir.path().join(format!("{arch}.cubin")))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{arch}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
