#!/usr/bin/env bash
# Create the virtual environment and install medcite with every extra.
# torch is installed first and pinned (2.13.0, CPU): left to resolve on its own,
# sentence-transformers would pull the newest torch with several GB of CUDA packages.
set -euo pipefail
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}

"$PYTHON" - <<'PY'
import sys
if sys.version_info[:2] != (3, 11):
    sys.exit(f"medcite needs Python 3.11, found {sys.version.split()[0]}; set PYTHON=python3.11")
PY

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "torch==2.13.0"
"$VENV/bin/python" -m pip install --quiet -e ".[all,dev]"
echo "medcite installed in $VENV"
