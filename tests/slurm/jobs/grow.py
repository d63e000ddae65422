"""Grows the resident memory of this process (or, with --child, of one forked
child) by STEP MiB every PAUSE seconds until LIMIT MiB, then exits 0. The
pages are written, so they count in RSS and in the cgroup."""
import os, sys, time

args = dict(a.split("=") for a in sys.argv[1:] if "=" in a)
step = int(args.get("step", 50)) << 20
limit = int(args.get("limit", 2000)) << 20
pause = float(args.get("pause", 0.05))


def grow():
    held = []
    while sum(map(len, held)) < limit:
        held.append(b"\x01" * step)
        time.sleep(pause)
    print(f"held {sum(map(len, held)) >> 20} MiB", flush=True)


if "--child" in sys.argv:
    pid = os.fork()
    if pid == 0:
        grow()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        print(f"child {pid} died of signal {os.WTERMSIG(status)}", file=sys.stderr, flush=True)
        sys.exit(1)
else:
    grow()
