#!/usr/bin/env bash
# Install what the tests need and run them. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
VENV="${RAGLOOM_VENV:-.venv}"
exec "$VENV/bin/python" -m pytest -q "$@"
