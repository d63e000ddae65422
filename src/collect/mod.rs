//! Collectors of live memory readings: procfs, cgroup v1/v2, NVML (work in progress).
