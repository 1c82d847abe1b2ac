#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the project with its pinned stack. Idempotent.
# torch==2.13.0 is pinned exactly: on these machines pip takes the CPU wheel from local disk,
# while a looser pin would download a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3.11}
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
extras=${1:-}
if [ -n "$extras" ]; then
  .venv/bin/python -m pip install --quiet -e ".[${extras}]"
else
  .venv/bin/python -m pip install --quiet -e .
fi
