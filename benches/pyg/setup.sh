#!/usr/bin/env bash
# Sets up the Python environment of the real-run corpus: a venv with the pinned
# torch and PyG, and torch-scatter / torch-sparse compiled from source.
# Usage: benches/pyg/setup.sh [VENV_DIR]   (default: benches/pyg/.venv)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${1:-$here/.venv}"
python3 -m venv "$venv"
"$venv/bin/pip" install --upgrade pip setuptools wheel
"$venv/bin/pip" install -r "$here/requirements.txt"
MAX_JOBS="${MAX_JOBS:-2}" "$venv/bin/pip" install --no-build-isolation -r "$here/requirements-build.txt"
"$venv/bin/python" - <<'PY'
import torch, torch_geometric, torch_sparse, torch_scatter
print("torch", torch.__version__, "pyg", torch_geometric.__version__,
      "torch_sparse", torch_sparse.__version__, "torch_scatter", torch_scatter.__version__)
PY
