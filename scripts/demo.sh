#!/usr/bin/env bash
# The main job on the embedded default: set up, ingest the sample corpus, answer a query.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${RAGLOOM_VENV:-.venv}"
INDEX="${RAGLOOM_DEMO_INDEX:-.ragloom-demo}"
"$VENV/bin/ragloom" --index "$INDEX" ingest examples/sample_docs
"$VENV/bin/ragloom" --index "$INDEX" search "how do ROS 2 nodes communicate?" -k 5
