#!/usr/bin/env bash
# The main job on the embedded default: set up, ingest the sample corpus, search it, answer a question.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV="${RAGLOOM_VENV:-.venv}"
INDEX="${RAGLOOM_DEMO_INDEX:-.ragloom-demo}"
"$VENV/bin/ragloom" --index "$INDEX" ingest examples/sample_docs
"$VENV/bin/ragloom" --index "$INDEX" search "how do ROS 2 nodes communicate?" -k 5
# A cited answer with no LLM: the sentences of the passages that best answer the question.
"$VENV/bin/ragloom" --index "$INDEX" ask "how do ROS 2 nodes communicate?" --strategy extractive
echo
echo "For answers written by a local LLM (Qwen2.5-Coder-0.5B, offline), run: scripts/setup.sh --llm"
echo "then: $VENV/bin/ragloom --index $INDEX ask \"how do ROS 2 nodes communicate?\" --strategy attributed"
