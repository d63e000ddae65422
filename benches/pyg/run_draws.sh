#!/usr/bin/env bash
# Runs a drawn set (tests/fixtures/pyg/draws/*.json) until COUNT draws are
# scored, with the settings the draws' README fixes (12 GiB cap, 900 s cap,
# 50 ms samples). Resumable: draws already in OUT or CAPPED are skipped.
# Usage: benches/pyg/run_draws.sh DRAWS.json COUNT OUT.jsonl CAPPED.jsonl
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
exec "$here/.venv/bin/python" "$here/run_corpus.py" --cases "$1" --count "$2" \
    --out "$3" --capped "$4" --limit 12G --timeout 900 --interval 50ms \
    --headroom "${HEADROOM:-$root/target/release/headroom}"
